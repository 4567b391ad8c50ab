"""How values and expressions are named in error messages and their help."""

from __future__ import annotations

from phobos.compile.check.types import Literal, Value
from phobos.compile.syntax import ast


def describe(expr: ast.Expr) -> str:
    """A short source-like rendering of ``expr`` for help messages."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, (ast.IntLit, ast.FloatLit)):
        return str(expr.value) + (expr.suffix or "")
    if isinstance(expr, ast.Ctx):
        return f"ctx.{expr.group}.{expr.axis}"
    if isinstance(expr, ast.Call):
        return f"{expr.func}(...)"
    if isinstance(expr, ast.Subscript):
        return f"{describe(expr.base)}[...]"
    return "..."


def type_name(value: Value) -> str:
    return value.describe() if isinstance(value, Literal) else str(value.type)
