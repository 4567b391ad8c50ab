"""Number literals: the .ph spelling where Python reads it as the same number, else ``repr``.

``0xFF``, ``1_000`` and ``1e-5`` read the same in both languages and keep their
spelling (with the case and the ``.0`` that ruff gives them); ``007`` (not
Python) or a literal folded from a cast (``f16(2.5)``) is written from its value.
"""

from __future__ import annotations

import ast as python_ast

from phobos.compile.syntax import ast


def number_text(literal: ast.IntLit | ast.FloatLit, lines: tuple[str, ...]) -> str:
    """The Python text of ``literal``'s value, without its type suffix."""
    written = _written(literal, lines)
    if written is not None:
        written = _normalised(written)
        if _reads_as(written, literal.value):
            return written
    return repr(literal.value)


def _normalised(text: str) -> str:
    """The spelling ruff would give: ``0xff`` → ``0xFF``, ``1E5`` → ``1e5``, ``2.`` → ``2.0``."""
    if text[:2].lower() == "0x":
        return "0x" + text[2:].upper()
    text = text.lower()
    if text.endswith("."):
        return text + "0"
    return text.replace(".e", ".0e")


def _written(literal: ast.IntLit | ast.FloatLit, lines: tuple[str, ...]) -> str | None:
    span = literal.span
    if span.line != span.end_line or not 0 < span.line <= len(lines):
        return None
    text = lines[span.line - 1][span.col - 1 : span.end_col - 1]
    if literal.suffix is not None and text.endswith(literal.suffix):
        text = text[: -len(literal.suffix)]
    return text


def _reads_as(text: str, value: int | float) -> bool:
    try:
        tree = python_ast.parse(text, mode="eval")
    except SyntaxError:
        return False
    body = tree.body
    return (
        isinstance(body, python_ast.Constant)
        and type(body.value) is type(value)
        and body.value == value
    )
