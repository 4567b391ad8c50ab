"""Lowered kernels run in the CPU interpreter and match numpy: the IR means what the checker says."""

from __future__ import annotations

import numpy as np

from phobos.compile.check import lower
from phobos.compile.interp import run
from phobos.compile.syntax.parser import parse

PROGRAM = parse(
    """\
fn silu(v: f32) -> f32 {
    return v / (1.0 + exp(-v))
}

@autotune(BR in {2}, BC in [64, 256])
kernel softmax(x: tensor<f32>[R, C], y: tensor<f32>[R, C]) {
    let r = ctx.block.x * BR
    let t = x[r :+ BR, 0 :+ BC]
    let z = t - max(t, axis=1)[:, newaxis]
    let e = exp(z)
    y[r :+ BR, 0 :+ BC] = e / sum(e, axis=1)[:, newaxis]
}

@autotune(BM in {16}, BN in {32}, BK in {16})
kernel matmul(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.x * BM
    let n = ctx.block.y * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    c[m :+ BM, n :+ BN] = silu(acc)
}

@autotune(B in {64})
kernel rowsum(x: tensor<f32>[R, C], out: tensor<f32>[R]) {
    let row = ctx.block.x
    var acc = zeros<f32>[B]
    for c in 0 .. C step B {
        acc += fill(x[row, c :+ B], 0.0)
    }
    out[row] = sum(acc)
}
""",
    "e2e.ph",
)

RNG = np.random.default_rng(7)


def test_softmax_with_rows_and_columns_that_do_not_fill_the_tiles():
    x = RNG.random((7, 100), dtype=np.float32)
    y = np.zeros_like(x)
    run(lower(PROGRAM, "softmax", {"BR": 2, "BC": 128}), (4,), [x, y])
    expected = np.exp(x - x.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, expected, rtol=1e-5)


def test_matmul_with_an_inlined_fn_epilogue():
    a = RNG.random((37, 50)).astype(np.float16)
    b = RNG.random((50, 45)).astype(np.float16)
    c = np.zeros((37, 45), np.float32)
    run(lower(PROGRAM, "matmul", {"BM": 16, "BN": 32, "BK": 16}), (3, 2), [a, b, c])
    product = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, product / (1 + np.exp(-product)), rtol=1e-4)


def test_fill_makes_absent_lanes_count_as_zero():
    x = RNG.random((5, 300), dtype=np.float32)
    out = np.zeros(5, np.float32)
    run(lower(PROGRAM, "rowsum", {"B": 64}), (5,), [x, out])
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-5)
