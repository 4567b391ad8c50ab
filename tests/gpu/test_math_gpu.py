"""The math functions and shifts on the GPU give what the interpreter gives (docs/language.md,
sections 4 and 5): ``floor`` and the functions below it, the NaN tests, ``popcount``,
``umulhi`` and out-of-range shifts exactly, the others to a few units in the last place (CUDA's
accurate library functions against numpy's), on windows past the end of the tensors."""

from __future__ import annotations

import numpy as np
import pytest

import phobos.lang as ph

pytestmark = pytest.mark.gpu

SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-30, 1e30, np.inf, -np.inf, np.nan, -100.0, 88.7]


@ph.kernel
def floats(
    x: ph.tensor[ph.f32][N],
    y: ph.tensor[ph.f32][N],
    approx: ph.tensor[ph.f32][N, 8],
    exact: ph.tensor[ph.f32][N, 9],
    flags: ph.tensor[ph.bool][N, 3],
):
    i: ph.let = ph.ctx.block.x * 128
    a: ph.let = x[i:+128]
    b: ph.let = y[i:+128]
    approx[i:+128, 0] = ph.tanh(a)
    approx[i:+128, 1] = ph.sigmoid(a)
    approx[i:+128, 2] = ph.erf(a)
    approx[i:+128, 3] = ph.expm1(a)
    approx[i:+128, 4] = ph.log1p(a)
    approx[i:+128, 5] = ph.sin(a)
    approx[i:+128, 6] = ph.cos(a)
    approx[i:+128, 7] = ph.pow(ph.abs(a), b)
    exact[i:+128, 0] = ph.floor(a)
    exact[i:+128, 1] = ph.ceil(a)
    exact[i:+128, 2] = ph.round(a * 2.0)
    exact[i:+128, 3] = ph.trunc(a)
    exact[i:+128, 4] = ph.sign(a)
    exact[i:+128, 5] = ph.clamp(a, -0.5, b)
    exact[i:+128, 6] = ph.fma(a, b, 0.25)
    exact[i:+128, 7] = ph.sqrt(ph.abs(a))
    exact[i:+128, 8] = ph.fma(a, a, -(a * a))  # the product's rounding error: 0 unless fused
    flags[i:+128, 0] = ph.isnan(a)
    flags[i:+128, 1] = ph.isinf(a)
    flags[i:+128, 2] = ph.isfinite(a * b)


@ph.kernel
def narrow(
    h: ph.tensor[ph.f16][N],
    g: ph.tensor[ph.bf16][N],
    d: ph.tensor[ph.f64][N],
    halves: ph.tensor[ph.f16][N, 3],
    brains: ph.tensor[ph.bf16][N, 3],
    doubles: ph.tensor[ph.f64][N, 3],
):
    i: ph.let = ph.ctx.block.x * 128
    a: ph.let = h[i:+128]
    b: ph.let = g[i:+128]
    c: ph.let = d[i:+128]
    halves[i:+128, 0] = ph.round(a * 4.0)
    halves[i:+128, 1] = ph.fma(a, a, a)
    halves[i:+128, 2] = ph.sign(a)
    brains[i:+128, 0] = ph.floor(b * 4.0)
    brains[i:+128, 1] = ph.fma(b, b, b)
    brains[i:+128, 2] = ph.clamp(b, -1.0, 1.0)
    doubles[i:+128, 0] = ph.round(c * 2.0)
    doubles[i:+128, 1] = ph.fma(c, c, -1.0)
    doubles[i:+128, 2] = ph.trunc(c)


@ph.kernel
def integers(
    n: ph.tensor[ph.i32][N],
    s: ph.tensor[ph.i8][N],
    u: ph.tensor[ph.u32][N],
    w: ph.tensor[ph.u64][N],
    ints: ph.tensor[ph.i32][N, 5],
    words: ph.tensor[ph.u32][N],
    longs: ph.tensor[ph.u64][N],
):
    i: ph.let = ph.ctx.block.x * 128
    k: ph.let = n[i:+128]
    c: ph.let = ph.i32(s[i:+128])
    ints[i:+128, 0] = ph.popcount(k)
    ints[i:+128, 1] = ph.popcount(s[i:+128])
    ints[i:+128, 2] = ph.sign(k) + ph.clamp(k, -100, 100)
    ints[i:+128, 3] = k << c
    ints[i:+128, 4] = k >> c
    words[i:+128] = ph.umulhi(u[i:+128], 2654435769)
    longs[i:+128] = ph.umulhi(w[i:+128], w[i:+128])


def on_gpu(array: np.ndarray):
    import torch

    if array.dtype.kind == "u" and array.dtype.itemsize > 1:  # through a signed view of the bits
        signed = torch.from_numpy(array.view(f"i{array.dtype.itemsize}")).cuda()
        return signed.view(getattr(torch, f"uint{8 * array.dtype.itemsize}"))
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(array).cuda()


def on_host(tensor, like: np.ndarray) -> np.ndarray:
    import torch

    bits = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[like.itemsize]
    return tensor.view(bits).cpu().numpy().view(like.dtype)


def both(kernel, arrays: list[np.ndarray], blocks: int) -> tuple[list, list]:
    """The kernel's outputs from the interpreter and from the GPU, on copies of ``arrays``."""
    interpreted = [a.copy() for a in arrays]
    kernel[(blocks,)](*interpreted)
    tensors = [on_gpu(a) for a in arrays]
    kernel[(blocks,)](*tensors)
    return interpreted, [on_host(t, a) for t, a in zip(tensors, arrays)]


def within_ulps(got: np.ndarray, want: np.ndarray, ulps: int) -> None:
    import ml_dtypes

    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    info = ml_dtypes.finfo(want.dtype)
    np.testing.assert_allclose(g, w, rtol=ulps * float(info.eps), atol=float(info.tiny))


def test_float_functions_agree_with_the_interpreter():
    rng = np.random.default_rng(0)
    n = 300  # 3 blocks of 128: the last window's 84 lanes past the end are absent
    x = np.concatenate([SPECIAL, 3 * rng.standard_normal(n - len(SPECIAL))]).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    arrays = [x, y, np.full((n, 8), np.nan, np.float32), np.full((n, 9), np.nan, np.float32)]
    arrays.append(np.zeros((n, 3), bool))
    want, got = both(floats, arrays, 3)
    within_ulps(got[2], want[2], 8)
    exact = np.isnan(want[3]) == np.isnan(got[3])
    assert exact.all() and np.array_equal(want[3], got[3], equal_nan=True)
    numbers = ~np.isnan(want[3])  # a made NaN's sign bit is the machine's (docs/language.md)
    assert np.array_equal(np.signbit(want[3][numbers]), np.signbit(got[3][numbers]))
    assert np.array_equal(want[4], got[4])
    assert (got[3][np.isfinite(x), 8] != 0).any()  # fma is fused on the GPU too


def test_f16_bf16_and_f64_agree_exactly():
    import ml_dtypes

    rng = np.random.default_rng(1)
    n = 200
    arrays = [
        (2 * rng.standard_normal(n)).astype(np.float16),
        (2 * rng.standard_normal(n)).astype(ml_dtypes.bfloat16),
        2 * rng.standard_normal(n),
        np.full((n, 3), np.nan, np.float16),
        np.full((n, 3), np.nan, ml_dtypes.bfloat16),
        np.full((n, 3), np.nan),
    ]
    want, got = both(narrow, arrays, 2)
    for w, g in zip(want[3:], got[3:]):
        assert np.array_equal(w.astype(np.float64), g.astype(np.float64), equal_nan=True)


def test_integer_functions_and_shifts_agree_exactly():
    rng = np.random.default_rng(2)
    n = 250
    arrays = [
        rng.integers(-(2**31), 2**31, n).astype(np.int32),
        rng.integers(-128, 128, n).astype(np.int8),  # shift counts: negative and past 32 too
        rng.integers(0, 2**32, n).astype(np.uint32),
        rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
        np.full((n, 5), -999, np.int32),
        np.full(n, 7, np.uint32),
        np.full(n, 7, np.uint64),
    ]
    want, got = both(integers, arrays, 2)
    for w, g in zip(want[4:], got[4:]):
        assert np.array_equal(w, g)
