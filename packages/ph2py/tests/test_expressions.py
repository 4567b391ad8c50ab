"""Expressions keep their meaning under Python's precedence, and read as Python."""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ph2py import convert_source
from phobos.compile.syntax import ast, format_module, parse
from phobos.frontend import translate_source


def let_value(expr: str, params: str = "a: i32, b: i32, c: i32, x: f32, t: tensor<f32>[N]") -> str:
    """The Python spelling of ``expr`` as the value of a let in a kernel."""
    python = convert_source(f"kernel k({params}) {{\n    let e = {expr}\n}}\n", "t.ph").python
    line = next(line for line in python.splitlines() if line.startswith("    e: ph.let = "))
    return line.removeprefix("    e: ph.let = ")


@pytest.mark.parametrize(
    ("phobos", "python"),
    [
        ("a & 1 == 0", "a & (1 == 0)"),
        ("(a & 1) == 0", "a & 1 == 0"),
        ("a | b == c", "a | (b == c)"),
        ("!(a < b)", "not (a < b)"),
        ("!a == b", "(not a) == b"),
        ("a == !b", "a == (not b)"),
        ("-!a", "-(not a)"),
        ("!a && b || c", "(not a and b) or c"),
        ("a || b && c", "a or (b and c)"),
        ("(a || b) && c", "(a or b) and c"),
        ("a < b == c", "(a < b) == c"),
        ("a == (b == c)", "a == (b == c)"),
        ("a - (b - c)", "a - (b - c)"),
        ("-(-a)", "-(-a)"),
        ("~a & b", "~a & b"),
        ("a << b + c", "a << b + c"),
        ("(a + b)[0]", "(a + b)[0]"),
        ("-(a * b)", "-(a * b)"),
    ],
)
def test_operators_are_grouped_by_python_rules(phobos: str, python: str) -> None:
    assert let_value(phobos) == python


@pytest.mark.parametrize(
    ("phobos", "python"),
    [
        ("a / b", "a // b"),  # integers: Phobos divides to an integer
        ("(N + 63) / 64", "(N + 63) // 64"),  # extents are integers
        ("ctx.block.x / 2", "ph.ctx.block.x // 2"),
        ("x / 2.0", "x / 2.0"),  # floats divide exactly
        ("a / x", "a / x"),
        ("t[0] / 2", "t[0] / 2"),  # a load: its type is the tensor's, unknown here
        ("i64(a) / 2", "ph.i64(a) // 2"),
    ],
)
def test_division_reads_as_floor_division_on_integers_only(phobos: str, python: str) -> None:
    assert let_value(phobos) == python


def test_division_follows_integer_locals_and_constants() -> None:
    python = convert_source(
        textwrap.dedent(
            """\
            const HALF = 4 / 2
            const SCALE = 0.5
            kernel k(x: tensor<f32>[N]) {
                var n = N
                n /= 2
                var s = x[0 :+ 4]
                s /= SCALE
                let m = n / HALF
            }
            """
        ),
        "t.ph",
    ).python
    assert "HALF: ph.const = 4 // 2\n" in python
    assert "    n //= 2\n" in python
    assert "    s /= SCALE\n" in python
    assert "    m: ph.let = n // HALF\n" in python


@pytest.mark.parametrize(
    ("phobos", "python"),
    [
        ("2.5f16", "ph.f16(2.5)"),
        ("7i64", "ph.i64(7)"),
        ("f16(2.5)", "ph.f16(2.5)"),
        ("0xff", "0xFF"),
        ("1_000", "1_000"),
        ("007", "7"),
        ("2.", "2.0"),
        ("1E-5", "1e-5"),
        ("100000000.0", "100000000.0"),
        ("true && false", "True and False"),
        ("-inf", "-ph.inf"),
        ("ctx.grid.y", "ph.ctx.grid.y"),
        ("t[a :+ 4][:, newaxis]", "t[a:+4][:, None]"),
        ("t[a + 1 :+ 2 * c]", "t[a + 1 : +(2 * c)]"),
        ("t[ctx.block.x :+ 4]", "t[ph.ctx.block.x : +4]"),
        ("zeros<f16>[4, 8]", "ph.zeros[ph.f16][4, 8]"),
        ("sum(t[0 :+ 4], axis=0)", "ph.sum(t[0:+4], axis=0)"),
        ("f32(a)", "ph.f32(a)"),
    ],
)
def test_literals_names_and_subscripts(phobos: str, python: str) -> None:
    assert let_value(phobos) == python


def test_a_declared_inf_is_a_plain_name_and_fns_are_called_by_name() -> None:
    python = convert_source(
        "fn twice(v: f32) -> f32 {\n    return 2.0 * v\n}\n"
        "kernel k(t: tensor<f32>[N]) {\n    let inf = 1.0\n    t[0] = twice(inf) + exp(inf)\n}\n",
        "t.ph",
    ).python
    assert "    t[0] = twice(inf) + ph.exp(inf)\n" in python


@pytest.mark.parametrize(
    ("loop", "python"),
    [
        ("for i in 0 .. N", "for i in range(N):"),
        ("for i in 2 .. N", "for i in range(2, N):"),
        ("for i in 0 .. N step 4", "for i in range(0, N, 4):"),
        ("for i in 0i32 .. N", "for i in range(ph.i32(0), N):"),
    ],
)
def test_loops_are_ranges(loop: str, python: str) -> None:
    text = convert_source(f"kernel k(t: tensor<f32>[N]) {{\n    {loop} {{\n    }}\n}}\n", "t.ph")
    assert f"    {python}\n        pass\n" in text.python


# ---------------------------------------------------------------------- property


_NAMES = st.sampled_from([ast.Name("a"), ast.Name("b"), ast.Name("c")])
_LEAVES = st.one_of(
    _NAMES,
    st.integers(0, 9).map(ast.IntLit),
    st.booleans().map(ast.BoolLit),
)


def _grow(children: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
    binary = st.builds(
        ast.Binary, st.sampled_from(sorted(ast.BINARY_PRECEDENCE)), children, children
    )
    unary = st.builds(ast.Unary, st.sampled_from(["-", "!", "~"]), children)
    return st.one_of(binary, unary)


EXPRESSIONS = st.recursive(_LEAVES, _grow, max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRESSIONS)
def test_any_expression_round_trips_with_its_grouping(expr: ast.Expr) -> None:
    """Whatever the operators, the Python the front end reads back is the same tree."""
    kernel = ast.Kernel(
        "k",
        tuple(ast.Param(n, ast.ScalarType("i32")) for n in "abc"),
        ast.Block((ast.Let("e", expr),)),
    )
    text = format_module(ast.Module((kernel,)))
    python = convert_source(text, "t.ph").python
    assert translate_source(python, "t.py").module == parse(text)
