"""Python's grouping survives translation and printing: the Phobos text computes what Python would.

Random integer expressions (operators whose meaning Python and Phobos share on small
non-negative integers) are evaluated by Python, and by walking the translated tree
after a print/parse round trip through the Phobos text.
"""

from __future__ import annotations

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phobos.compile.diagnostics import PhobosError
from phobos.compile.syntax import ast as ph
from phobos.compile.syntax import parse
from phobos.frontend import translate_source

BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    "==": operator.eq,
    "<": operator.lt,
    ">=": operator.ge,
}
UNARY = {"-": operator.neg, "~": operator.invert}


def expressions() -> st.SearchStrategy[str]:
    leaves = st.integers(0, 9).map(str)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        binary = st.tuples(inner, st.sampled_from(sorted(BINARY)), inner).map(
            lambda t: f"{t[0]} {t[1]} {t[2]}"
        )
        unary = st.tuples(st.sampled_from(sorted(UNARY)), inner).map(lambda t: f"{t[0]}({t[1]})")
        grouped = inner.map(lambda e: f"({e})")
        return binary | unary | grouped

    return st.recursive(leaves, extend, max_leaves=8)


def evaluate(expr: ph.Expr) -> int:
    if isinstance(expr, ph.IntLit):
        return expr.value
    if isinstance(expr, ph.Unary):
        return UNARY[expr.op](evaluate(expr.operand))
    assert isinstance(expr, ph.Binary)
    return BINARY[expr.op](evaluate(expr.left), evaluate(expr.right))


def python_value(text: str) -> int:
    """What Python computes (the text holds only digits, operators and parentheses)."""
    return eval(text, {})


@settings(max_examples=150, deadline=None)
@given(expressions())
def test_printed_phobos_groups_as_python_does(text: str) -> None:
    source = f"import phobos.lang as ph\n\n@ph.kernel\ndef k(x: ph.tensor[ph.i64][N]):\n    x[0] = {text}\n"
    try:
        program = translate_source(source, "/grouping.py")
    except PhobosError as exc:  # a chained comparison is rejected; nothing else may be
        assert "chained comparison" in exc.message
        return
    round_trip = parse(program.text)
    assert round_trip == program.module
    (store,) = round_trip.kernel("k").body.body
    try:
        expected = python_value(text)
    except ValueError:  # a negative shift count
        with pytest.raises(ValueError):
            evaluate(store.value)
        return
    assert evaluate(store.value) == expected
