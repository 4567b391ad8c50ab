"""Control flow: loop bounds and steps, block-uniform bool conditions, kernel returns."""

from __future__ import annotations

import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax.parser import parse

HEADER = "@autotune(S in {4})\nkernel k(x: tensor<f32>[N], a: f32, n: i32) {\n"


def body(text: str) -> ir.Kernel:
    return lower(parse(HEADER + text + "\n}\n", "t.ph"), "k", {"S": 4})


def failure(text: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        body(text)
    return caught.value


def at(err: PhobosError) -> tuple[int, int]:
    return err.span.line - 2, err.span.col


def test_for_loop_types_its_variable_from_its_bounds():
    loop = body("for k in 0 .. N step S {\n    x[k :+ 4] = a\n}").body[0]
    assert isinstance(loop, ir.For)
    assert loop.var.type == ir.ScalarT("index")
    assert loop.step == ir.Const(4, ir.ScalarT("index"))
    loop = body("for k in 0 .. 10 {\n}").body[0]
    assert loop.var.type == ir.ScalarT("i32")
    assert loop.step == ir.Const(1, ir.ScalarT("i32"))


def test_for_loop_errors():
    err = failure("for k in 0 .. N step 0 {\n}")
    assert at(err) == (1, 22)
    assert "step must be positive" in err.message
    err = failure("for k in 0.0 .. N {\n}")
    assert at(err) == (1, 10)
    assert "integer scalars" in err.message
    err = failure("for k in 0 .. a {\n}")
    assert "integer scalars, got f32" in err.message


def test_if_and_while_need_block_uniform_bools():
    kernel = body("var i = 0\nwhile i < n {\n    i += 1\n}\nif a > 0.0 {\n    return\n} else {\n}")
    assert isinstance(kernel.body[1], ir.While)
    assert isinstance(kernel.body[2], ir.If) and kernel.body[2].then == (ir.Return(),)
    err = failure("if x[0 :+ 4] > 0.0 {\n}")
    assert at(err) == (1, 4)
    assert err.message.endswith("must be a block-uniform scalar, not a tile<bool>[4]")
    assert "where(c, a, b)" in err.diagnostics[0].help
    err = failure("while n {\n}")
    assert "must be bool, got i32" in err.message
    assert err.diagnostics[0].help == "compare it, e.g. `n != 0`"


def test_kernel_return_takes_no_value():
    err = failure("return 1")
    assert at(err) == (1, 1)
    assert "returns no value" in err.message
    assert "bare `return`" in err.diagnostics[0].help


def test_unused_expression_is_an_error():
    err = failure("a + 1.0")
    assert at(err) == (1, 1)
    assert "unused" in err.message
