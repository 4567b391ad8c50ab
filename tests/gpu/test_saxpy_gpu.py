"""The seed's saxpy on an H200 from torch, CuPy and Numba arrays (issue: GPU code generation)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gpu.saxpy_kernel import saxpy

pytestmark = pytest.mark.gpu

GRID = lambda meta: (-(-meta["N"] // meta["BLOCK"]),)  # noqa: E731  (the seed's grid)
SIZES = [1, 1000, 2**20 + 3, 2**27]


def _check(out_host: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    expected = 2.0 * x.astype(np.float64) + y.astype(np.float64)
    assert not np.isnan(out_host).any(), "some elements were never written"
    np.testing.assert_allclose(out_host, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("block", [None, 64, 1024])
def test_saxpy_torch(n, block):
    import torch

    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    kw = {} if block is None else {"BLOCK": block}
    saxpy[GRID](x, y, out, 2.0, **kw)
    torch.cuda.synchronize()
    _check(out.cpu().numpy(), x.cpu().numpy(), y.cpu().numpy())


@pytest.mark.parametrize("n", SIZES)
def test_saxpy_cupy(n):
    cupy = pytest.importorskip("cupy")
    rng = cupy.random.default_rng(1)
    x = rng.standard_normal(n, dtype=cupy.float32)
    y = rng.standard_normal(n, dtype=cupy.float32)
    out = cupy.full(n, cupy.nan, dtype=cupy.float32)
    saxpy[GRID](x, y, out, 2.0)
    cupy.cuda.get_current_stream().synchronize()
    _check(out.get(), x.get(), y.get())


@pytest.mark.parametrize("n", SIZES)
def test_saxpy_numba(n):
    cuda = pytest.importorskip("numba.cuda")
    rng = np.random.default_rng(2)
    hx = rng.standard_normal(n, dtype=np.float32)
    hy = rng.standard_normal(n, dtype=np.float32)
    x, y = cuda.to_device(hx), cuda.to_device(hy)
    out = cuda.to_device(np.full(n, np.nan, dtype=np.float32))
    saxpy[GRID](x, y, out, 2.0)
    cuda.synchronize()
    _check(out.copy_to_host(), hx, hy)


def test_saxpy_64bit_indexing():
    """More than 2^31 elements: the launch must pick the 64-bit index variant."""
    import torch

    n = 2**31 + 4099
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    saxpy[GRID](x, y, out, 2.0, BLOCK=4096)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any().item()
    # Check the tail (past 2^31) and a sample, in float64, without copying 8 GB to the host.
    tail = slice(n - 2_000_000, n)
    ref = 2.0 * x[tail].double() + y[tail].double()
    torch.testing.assert_close(out[tail].double(), ref, rtol=1e-6, atol=1e-6)
    del x, y, out
    torch.cuda.empty_cache()


def test_saxpy_steady_state_runs_in_c_and_stays_right():
    """After the first launch, ``kernel[grid]`` and the kernel's fast path are the native ones
    (where this machine can build them), and every launch through them is right: new tensors
    and sizes of the same signature, another scalar, an explicit stream."""
    import torch

    from phobos.launch.native import native_status

    if "is on" not in native_status():
        pytest.fail(f"the GPU machine should build the native launch path: {native_status()}")
    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    out = torch.full_like(x, float("nan"))
    saxpy[GRID](x, y, out, 2.0, BLOCK=256)
    launch = saxpy[GRID]
    assert type(launch).__name__ == "SteadyCall"
    assert type(saxpy.dispatcher.steady.last_launch[1].try_launch).__name__ == "FastLaunch"
    side = torch.cuda.Stream()
    for n, alpha, stream in [(4096, 3.0, None), (1000, -1.5, None), (70_001, 0.25, side)]:
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.full_like(x, float("nan"))
        torch.cuda.synchronize()
        launch(x, y, out, alpha, BLOCK=256, stream=stream)
        torch.cuda.synchronize()
        assert not out.isnan().any(), "some elements were never written"
        torch.testing.assert_close(out, alpha * x + y)
    assert saxpy.dispatcher.steady.last_launch[1].try_launch(GRID, (x, y, out, 2.0), None) == 0
