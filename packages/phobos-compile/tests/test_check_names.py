"""Names: let binds once, var keeps its type and shape, no shadowing, did-you-mean."""

from __future__ import annotations

import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax.parser import parse

HEADER = "const C = 4\nkernel k(x: tensor<f32>[N], a: f32) {\n"


def body(text: str) -> ir.Kernel:
    return lower(parse(HEADER + text + "\n}\n", "t.ph"), "k", {})


def failure(text: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        body(text)
    return caught.value


def at(err: PhobosError) -> tuple[int, int]:
    return err.span.line - 2, err.span.col


def test_let_cannot_be_reassigned():
    err = failure("let t = a\nt = 2.0")
    assert at(err) == (2, 1)
    assert "bound with let" in err.message
    assert err.diagnostics[0].help == "declare it with var: `var t = ...`"


def test_var_assignments_keep_type_and_shape():
    kernel = body("var t = 0.0\nt = a\nt += 1.0")
    assert [type(s).__name__ for s in kernel.body] == ["Define", "Assign", "Assign"]
    assert kernel.body[2].value.op == "add"
    err = failure("var t = 0.0\nt = 1i64")
    assert at(err) == (2, 5)
    assert "holds f32" in err.message and "f32(1i64)" in err.diagnostics[0].help
    err = failure("var t = x[0 :+ 8]\nt = x[0 :+ 16]")
    assert at(err) == (2, 5)
    assert "tile<f32>[8]" in err.message and "tile<f32>[16]" in err.message
    err = failure("var t = zeros<f32>[8]\nt = 0.0")
    assert at(err) == (2, 5)
    assert "is a tile<f32>[8], but the value is a f32" in err.message
    err = failure("var s = 0.0\ns = x[0 :+ 8]")
    assert "is a f32, but the value is a tile<f32>[8]" in err.message


def test_var_that_receives_a_partial_tile_is_partial_from_the_start():
    kernel = body("var t = zeros<f32>[8]\nt = t + x[0 :+ 8]")
    define = kernel.body[0]
    assert define.var.type == ir.TileT("f32", (8,), partial=True)
    assert isinstance(define.value, ir.Full) and not define.value.type.partial


def test_no_shadowing():
    err = failure("let t = a\nfor i in 0 .. 4 {\n    let t = 1.0\n}")
    assert at(err) == (3, 5)
    assert "'t' is already declared" in err.message
    err = failure("let C = 1")
    assert "already declared" in err.message
    err = failure("let a = 1.0")
    assert "scalar parameter" in err.message


def test_sibling_blocks_may_reuse_a_name_and_variables_are_unique():
    kernel = body(
        "for i in 0 .. 4 {\n    let t = a\n}\nfor j in 0 .. 4 {\n    let t = a\n}\nlet i_1 = 0"
    )
    first, second, last = kernel.body
    assert first.body[0].var.name == "t"
    assert second.body[0].var.name == "t_1"
    assert last.var.name != first.var.name


def test_variables_never_take_a_parameter_or_extent_name():
    module = parse(
        "fn g(x: f32) -> f32 {\n    let N = x\n    return N\n}\n"
        "kernel k(x: tensor<f32>[N], a: f32) {\n    let v = g(a)\n}\n",
        "t.ph",
    )
    kernel = lower(module, "k", {})
    names = {s.var.name for s in kernel.body}
    assert "x" not in names and "N" not in names


def test_undefined_name_suggests_the_closest():
    err = failure("let t = alhpa")
    assert at(err) == (1, 9)
    assert err.message == "undefined name 'alhpa'"
    err = failure("let base = a\nlet t = bse")
    assert err.diagnostics[0].help == "did you mean 'base'?"


def test_assigning_a_parameter_or_const_is_an_error():
    err = failure("a = 1.0")
    assert "scalar parameter 'a'" in err.message
    assert "var a_v = a" in err.diagnostics[0].help
    err = failure("C = 1")
    assert "constant 'C'" in err.message
    err = failure("N = 1")
    assert "extent 'N'" in err.message
    err = failure("x = 1.0")
    assert "x[a :+ L] = ..." in err.diagnostics[0].help
    err = failure("for i in 0 .. 4 {\n    i = 2\n}")
    assert "loop variable" in err.message


def test_a_tensor_is_not_a_value():
    err = failure("let t = x + 1.0")
    assert at(err) == (1, 9)
    assert err.diagnostics[0].help == "load a window of it: `x[a :+ L]`"
