"""``argmax``/``argmin`` on the GPU give the interpreter's indices (docs/language.md,
section 5): first index on ties, the first NaN, -1 for a row with no present lane, on rows
held in a thread, across a warp and across warps, with windows past the tensor's end."""

from __future__ import annotations

import numpy as np
import pytest

import phobos.lang as ph

pytestmark = pytest.mark.gpu


@ph.kernel
@ph.autotune(R={1, 4}, C={16, 256, 2048})
def rows(x: ph.tensor[ph.f32][M, N], hi: ph.tensor[ph.i32][M], lo: ph.tensor[ph.i32][M]):
    r: ph.let = ph.ctx.block.x * R
    t: ph.let = x[r:+R, 0:+C]
    hi[r:+R] = ph.argmax(t, axis=1)
    lo[r:+R] = ph.argmin(t, axis=1)


@pytest.mark.parametrize(("r", "c"), [(4, 16), (1, 256), (4, 2048)])
def test_indices_agree_with_the_interpreter(r, c):
    import torch

    rng = np.random.default_rng(c)
    m, n = 4 * r + 1, c - 5
    x = rng.integers(-3, 4, (m, n)).astype(np.float32)
    x[rng.random((m, n)) < 0.02] = np.nan
    want = [x, np.full(m, 99, np.int32), np.full(m, 99, np.int32)]
    grid = (-(-m // r),)
    rows[grid](*want, R=r, C=c)
    unset = np.full(m, 99, np.int32)
    got = [torch.from_numpy(a).cuda() for a in (x, unset, unset.copy())]
    rows[grid](*got, R=r, C=c)
    assert np.array_equal(got[1].cpu().numpy(), want[1])
    assert np.array_equal(got[2].cpu().numpy(), want[2])
    assert np.array_equal(want[1], np.argmax(x, axis=1))
