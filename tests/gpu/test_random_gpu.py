"""rand, randn and randint on the GPU give the interpreter's values to the bit (docs/language.md,
section 5): the runtime's Philox and its f32 arithmetic are the interpreter's, randn's logarithm
and cosine included; and the dropout example drops on the GPU the elements the interpreter
drops, its kept values matching torch's float64 arithmetic given that mask."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import phobos.lang as ph

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


@ph.kernel
def draws(
    o: ph.tensor[ph.i32][N],
    w: ph.tensor[ph.u64][N],
    c: ph.tensor[ph.i8][N],
    bits: ph.tensor[ph.u32][N, 3],
    uniform: ph.tensor[ph.f32][N, 3],
    normal: ph.tensor[ph.f32][N, 3],
    seed: ph.i64,
):
    i: ph.let = ph.ctx.block.x * 128
    a: ph.let = o[i:+128]
    b: ph.let = w[i:+128]
    lane: ph.let = i + ph.arange(128)
    bits[i:+128, 0] = ph.randint(seed, a)
    bits[i:+128, 1] = ph.randint(seed, b)
    bits[i:+128, 2] = ph.randint(seed, c[i:+128]) ^ ph.randint(seed, 7)
    uniform[i:+128, 0] = ph.rand(seed, a)
    uniform[i:+128, 1] = ph.rand(seed, b)
    uniform[i:+128, 2] = ph.rand(seed, lane)
    normal[i:+128, 0] = ph.randn(seed, a)
    normal[i:+128, 1] = ph.randn(seed, b)
    normal[i:+128, 2] = ph.randn(seed, lane) * 2.0 + 1.0


def on_gpu(array: np.ndarray):
    import torch

    if array.dtype.kind == "u" and array.dtype.itemsize > 1:  # through a signed view of the bits
        signed = torch.from_numpy(array.view(f"i{array.dtype.itemsize}")).cuda()
        return signed.view(getattr(torch, f"uint{8 * array.dtype.itemsize}"))
    return torch.from_numpy(array).cuda()


def on_host(tensor, like: np.ndarray) -> np.ndarray:
    import torch

    bits = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[like.itemsize]
    return tensor.view(bits).cpu().numpy().view(like.dtype)


@pytest.mark.parametrize("seed", [0, -77, 2**40 + 3])
def test_every_draw_is_the_interpreters_to_the_bit(seed):
    rng = np.random.default_rng(abs(seed) % 1000)
    n = 300  # 3 blocks of 128: the last window's 84 lanes past the end are absent
    o = rng.integers(-(2**31), 2**31, n).astype(np.int32)
    o[:3] = [0, -1, 2**31 - 1]
    w = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    c = rng.integers(-128, 128, n).astype(np.int8)
    arrays = [o, w, c, np.full((n, 3), 5, np.uint32)]
    arrays += [np.full((n, 3), np.nan, np.float32), np.full((n, 3), np.nan, np.float32)]
    interpreted = [a.copy() for a in arrays]
    draws[(3,)](*interpreted, seed)
    tensors = [on_gpu(a) for a in arrays]
    draws[(3,)](*tensors, seed)
    for k, name in ((3, "bits"), (4, "uniform"), (5, "normal")):
        got = on_host(tensors[k], arrays[k])
        assert np.array_equal(got.view(np.uint32), interpreted[k].view(np.uint32)), name


@ph.kernel
def many(u: ph.tensor[ph.f32][N], z: ph.tensor[ph.f32][N], seed: ph.u64):
    i: ph.let = ph.ctx.block.x * 1024
    offsets: ph.let = i + ph.arange(1024)
    u[i:+1024] = ph.rand(seed, offsets)
    z[i:+1024] = ph.randn(seed, offsets)


def test_a_million_draws_are_the_interpreters():
    """Enough lanes that a difference in randn's last bit anywhere in its range would show."""
    import torch

    n = 1 << 20
    want = [np.zeros(n, np.float32), np.zeros(n, np.float32)]
    many[(n // 1024,)](*want, 2**63 + 11)
    got = [torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")]
    many[(n // 1024,)](*got, 2**63 + 11)
    for w, g in zip(want, got):
        assert np.array_equal(g.cpu().numpy().view(np.uint32), w.view(np.uint32))


def dropout_kernel():
    """The example's kernel, from examples/dropout.py (the .ph file's Python spelling)."""
    spec = importlib.util.spec_from_file_location(
        "dropout_example", ROOT / "examples" / "dropout.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dropout


@pytest.mark.parametrize("block", [256, 1024])
def test_dropout_drops_the_interpreters_elements(block):
    import torch

    dropout = dropout_kernel()
    n, p, seed = 100_003, 0.4, 20261202
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n).astype(np.float32)
    x[x == 0] = 1.0  # a kept zero would read as dropped
    interpreted = np.full(n, np.nan, np.float32)
    dropout[(-(-n // block),)](x, interpreted, p, seed, BLOCK=block)
    gx = torch.from_numpy(x).cuda()
    out = torch.full((n,), float("nan"), device="cuda")
    dropout[(-(-n // block),)](gx, out, p, seed, BLOCK=block)
    got = out.cpu().numpy()
    mask = got != 0
    assert np.array_equal(mask, interpreted != 0)  # the same elements kept, bit for bit
    assert np.array_equal(got.view(np.uint32), interpreted.view(np.uint32))
    kept = mask.mean()
    assert abs(kept - (1 - p)) < 6 * np.sqrt(p * (1 - p) / n)
    keep = torch.from_numpy(mask).cuda()
    scale = 1.0 / (1.0 - float(np.float32(p)))
    want = torch.where(
        keep, gx.double() * scale, torch.zeros((), dtype=torch.float64, device="cuda")
    )
    # f32's division by (1 - p) rounded in f32: within 2 f32 ulps of the float64 result.
    torch.testing.assert_close(out.double(), want, rtol=2 * 2.0**-23, atol=0)
