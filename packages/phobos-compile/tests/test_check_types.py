"""Types: literals adapt, distinct types need a cast, operators' operand rules, casts, math."""

from __future__ import annotations

import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import format_kernel
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax.parser import parse

HEADER = (
    "kernel k(x: tensor<f32>[N], h: tensor<f16>[N], i: tensor<i32>[N], u: tensor<u8>[N], "
    "a: f32, n: i32, w: i64, b: bool) {\n"
)


def body(text: str) -> ir.Kernel:
    return lower(parse(HEADER + text + "\n}\n", "t.ph"), "k", {})


def defined(text: str) -> dict[str, ir.IRType]:
    """The type of each variable the body defines."""
    return {s.var.name: s.var.type for s in body(text).body if isinstance(s, ir.Define)}


def failure(text: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        body(text)
    return caught.value


def at(err: PhobosError) -> tuple[int, int]:
    """Line and column of the error within the body (the body's first line is 1)."""
    return err.span.line - 1, err.span.col


def test_int_literal_takes_the_other_operands_type():
    types = defined("let p = a * 2\nlet q = w + 1\nlet r = 2 * ctx.block.x\nlet s = u[0] + 255")
    assert types == {
        "p": ir.ScalarT("f32"),
        "q": ir.ScalarT("i64"),
        "r": ir.ScalarT("index"),
        "s": ir.ScalarT("u8"),
    }


def test_float_literal_takes_the_other_operands_float_type():
    types = defined("let t = h[0 :+ 8] * 0.5")
    assert types["t"] == ir.TileT("f16", (8,), partial=True)


def test_lone_literals_are_i32_and_f32():
    assert defined("let p = 3\nlet q = 2.5\nlet r = 1 + 2.5") == {
        "p": ir.ScalarT("i32"),
        "q": ir.ScalarT("f32"),
        "r": ir.ScalarT("f32"),
    }


def test_literal_arithmetic_folds_with_c_division():
    kernel = body("let p = -7 / 2\nlet q = -7 % 2\nlet r = 1 << 4")
    values = [s.value.value for s in kernel.body]
    assert values == [-3, -1, 16]


def test_float_literal_folding_follows_ieee_and_int_folding_checks_its_operands():
    kernel = body("let p = 1.0 / 0.0\nlet q = -1 / 0.0\nlet r = 2.5 % 1")
    assert [s.value.value for s in kernel.body] == [float("inf"), float("-inf"), 0.5]
    err = failure("let p = 1 / 0")
    assert at(err) == (1, 9)
    assert "division by zero" in err.message
    err = failure("let p = 1 << 64")
    assert "shifts take 0 to 63" in err.message


def test_suffixed_literal_is_typed():
    assert defined("let p = 7i64\nlet q = 2.5f16") == {
        "p": ir.ScalarT("i64"),
        "q": ir.ScalarT("f16"),
    }


def test_literal_out_of_range_for_the_type():
    err = failure("let p = u[0] + 300")
    assert at(err) == (1, 16)
    assert "out of range for u8" in err.message
    err = failure("let p = h[0] * 70000.0")
    assert "out of range for f16" in err.message
    err = failure("let p = 3000000000")
    assert "out of range for i32" in err.message
    assert "3000000000i64" in err.diagnostics[0].help


def test_float_literal_does_not_become_an_int():
    err = failure("let p = n * 1.5")
    assert at(err) == (1, 13)
    assert "float literal cannot take the type i32" in err.message
    assert "f32(n)" in err.diagnostics[0].help


def test_mixing_types_names_the_cast_to_write():
    err = failure("let p = a + n")
    assert at(err) == (1, 9)
    assert err.message == "mismatched types f32 and i32"
    assert "`f32(n)`" in err.diagnostics[0].help
    err = failure("let p = h[0] * a")
    assert err.diagnostics[0].help == "convert one side explicitly, e.g. `f32(h[0])`"


def test_index_mixes_with_i32_and_i64():
    kernel = body("let p = ctx.block.x + n\nlet q = w * ctx.grid.x")
    p, q = kernel.body
    assert p.var.type == q.var.type == ir.ScalarT("index")
    assert isinstance(p.value.right, ir.Cast) and p.value.right.type == ir.ScalarT("index")
    assert isinstance(q.value.left, ir.Cast)


def test_comparisons_give_bool_and_logic_needs_bool():
    types = defined("let p = a < 1.0 && n == 3\nlet q = !(x[0 :+ 4] > 0.0)")
    assert types == {"p": ir.ScalarT("bool"), "q": ir.TileT("bool", (4,), partial=True)}
    err = failure("let p = n && b")
    assert "needs bools" in err.message
    assert "x != 0" in err.diagnostics[0].help
    err = failure("let p = !n")
    assert at(err) == (1, 9)


def test_bitwise_ops_on_ints_and_bools_only():
    assert defined("let p = n & 6\nlet q = b ^ true\nlet r = n << 2") == {
        "p": ir.ScalarT("i32"),
        "q": ir.ScalarT("bool"),
        "r": ir.ScalarT("i32"),
    }
    err = failure("let p = a | 1.0")
    assert at(err) == (1, 9)
    assert "needs integers or bools, got f32" in err.message
    assert "i32(a)" in err.diagnostics[0].help
    err = failure("let p = b + b")
    assert "use `&&`" in err.diagnostics[0].help


def test_division_and_remainder_on_ints_and_floats():
    kernel = body("let p = n / 2\nlet q = a % 2.0")
    assert [s.value.op for s in kernel.body] == ["div", "mod"]
    assert kernel.body[1].var.type == ir.ScalarT("f32")


def test_casts_to_any_scalar_type():
    kernel = body("let p = f16(x[0 :+ 8])\nlet q = index(n)\nlet r = f32(3)\nlet s = i32(a)")
    p, q, r, s = kernel.body
    assert isinstance(p.value, ir.Cast) and p.var.type == ir.TileT("f16", (8,), partial=True)
    assert q.var.type == ir.ScalarT("index")
    assert r.value == ir.Const(3.0, ir.ScalarT("f32"))
    assert s.var.type == ir.ScalarT("i32")


def test_math_on_floats_and_abs_on_ints():
    kernel = body("let p = exp2(a)\nlet q = abs(n)\nlet r = rsqrt(2.0)")
    assert [s.value.fn for s in kernel.body] == ["exp2", "abs", "rsqrt"]
    assert kernel.body[2].var.type == ir.ScalarT("f32")
    err = failure("let p = sqrt(n)")
    assert at(err) == (1, 9)
    assert "`sqrt(f32(n))`" in err.diagnostics[0].help


def test_maximum_minimum_and_where_broadcast():
    types = defined(
        "let p = maximum(x[0 :+ 8], 0.0)\n"
        "let q = minimum(a, x[0 :+ 4][:, newaxis])\n"
        "let r = where(x[0 :+ 8] > 0.0, x[0 :+ 8], 0.0)"
    )
    assert types["p"] == ir.TileT("f32", (8,), partial=True)
    assert types["q"] == ir.TileT("f32", (4, 1), partial=True)
    assert types["r"] == ir.TileT("f32", (8,), partial=True)
    err = failure("let p = where(a, 1.0, 2.0)")
    assert at(err) == (1, 15)
    assert "bool condition" in err.message
    assert "a != 0" in err.diagnostics[0].help


def test_inf_adapts_to_float_types():
    kernel = body("let p = h[0] + -inf\nlet q = inf")
    assert kernel.body[0].value.right == ir.Const(float("-inf"), ir.ScalarT("f16"))
    assert kernel.body[1].var.type == ir.ScalarT("f32")
    assert "-inf" in format_kernel(kernel)


def test_unknown_function_suggests_a_name():
    err = failure("let p = exq(a)")
    assert err.message == "unknown function 'exq'"
    assert err.diagnostics[0].help == "did you mean 'exp'?"
    err = failure("let p = exp(a, a)")
    assert "takes 1 argument, got 2" in err.message
