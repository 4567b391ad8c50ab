"""How values and expressions are named in error messages and their help."""

from __future__ import annotations

from phobos.compile.check.types import Literal, Value
from phobos.compile.diagnostics import source_line
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

# Source text longer than this is abbreviated in help messages.
MAX_QUOTE = 40


def describe(expr: ast.Expr) -> str:
    """``expr`` as the user wrote it (when short and on one line), for help messages."""
    if isinstance(expr, ast.Name):
        return expr.id
    span = expr.span
    if span.line > 0 and span.end_line == span.line:
        line = source_line(span.file, span.line)
        text = line[span.col - 1 : span.end_col - 1] if line else ""
        if text and len(text) <= MAX_QUOTE:
            return text
    return _sketch(expr)


def _sketch(expr: ast.Expr) -> str:
    if isinstance(expr, (ast.IntLit, ast.FloatLit)):
        return str(expr.value) + (expr.suffix or "")
    if isinstance(expr, ast.Ctx):
        return f"ctx.{expr.group}.{expr.axis}"
    if isinstance(expr, ast.Call):
        return f"{expr.func}(...)"
    if isinstance(expr, ast.Subscript):
        return f"{_sketch(expr.base)}[...]"
    if isinstance(expr, ast.Name):
        return expr.id
    return "..."


def shown(type: ir.IRType) -> str:
    """A type as messages show it: whether lanes may be absent is not the user's concern."""
    return str(ir.TileT(type.dtype, type.shape) if isinstance(type, ir.TileT) else type)


def type_name(value: Value) -> str:
    return value.describe() if isinstance(value, Literal) else shown(value.type)


def counted(count: int | str, noun: str) -> str:
    """``1 argument``, ``2 arguments``, ``1 to 2 arguments``."""
    return f"{count} {noun}" if str(count) == "1" else f"{count} {noun}s"
