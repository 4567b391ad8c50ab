"""lower(): variant values, the CTA size, consts, fn inlining; check_module's diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.check import check_module, lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import format_kernel
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax.parser import parse

SAXPY = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""


def failure(text: str, kernel: str = "k", **values: int) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        lower(parse(text, "t.ph"), kernel, values)
    return caught.value


def test_saxpy_lowers_with_its_values_folded():
    kernel = lower(parse(SAXPY, "saxpy.ph"), "saxpy", {"BLOCK": 256})
    assert kernel.values == (("BLOCK", 256),)
    assert [p.name for p in kernel.params] == ["x", "y", "out", "alpha"]
    assert kernel.extents == ("N",)
    define, store = kernel.body
    assert define.value == ir.Binary(
        "mul",
        ir.CtxValue("block", "x", ir.ScalarT("index")),
        ir.Const(256, ir.ScalarT("index")),
        ir.ScalarT("index"),
    )
    assert isinstance(store, ir.Store) and store.indices[0].length == 256


def test_variant_values_are_validated_at_the_kernel():
    err = failure(SAXPY, "saxpy")
    assert (err.span.line, err.span.col) == (2, 1)
    assert "needs a value for 'BLOCK'" in err.message
    assert "16, 32" in err.diagnostics[0].help
    err = failure(SAXPY, "saxpy", BLOCK=100)
    assert "BLOCK=100 is not in the @autotune space" in err.message
    err = failure(SAXPY, "saxpy", BLOCK=256.0)
    assert "must be an integer, got 256.0" in err.message
    kernel = lower(parse(SAXPY, "t.ph"), "saxpy", {"BLOCK": np.int64(64)})
    assert kernel.values == (("BLOCK", 64),) and type(kernel.values[0][1]) is int
    err = failure(SAXPY, "saxpy", BLOCK=256, BLOK=3)
    assert "'BLOK' is not a compile-time name" in err.message
    assert err.diagnostics[0].help == "did you mean 'BLOCK'?"


def test_num_threads_may_be_given_or_tuned():
    kernel = lower(parse(SAXPY, "t.ph"), "saxpy", {"BLOCK": 256, "NUM_THREADS": 128})
    assert kernel.values == (("BLOCK", 256), ("NUM_THREADS", 128))
    lower(parse(SAXPY, "t.ph"), "saxpy", {"BLOCK": 256, "NUM_THREADS": 96})
    err = failure(SAXPY, "saxpy", BLOCK=256, NUM_THREADS=100)
    assert "not a valid CTA size" in err.message
    tuned = SAXPY.replace("[16, 8192]", "[16, 8192], NUM_THREADS in {64, 256}")
    tuned = tuned.replace("alpha * x", "f32(NUM_THREADS) * x")
    kernel = lower(parse(tuned, "t.ph"), "saxpy", {"BLOCK": 16, "NUM_THREADS": 64})
    assert kernel.values == (("BLOCK", 16), ("NUM_THREADS", 64))
    assert "mul(splat<[16]>(64.0)" in format_kernel(kernel)


def test_consts_fold_and_name_tensor_extents():
    text = (
        "const D = 16\nconst H = D * 2\nconst EPS = 1e-5\n"
        "kernel k(x: tensor<f32>[N, H]) {\n    let t = x[0, 0 :+ H] + EPS\n}\n"
    )
    kernel = lower(parse(text, "t.ph"), "k", {})
    assert kernel.params[0].dims == ("N", 32)
    assert kernel.body[0].var.type == ir.TileT("f32", (32,), partial=True)
    err = failure("kernel k(x: tensor<f32>[n], n: i32) {\n}\n")
    assert (err.span.line, err.span.col) == (1, 25)
    assert "extent 'n' has the name of the scalar parameter" in err.message
    err = failure("const C = ctx.block.x\nkernel k() {\n}\n")
    assert (err.span.line, err.span.col) == (1, 11)
    assert "compile-time number" in err.message


FNS = """\
fn scale(v: f32, s: f32) -> f32 {
    let t = v * s
    return t
}

fn twice(v: f32) -> f32 {
    return scale(v, 2.0)
}
"""


def test_fn_calls_are_inlined_at_the_calls_shapes():
    text = (
        FNS
        + "kernel k(x: tensor<f32>[N], a: f32) {\n    let r = twice(x[0 :+ 8])\n    let q = twice(a)\n}\n"
    )
    kernel = lower(parse(text, "t.ph"), "k", {})
    names = [s.var.name for s in kernel.body]
    assert names == ["v", "v_1", "s", "t", "r", "v_2", "v_3", "s_1", "t_1", "q"]
    types = {s.var.name: s.var.type for s in kernel.body}
    assert types["t"] == ir.TileT("f32", (8,), partial=True)
    assert types["t_1"] == ir.ScalarT("f32")
    assert types["s"] == ir.ScalarT("f32")


def test_fn_errors_name_the_call():
    text = FNS + "kernel k(n: i32) {\n    let r = twice(n)\n}\n"
    err = failure(text)
    assert (err.span.line, err.span.col) == (10, 19)
    assert "takes f32 for 'v', got i32" in err.message
    assert "f32(n)" in err.diagnostics[0].help
    bad = "fn g(v: f32) -> f32 {\n    return v + 1i64\n}\nkernel k(a: f32) {\n    let r = g(a)\n}\n"
    err = failure(bad)
    assert (err.span.line, err.span.col) == (2, 12)
    assert err.diagnostics[0].notes[0].span.line == 5
    assert "in this call of 'g'" in err.diagnostics[0].notes[0].message


def test_fn_rules():
    loop = "fn g(v: f32) -> f32 {\n    return g(v)\n}\nkernel k(a: f32) {\n    let r = g(a)\n}\n"
    assert "calls itself" in failure(loop).message
    early = (
        "fn g(v: f32) -> f32 {\n    if v > 0.0 {\n        return v\n    }\n    return 0.0\n}\n"
        "kernel k(a: f32) {\n    let r = g(a)\n}\n"
    )
    err = failure(early)
    assert (err.span.line, err.span.col) == (3, 9)
    assert "last statement" in err.message
    void = "fn g(v: f32) {\n    let t = v\n}\nkernel k(a: f32) {\n    g(a)\n    let r = g(a)\n}\n"
    err = failure(void)
    assert (err.span.line, err.span.col) == (6, 13)
    assert "returns no value" in err.message
    hidden = "fn g(v: f32) -> f32 {\n    return v * a\n}\nkernel k(a: f32) {\n    let r = g(a)\n}\n"
    assert "undefined name 'a'" in failure(hidden).message


def test_check_module_reports_every_kernel():
    text = (
        "kernel good(x: tensor<f32>[N]) {\n    x[0 :+ 4] = 1.0\n}\n"
        "kernel bad1(a: f32) {\n    let t = a + 1i64\n}\n"
        "@autotune(B in [16, 64])\nkernel bad2(a: f32) {\n    let t = undefined_name\n}\n"
    )
    with pytest.raises(PhobosError) as caught:
        check_module(parse(text, "t.ph"))
    lines = [d.span.line for d in caught.value.diagnostics]
    assert lines == [5, 9]
    check_module(parse(SAXPY, "t.ph"))
    with pytest.raises(PhobosError) as caught:
        check_module(parse("kernel k() {\n}\nkernel k() {\n}\n", "t.ph"))
    assert "defined twice" in caught.value.message


def test_every_failing_statement_is_reported_once():
    text = (
        "kernel k(x: tensor<f32>[N], h: tensor<f16>[N]) {\n"
        "    let s = x[0 :+ 64] + h[0 :+ 64]\n"
        "    let q = s * 2.0\n"
        "    var t = 0\n"
        "    for i in 0 .. 4 {\n"
        "        t = 1.5\n"
        "    }\n"
        "    x[0 :+ 64] = q\n"
        "    let r = undefined_name\n"
        "}\n"
    )
    err = failure(text)
    assert [(d.span.line, d.span.col) for d in err.diagnostics] == [(2, 13), (6, 13), (9, 13)]


def test_errors_in_a_fns_nested_blocks_name_the_call():
    text = (
        "fn g(v: f32) -> f32 {\n    var acc = v\n    for i in 0 .. 4 {\n        acc = 1i64\n"
        "    }\n    return acc\n}\n"
        "kernel k(a: f32) {\n    let r = g(a)\n}\n"
    )
    err = failure(text)
    (diagnostic,) = err.diagnostics
    assert (diagnostic.span.line, diagnostic.span.col) == (4, 15)
    assert [n.span.line for n in diagnostic.notes] == [9]
