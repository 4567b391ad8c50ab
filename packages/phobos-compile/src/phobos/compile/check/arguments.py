"""Argument checks the builtins share: how many, which keywords, a tile where one is needed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from phobos.compile.check.messages import counted, type_name
from phobos.compile.check.scope import Scope
from phobos.compile.check.types import Literal
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

if TYPE_CHECKING:
    from phobos.compile.check.lowering import Expressions


def check_args(
    call: ast.Call, low: int, high: int, keywords: tuple[str, ...] = (), help: str | None = None
) -> None:
    count = len(call.args)
    if not low <= count <= high:
        wanted = str(low) if low == high else f"{low} to {high}"
        raise error(
            call.span, f"{call.func}() takes {counted(wanted, 'argument')}, got {count}", help=help
        )
    for kw in call.keywords:
        if kw.name not in keywords:
            allowed = ", ".join(f"`{k}=`" for k in keywords) or "none"
            raise error(
                kw.span,
                f"{call.func}() has no keyword '{kw.name}'",
                help=f"its keywords: {allowed}",
            )


def tile_operand(lw: Expressions, expr: ast.Expr, scope: Scope, what: str) -> ir.Expr:
    got = lw.value(expr, scope)
    if isinstance(got, Literal) or not isinstance(got.type, ir.TileT):
        raise error(expr.span, f"{what} needs a tile, got {type_name(got)}")
    return got
