"""Helpers as fixtures: translate a snippet of a Python module, or of one kernel's body."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from phobos.compile.syntax import ast as ph
from phobos.frontend import Program, translate_source

HEADER = "import phobos.lang as ph\n\n\n"


def _translate(body: str, filename: str = "/work/kernels.py") -> Program:
    return translate_source(HEADER + textwrap.dedent(body), filename)


def _kernel_body(statements: str, params: str = "x: ph.tensor[ph.f32][N]") -> tuple[ph.Stmt, ...]:
    source = f"@ph.kernel\ndef k({params}):\n" + textwrap.indent(
        textwrap.dedent(statements), "    "
    )
    return _translate(source).module.kernel("k").body.body


def _expr(text: str) -> ph.Expr:
    (stmt,) = _kernel_body(f"e: ph.let = {text}\n")
    assert isinstance(stmt, ph.Let)
    return stmt.value


@pytest.fixture
def translate() -> Callable[..., Program]:
    """``import phobos.lang as ph`` (lines 1-3) followed by the dedented body, translated."""
    return _translate


@pytest.fixture
def kernel_body() -> Callable[..., tuple[ph.Stmt, ...]]:
    """The statements of ``@ph.kernel def k(params): <statements>``."""
    return _kernel_body


@pytest.fixture
def expr() -> Callable[[str], ph.Expr]:
    """The Phobos expression a Python expression spells."""
    return _expr
