"""Bad launches are refused with a clear message, and nothing is launched."""

from __future__ import annotations

import pytest

from tests.gpu.saxpy_kernel import saxpy

pytestmark = pytest.mark.gpu

GRID = lambda meta: (-(-meta["N"] // meta["BLOCK"]),)  # noqa: E731


@pytest.fixture
def torch():
    import torch

    return torch


def _refused(excinfo_text: str, *needles: str) -> None:
    for needle in needles:
        assert needle in excinfo_text, f"{needle!r} not in: {excinfo_text}"


def test_wrong_dtype(torch):
    x = torch.randn(100, device="cuda", dtype=torch.float16)
    y = torch.randn(100, device="cuda")
    out = torch.full((100,), float("nan"), device="cuda")
    with pytest.raises(Exception) as e:
        saxpy[GRID](x, y, out, 2.0)
    _refused(str(e.value), "x", "f32", "f16")
    assert torch.isnan(out).all()


def test_mismatched_extent(torch):
    x = torch.randn(100, device="cuda")
    y = torch.randn(99, device="cuda")
    out = torch.full((100,), float("nan"), device="cuda")
    with pytest.raises(Exception) as e:
        saxpy[GRID](x, y, out, 2.0)
    _refused(str(e.value), "N", "x", "y", "100", "99")
    assert torch.isnan(out).all()


def test_cpu_tensor(torch):
    x = torch.randn(100)
    y = torch.randn(100, device="cuda")
    out = torch.full((100,), float("nan"), device="cuda")
    with pytest.raises(Exception) as e:
        saxpy[GRID](x, y, out, 2.0)
    assert "host memory" in str(e.value) or "CPU" in str(e.value)
    assert torch.isnan(out).all()


def test_non_contiguous_is_still_right(torch):
    """A strided input gets a variant compiled for its strides (never a wrong result)."""
    base = torch.randn(200, device="cuda")
    x = base[::2]
    y = torch.randn(100, device="cuda")
    out = torch.full((100,), float("nan"), device="cuda")
    saxpy[GRID](x, y, out, 2.0)
    torch.testing.assert_close(out, 2.0 * x + y)


def test_readonly_output_refused(torch):
    import numpy as np

    cupy = pytest.importorskip("cupy")

    class ReadOnly:
        def __init__(self, arr):
            self.arr = arr
            cai = dict(arr.__cuda_array_interface__)
            cai["data"] = (cai["data"][0], True)
            self.__cuda_array_interface__ = cai

    x = cupy.random.standard_normal(100, dtype=np.float32)
    y = cupy.random.standard_normal(100, dtype=np.float32)
    out = cupy.full(100, cupy.nan, dtype=np.float32)
    with pytest.raises(Exception) as e:
        saxpy[GRID](x, y, ReadOnly(out), 2.0)
    _refused(str(e.value), "out", "read-only")
    assert bool(cupy.isnan(out).all())


def test_wrong_argument_count(torch):
    x = torch.randn(100, device="cuda")
    with pytest.raises(Exception) as e:
        saxpy[GRID](x, x, 2.0)
    _refused(str(e.value), "4", "3")


def test_refusal_after_the_steady_state_is_located_at_the_launch_line(torch):
    """A bad launch after good ones (the fast path active) names the call line and the declaration."""
    import phobos.lang as ph

    x, y = torch.randn(100, device="cuda"), torch.randn(100, device="cuda")
    out = torch.empty_like(x)
    for _ in range(3):
        saxpy[(1,)](x, y, out, 2.0, BLOCK=128)
    assert saxpy.dispatcher.steady.last_launch[1].try_launch((1,), (x, y, out, 2.0), None) == 0
    half = torch.randn(100, device="cuda", dtype=torch.float16)
    with pytest.raises(ph.PhobosError) as info:
        saxpy[(1,)](x, half, out, 2.0, BLOCK=128)  # the launch line
    rendered = str(info.value)
    assert rendered.splitlines()[0].startswith(f"{__file__}:")
    assert "y: expected a f32 tensor, got f16" in rendered
    assert "saxpy[(1,)](x, half, out, 2.0, BLOCK=128)  # the launch line" in rendered
    assert "note: 'y' is declared here" in rendered
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2.0 * x + y)
