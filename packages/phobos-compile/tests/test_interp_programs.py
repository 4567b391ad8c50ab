"""Whole programs: .ph text → parse → check and lower → run in the interpreter, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.interp import LaunchError, RaceError, run
from phobos.compile.syntax import parse

SAXPY = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""

SOFTMAX = """\
kernel softmax(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x
    let v = x[row, 0 :+ BLOCK]
    let shifted = v - max(v)
    let e = exp(shifted)
    out[row, 0 :+ BLOCK] = e / sum(e)
}
"""

MATMUL = """\
kernel matmul(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.y * BM
    let n = ctx.block.x * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    c[m :+ BM, n :+ BN] = acc
}
"""

ROW_MEAN = """\
kernel row_mean(x: tensor<f32>[M, N], mean: tensor<f32>[M]) {
    let row = ctx.block.x
    var total = zeros<f32>[BLOCK]
    for k in 0 .. N step BLOCK {
        total += fill(x[row, k :+ BLOCK], 0.0)
    }
    mean[row] = sum(total) / f32(N)
}
"""

C_DIVISION = """\
kernel divide(a: tensor<i32>[N], b: tensor<i32>[N], q: tensor<i32>[N], r: tensor<i32>[N]) {
    q[0 :+ 8] = a[0 :+ 8] / b[0 :+ 8]
    r[0 :+ 8] = a[0 :+ 8] % b[0 :+ 8]
}
"""

RACY = """\
kernel racy(x: tensor<f32>[N], total: tensor<f32>[1]) {
    let base = ctx.block.x * 64
    total[0] = sum(x[base :+ 64])
}
"""


def compile_kernel(text: str, name: str, **values: int):
    return lower(parse(text, f"{name}.ph"), name, values)


def nan_surrounded(values: np.ndarray, pad: int = 5) -> np.ndarray:
    """``values`` as a view into a larger NaN-filled buffer."""
    buffer = np.full(tuple(s + 2 * pad for s in values.shape), np.nan, values.dtype)
    inner = tuple(slice(pad, pad + s) for s in values.shape)
    buffer[inner] = values
    return buffer[inner]


@pytest.mark.parametrize("block", [16, 256, 2048])
def test_saxpy_matches_numpy(block):
    n = 1000
    rng = np.random.default_rng(block)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    kernel = compile_kernel(SAXPY, "saxpy", BLOCK=block)
    run(kernel, (-(-n // block),), [nan_surrounded(x), nan_surrounded(y), out, 2.5])
    assert np.array_equal(out, np.float32(2.5) * x + y)


def test_saxpy_argument_errors_name_the_line_of_the_parameter():
    kernel = compile_kernel(SAXPY, "saxpy", BLOCK=256)
    x = np.zeros(10, np.float32)
    with pytest.raises(LaunchError) as caught:
        run(kernel, (1,), [x, np.zeros(11, np.float32), np.zeros(10, np.float32), 1.0])
    rendered = caught.value.render()
    assert rendered.startswith("saxpy.ph:2:")
    assert "extent N is 10 in parameter 'x' (axis 0) but 11 in parameter 'y'" in rendered


def test_softmax_rows_shorter_than_the_block():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 100)) * 10).astype(np.float32)
    out = nan_surrounded(np.zeros_like(x))
    run(compile_kernel(SOFTMAX.replace("BLOCK", "128"), "softmax"), (6,), [nan_surrounded(x), out])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    assert np.isnan(out.base[:5]).all()


def test_matmul_with_ragged_edges_on_every_axis():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((50, 70)).astype(np.float16)
    b = rng.standard_normal((70, 40)).astype(np.float16)
    c = np.full((50, 40), np.nan, np.float32)
    source = MATMUL.replace("BM", "32").replace("BN", "16").replace("BK", "32")
    run(compile_kernel(source, "matmul"), (3, 2), [nan_surrounded(a), nan_surrounded(b), c])
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def test_row_mean_accumulates_filled_chunks():
    x = np.arange(3 * 37, dtype=np.float32).reshape(3, 37)
    mean = np.zeros(3, np.float32)
    run(
        compile_kernel(ROW_MEAN.replace("BLOCK", "16"), "row_mean"), (3,), [nan_surrounded(x), mean]
    )
    np.testing.assert_allclose(mean, x.mean(axis=1), rtol=1e-6)


def test_integer_division_is_c_division():
    a = np.array([7, -7, 7, -7, 1, -1, 2**31 - 1, -(2**31)], np.int32)
    b = np.array([2, 2, -2, -2, -3, 3, 16, 16], np.int32)
    q, r = np.zeros(8, np.int32), np.zeros(8, np.int32)
    run(compile_kernel(C_DIVISION, "divide"), (1,), [a, b, q, r])
    assert q.tolist() == [3, -3, -3, 3, 0, 0, 134217727, -134217728]
    assert r.tolist() == [1, -1, 1, -1, 1, -1, 15, 0]


def test_the_race_check_names_the_line_every_block_writes():
    kernel = compile_kernel(RACY, "racy")
    x, total = np.ones(128, np.float32), np.zeros(1, np.float32)
    run(kernel, (1,), [x, total], race_check=True)
    assert total[0] == 64.0
    with pytest.raises(RaceError) as caught:
        run(kernel, (2,), [x, total], race_check=True)
    rendered = caught.value.render()
    assert rendered.startswith(
        "racy.ph:3:5: error: data race on total[0]: block (1, 0, 0) writes it, "
        "and block (0, 0, 0) wrote it"
    )
    assert "racy.ph:3:5: note: block (0, 0, 0) wrote total[0] here" in rendered
    assert "    total[0] = sum(x[base :+ 64])" in rendered


def test_empty_tensors_run_and_write_nothing():
    kernel = compile_kernel(SAXPY, "saxpy", BLOCK=64)
    empty = np.zeros(0, np.float32)
    run(kernel, (2,), [empty, empty.copy(), empty.copy(), 1.0], race_check=True)
