"""Absent lanes are never read on the GPU: windows that hang over the end of a tensor whose
neighbouring memory holds NaN give finite, exact sums (a read of any absent lane would be NaN)."""

from __future__ import annotations

import numpy as np
import pytest

import phobos.lang as ph

pytestmark = pytest.mark.gpu


@ph.kernel
@ph.autotune(BLOCK={64, 256})
def block_sums(x: ph.tensor[ph.f32][N], sums: ph.tensor[ph.f32][G]):
    sums[ph.ctx.block.x] = ph.sum(x[ph.ctx.block.x * BLOCK : +BLOCK])


@ph.kernel
@ph.autotune(ROWS={4}, COLS={128})
def row_maxima(x: ph.tensor[ph.f32][M, N], out: ph.tensor[ph.f32][M]):
    first: ph.let = ph.ctx.block.x * ROWS
    out[first:+ROWS] = ph.max(x[first:+ROWS, 0:+COLS], axis=1)


@pytest.mark.parametrize("block", [64, 256])
def test_a_sum_over_a_window_past_the_end_reads_nothing_there(block):
    import torch

    n = 1000
    backing = torch.full((n + 4096,), float("nan"), device="cuda")
    backing[:n] = torch.randn(n, device="cuda")
    x = backing[:n]
    groups = -(-n // block)
    sums = torch.full((groups,), float("nan"), device="cuda")
    block_sums[(groups,)](x, sums, BLOCK=block)
    expected = np.add.reduceat(x.cpu().double().numpy(), np.arange(0, n, block))
    got = sums.cpu().double().numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_row_max_over_columns_past_the_end_reads_nothing_there():
    import torch

    m, n = 37, 100
    backing = torch.full((m, 128), float("nan"), device="cuda")
    backing[:, :n] = torch.randn(m, n, device="cuda")
    x = backing[:, :n]  # rows of 100 whose next 28 elements are NaN
    out = torch.full((m,), float("nan"), device="cuda")
    row_maxima[(-(-m // 4),)](x, out)
    torch.testing.assert_close(out, x.max(dim=1).values)
