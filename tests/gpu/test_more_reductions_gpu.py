"""``prod``, ``any``, ``all`` and ``xor_sum`` on the GPU give the interpreter's results bit for
bit (docs/language.md, section 5), on rows held in a thread, across a warp and across warps,
with windows past the tensor's end (absent lanes: 1, false, true, 0).

The floats are ±1, ±2, ±0.5 (mostly ±1), 0, ±inf and NaN: every partial product is exact
in f32, so any order of combining gives the same bits, and f16 products round once at the
end on both sides.  Integers wrap alike in any order.
"""

from __future__ import annotations

import numpy as np
import pytest

import phobos.lang as ph

pytestmark = pytest.mark.gpu


@ph.kernel
@ph.autotune(R={1, 4}, C={16, 256, 2048})
def rows(
    x: ph.tensor[ph.f32][M, N],
    h: ph.tensor[ph.f16][M, N],
    n: ph.tensor[ph.i8][M, N],
    p: ph.tensor[ph.f32][M],
    hp: ph.tensor[ph.f16][M],
    kp: ph.tensor[ph.i8][M],
    xs: ph.tensor[ph.i8][M],
    some: ph.tensor[ph.bool][M],
    every: ph.tensor[ph.bool][M],
    clean: ph.tensor[ph.bool][M],
):
    r: ph.let = ph.ctx.block.x * R
    t: ph.let = x[r:+R, 0:+C]
    k: ph.let = n[r:+R, 0:+C]
    p[r:+R] = ph.prod(t, axis=1)
    hp[r:+R] = ph.prod(h[r:+R, 0:+C], axis=1)
    kp[r:+R] = ph.prod(k, axis=1)
    xs[r:+R] = ph.xor_sum(k, axis=-1)
    some[r:+R] = ph.any(t, axis=1)
    every[r:+R] = ph.all(k, axis=1)
    clean[r:+R] = ph.all(t == t, axis=1)


def inputs(r: int, c: int) -> list[np.ndarray]:
    """``4r + 1`` rows of ``c - 5`` columns (the last block's rows and every window's last
    five columns past the end), each row with its own share of zeros; NaN and inf in about
    a third of the rows; odd integers, so that products do not wrap to 0."""
    rng = np.random.default_rng(c + r)
    m, n = 4 * r + 1, c - 5
    zero = rng.random((m, n)) < rng.choice([0.0, 0.001, 0.5, 1.0], (m, 1))
    x = rng.choice([1.0, -1.0, 2.0, 0.5], (m, n), p=[0.45, 0.45, 0.05, 0.05])
    x[zero] = 0.0
    special = np.where(rng.random((m, 1)) < 0.3, rng.random((m, n)), 1.0)
    x[special < 0.01] = np.nan
    x[(special >= 0.01) & (special < 0.02)] = np.inf
    k = (rng.integers(-64, 64, (m, n)) * 2 + 1).astype(np.int8)
    k[zero] = 0
    outputs = [np.full(m, 7, d) for d in (np.float32, np.float16, np.int8, np.int8)]
    flags = [np.zeros(m, np.bool_) for _ in range(3)]
    return [x.astype(np.float32), x.astype(np.float16), k, *outputs, *flags]


def numpy_answer(arrays: list[np.ndarray]) -> list[np.ndarray]:
    x, h, k = arrays[:3]
    with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf; f16 past its range
        p = np.prod(x, axis=1, dtype=np.float32)
        hp = np.prod(h.astype(np.float32), axis=1, dtype=np.float32).astype(np.float16)
    return [
        p,
        hp,
        np.prod(k, axis=1, dtype=np.int8),
        np.bitwise_xor.reduce(k, axis=1),
        np.any(x != 0, axis=1),
        np.all(k != 0, axis=1),
        ~np.isnan(x).any(axis=1),
    ]


def on_gpu(array: np.ndarray):
    import torch

    return torch.from_numpy(array.copy()).cuda()


def on_host(tensor, like: np.ndarray) -> np.ndarray:
    import torch

    bits = {1: torch.int8, 2: torch.int16, 4: torch.int32}[like.itemsize]
    return tensor.view(bits).cpu().numpy().view(like.dtype)


@pytest.mark.parametrize(("r", "c"), [(4, 16), (1, 256), (4, 2048)])
def test_results_agree_with_the_interpreter(r, c):
    arrays = inputs(r, c)
    grid = (-(-arrays[0].shape[0] // r),)
    want = [a.copy() for a in arrays]
    rows[grid](*want, R=r, C=c)
    for have, expect in zip(want[3:], numpy_answer(arrays)):
        np.testing.assert_array_equal(have, expect)
    tensors = [on_gpu(a) for a in arrays]
    rows[grid](*tensors, R=r, C=c)
    for tensor, expect in zip(tensors[3:], want[3:]):
        np.testing.assert_array_equal(on_host(tensor, expect), expect)
