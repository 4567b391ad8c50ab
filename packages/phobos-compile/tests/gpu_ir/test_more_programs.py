"""What the examples do not exercise, executor against interpreter: transposed operands,
bf16, integers, 3-D tiles, tiles of no power-of-two extent (repeats), while loops and
branches carrying tiles, atomics, an early return, a product feeding a product, a
single m16n8 tile.

Each program runs through the whole back end at sm_90a fully specialised and at sm_80
unspecialised (the two ends of the combinations), on random inputs at sizes that are
no multiple of its tiles, and every tensor must be the interpreter's.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from phobos.compile.gpu import ir, pipeline
from phobos.compile.interp import run as interpret

from .conftest import assert_same_tensors, execute, lower_text, ops, specialisation

BF16 = ml_dtypes.bfloat16


def normal(rng, shape, dtype=np.float32):
    x = rng.standard_normal(shape).astype(dtype)
    return np.where(x == 0, np.asarray(0.5, dtype), x)


def nan(shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype)


PROGRAMS = {
    "transposed_a": (
        """
kernel tmm(a: tensor<f16>[K, M], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.x * 64
    var acc = zeros<f32>[64, 64]
    for k in 0 .. K step 32 {
        acc = dot(trans(a[k :+ 32, m :+ 64]), b[k :+ 32, 0 :+ 64], acc)
    }
    c[m :+ 64, 0 :+ 64] = acc
}""",
        lambda r: (
            [normal(r, (70, 100), np.float16), normal(r, (70, 50), np.float16), nan((100, 50))],
            (2,),
        ),
    ),
    "transposed_b_bf16": (
        """
kernel mmt(a: tensor<bf16>[M, K], b: tensor<bf16>[N, K], c: tensor<bf16>[M, N]) {
    let m = ctx.block.x * 128
    let n = ctx.block.y * 128
    var acc = zeros<f32>[128, 128]
    for k in 0 .. K step 64 {
        acc = dot(a[m :+ 128, k :+ 64], trans(b[n :+ 128, k :+ 64]), acc)
    }
    c[m :+ 128, n :+ 128] = bf16(acc)
}""",
        lambda r: (
            [normal(r, (130, 90), BF16), normal(r, (140, 90), BF16), nan((130, 140), BF16)],
            (2, 2),
        ),
    ),
    "product_of_a_product": (
        """
kernel chain(a: tensor<f16>[M, K], b: tensor<f16>[K, N], v: tensor<f16>[N, D], o: tensor<f32>[M, D]) {
    let s = dot(a[0 :+ 64, 0 :+ 32], b[0 :+ 32, 0 :+ 64])
    o[0 :+ 64, 0 :+ 32] = dot(f16(s * 0.125), v[0 :+ 64, 0 :+ 32])
}""",
        lambda r: (
            [
                normal(r, (60, 32), np.float16),
                normal(r, (32, 64), np.float16),
                normal(r, (64, 32), np.float16),
                nan((60, 32)),
            ],
            (1,),
        ),
    ),
    "one_mma_tile": (
        """
kernel m16(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let p = dot(a[0 :+ 16, 0 :+ 16], b[0 :+ 16, 0 :+ 8])
    c[0 :+ 16, 0 :+ 8] = p - max(p, axis=1)[:, newaxis]
}""",
        lambda r: (
            [normal(r, (13, 16), np.float16), normal(r, (16, 7), np.float16), nan((13, 7))],
            (1,),
        ),
    ),
    "f32_product": (
        """
kernel sd(a: tensor<f32>[M, K], b: tensor<f32>[K, N], c: tensor<f32>[M, N]) {
    c[0 :+ 16, 0 :+ 32] = dot(a[0 :+ 16, 0 :+ 8], b[0 :+ 8, 0 :+ 32])
}""",
        lambda r: ([normal(r, (10, 5)), normal(r, (5, 20)), nan((10, 20))], (1,)),
    ),
    "integers": (
        """
kernel ints(x: tensor<i32>[M, N], out: tensor<i32>[N], out2: tensor<i32>[M]) {
    let t = x[0 :+ 64, 0 :+ 128]
    out[0 :+ 128] = sum(t, axis=0)
    out2[0 :+ 64] = min(where(t > 0, t, 100), axis=1)
}""",
        lambda r: (
            [
                r.integers(-50, 50, (50, 100)).astype(np.int32),
                np.full(100, -7, np.int32),
                np.full(50, -7, np.int32),
            ],
            (1,),
        ),
    ),
    "bytes_wrap": (
        """
kernel u(x: tensor<u8>[N], out: tensor<u8>[N], s: tensor<u32>[N]) {
    let t = x[0 :+ 256]
    out[0 :+ 256] = t * t + 7u8
    s[0] = u32(sum(t))
}""",
        lambda r: (
            [
                r.integers(1, 255, 250).astype(np.uint8),
                np.zeros(250, np.uint8),
                np.zeros(250, np.uint32),
            ],
            (1,),
        ),
    ),
    "bf16_rows": (
        """
kernel bfnorm(x: tensor<bf16>[M, N], y: tensor<bf16>[M, N]) {
    let row = ctx.block.x
    let v = f32(x[row, 0 :+ 512])
    let mu = sum(v) / f32(N)
    y[row, 0 :+ 512] = bf16((v - mu) * rsqrt(sum((v - mu) * (v - mu)) / f32(N) + 1e-5))
}""",
        lambda r: ([normal(r, (3, 300), BF16), nan((3, 300), BF16)], (3,)),
    ),
    "three_axes": (
        """
kernel cube(x: tensor<f32>[A, B, C], out: tensor<f32>[A, C]) {
    let t = x[0 :+ 4, 0 :+ 8, 0 :+ 16]
    out[0 :+ 4, 0 :+ 16] = sum(t * 2.0, axis=1) + max(t, axis=1)
}""",
        lambda r: ([normal(r, (3, 7, 13)), nan((3, 13))], (1,)),
    ),
    "row_of_96": (
        """
kernel r96(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x
    let v = x[row, 0 :+ 96]
    out[row, 0 :+ 96] = v - max(v) + sum(v)
}""",
        lambda r: ([normal(r, (3, 90)), nan((3, 90))], (3,)),
    ),
    "row_of_12288": (
        """
kernel r12(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x
    let v = x[row, 0 :+ 12288]
    out[row, 0 :+ 12288] = v - max(v)
}""",
        lambda r: ([normal(r, (2, 12000)), nan((2, 12000))], (2,)),
    ),
    "rows_of_24": (
        """
kernel r3(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    out[0 :+ 48] = sum(x[0 :+ 48, 0 :+ 24], axis=1)
}""",
        lambda r: ([normal(r, (40, 20)), nan(40)], (1,)),
    ),
    "column_sums_f16": (
        """
kernel colsum(x: tensor<f16>[M, N], out: tensor<f16>[N]) {
    var acc = zeros<f32>[32, 64]
    for r in 0 .. M step 32 {
        acc += fill(f32(x[r :+ 32, ctx.block.x * 64 :+ 64]), 0.0)
    }
    out[ctx.block.x * 64 :+ 64] = f16(sum(acc, axis=0))
}""",
        lambda r: ([normal(r, (77, 100), np.float16), nan(100, np.float16)], (2,)),
    ),
    "argmax": (
        """
kernel am(x: tensor<f32>[M, N], out: tensor<i32>[M]) {
    let t = x[ctx.block.x * 4 :+ 4, 0 :+ 256]
    let m = max(t, axis=1)
    let idx = arange(256)
    out[ctx.block.x * 4 :+ 4] = i32(min(where(t == m[:, newaxis], idx[newaxis, :], 1000), axis=1))
}""",
        lambda r: ([normal(r, (10, 200)), np.full(10, -1, np.int32)], (3,)),
    ),
    "outer_product": (
        """
kernel outer(x: tensor<f32>[M], y: tensor<f32>[N], out: tensor<f32>[M, N]) {
    let a = x[0 :+ 64]
    let b = y[0 :+ 128]
    out[0 :+ 64, 0 :+ 128] = a[:, newaxis] * b[newaxis, :] + sum(b)
}""",
        lambda r: ([normal(r, (60,)), normal(r, (100,)), nan((60, 100))], (1,)),
    ),
    "transposed_store": (
        """
kernel ts(x: tensor<f32>[M, N], out: tensor<f32>[N, M]) {
    out[0 :+ 64, 0 :+ 32] = trans(x[0 :+ 32, 0 :+ 64]) * 2.0
}""",
        lambda r: ([normal(r, (30, 60)), nan((60, 30))], (1,)),
    ),
    "while_and_branches": (
        """
kernel loops(x: tensor<f32>[N], out: tensor<f32>[N], n: i32) {
    var acc = zeros<f32>[256]
    var i = 0
    while i < n {
        if i % 2 == 0 {
            acc += x[i * 256 :+ 256]
        } else {
            acc -= x[i * 256 :+ 256]
        }
        i += 1
    }
    out[0 :+ 256] = acc
}""",
        lambda r: ([normal(r, (1000,)), nan(1000), np.int32(4)], (1,)),
    ),
    # A window whose start the loop computes, past the tensor's end in the last iteration:
    # the absent lanes the loop carries out are skipped by the store (lowering folds the
    # window's bounds into the carried mask).
    "loop_window_past_the_end": (
        """
kernel lw(x: tensor<f32>[N], out: tensor<f32>[N], n: i32) {
    var acc = zeros<f32>[256]
    for i in 0 .. n {
        acc -= x[i * 256 :+ 256]
    }
    out[0 :+ 256] = acc
}""",
        lambda r: ([normal(r, (1000,)), nan(1000), np.int32(4)], (1,)),
    ),
    "early_return": (
        """
kernel er(x: tensor<f32>[N], out: tensor<f32>[N]) {
    if ctx.block.x == 1 {
        return
    }
    out[ctx.block.x * 64 :+ 64] = x[ctx.block.x * 64 :+ 64] + 1.0
}""",
        lambda r: ([normal(r, (200,)), nan(200)], (4,)),
    ),
    "atomics": (
        """
kernel hist(x: tensor<f32>[N], total: tensor<f32>[T]) {
    let b = ctx.block.x
    atomic_add(total[0 :+ 4], x[b * 4 :+ 4])
}""",
        lambda r: ([normal(r, (30,)), np.zeros(4, np.float32)], (8,)),
    ),
}


def cases():
    for name in PROGRAMS:
        for arch, specialised in (("sm_90a", True), ("sm_80", False)):
            ident = f"{name}-{arch}-{'spec' if specialised else 'plain'}"
            yield pytest.param(name, arch, specialised, id=ident)


@pytest.mark.usefixtures("memoised_layouts")
@pytest.mark.parametrize(("name", "arch", "specialised"), list(cases()))
def test_program_matches_interpreter(name, arch, specialised):
    text, make = PROGRAMS[name]
    kernel = text.split("kernel ")[1].split("(")[0]
    tile = lower_text(text, kernel)
    gpu = pipeline.build(tile, arch=arch, index_width=32, **specialisation(tile, specialised))
    args, grid = make(np.random.default_rng(11))
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpret(tile, grid, expected)
    execute(gpu, grid, got)
    assert_same_tensors([p.name for p in tile.params], expected, got, args)


def test_the_transposed_operands_take_the_paths_they_are_here_for():
    tile = lower_text(PROGRAMS["transposed_a"][0], "tmm")
    gpu = pipeline.build(tile, arch="sm_90a", **specialisation(tile, True))
    assert [op.a_major for op in ops(gpu, ir.Wgmma)] == ["mn"]
    tile = lower_text(PROGRAMS["transposed_b_bf16"][0], "mmt")
    gpu = pipeline.build(tile, arch="sm_90a", **specialisation(tile, True))
    assert [(op.a_major, op.b_major) for op in ops(gpu, ir.Wgmma)] == [("k", "k")]
    tile = lower_text(PROGRAMS["row_of_12288"][0], "r12")
    gpu = pipeline.build(tile, arch="sm_90a", **specialisation(tile, True))
    layout = next(op for op in ops(gpu, ir.Load)).result.tile.layout
    assert layout.repeat > 1 and not layout.has_padding  # 12288 = 12 x 1024, no padding
