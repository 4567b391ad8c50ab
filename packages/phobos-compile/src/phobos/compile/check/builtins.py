"""The builtin functions: math, selection, reductions (``check/reductions.py``), dot,
transpose, arange, fill, casts.

``BUILTINS`` maps each name a program may call to the function that lowers the
call.  Each checks its arguments' count, kinds and types and says what to write
when they are wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from phobos.compile.check.arguments import check_args, tile_operand
from phobos.compile.check.broadcast import broadcast_shapes, is_partial, shape_of, to_shape
from phobos.compile.check.math_functions import SIGNATURES, lower_clamp, lower_math
from phobos.compile.check.messages import describe, shown, type_name
from phobos.compile.check.random_numbers import RANDOM, lower_random
from phobos.compile.check.reductions import REDUCTIONS
from phobos.compile.check.scope import Scope
from phobos.compile.check.types import (
    Literal,
    Value,
    is_numeric,
    literal_fits,
    make_const,
)
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

if TYPE_CHECKING:
    from phobos.compile.check.lowering import Expressions

DOT_DTYPES = ("f16", "bf16", "f32")

Lowering = Callable[["Expressions", ast.Call, Scope], Value]


def _elementwise_binary(op: str) -> Lowering:
    def lower(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
        check_args(call, 2, 2)
        values = [lw.value(a, scope) for a in call.args]
        a, b = lw.elementwise(list(call.args), values, call.span)
        if not is_numeric(a.type.dtype):
            raise error(call.span, f"{call.func}() needs numbers, got {a.type.dtype}")
        type = a.type
        if isinstance(type, ir.TileT):
            type = ir.TileT(type.dtype, type.shape, is_partial(a) or is_partial(b))
        return ir.Binary(op, a, b, type, call.span)

    return lower


def _where(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    check_args(call, 3, 3)
    cond = lw.materialise(lw.value(call.args[0], scope))
    if cond.type.dtype != "bool":
        raise error(
            call.args[0].span,
            f"where() needs a bool condition, got {shown(cond.type)}",
            help=f"compare it, e.g. `{describe(call.args[0])} != 0`",
        )
    values = [lw.value(a, scope) for a in call.args[1:]]
    a, b = lw.unify(list(call.args[1:]), values, call.span)
    shapes = [s for s in map(shape_of, (cond, a, b)) if s is not None]
    if not shapes:
        return ir.Select(cond, a, b, a.type, call.span)
    shape = broadcast_shapes(shapes, call.span, lw.ctx.spelling)
    cond, a, b = (to_shape(v, shape, v.span) for v in (cond, a, b))
    partial = any(is_partial(v) for v in (cond, a, b))
    return ir.Select(cond, a, b, ir.TileT(a.type.dtype, shape, partial), call.span)


def _dot(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    check_args(call, 2, 3)
    values = [lw.value(a, scope) for a in call.args]
    acc = values[2] if len(values) == 3 else None
    return lower_dot(lw, call, list(call.args), values[:2], acc)


def lower_dot(
    lw: Expressions,
    node: ast.Call | ast.Binary,
    exprs: list[ast.Expr],
    operands: list[Value],
    acc: Value | None,
) -> ir.Expr:
    """``acc + a @ b``: a [M, K], b [K, N] of one of f16/bf16/f32; acc [M, N], f32 unless given."""
    for expr, got in zip(exprs, operands):
        if (
            isinstance(got, Literal)
            or not isinstance(got.type, ir.TileT)
            or len(got.type.shape) != 2
        ):
            raise error(expr.span, f"dot needs 2-D tiles, got {type_name(got)}")
    a, b = operands
    sp = lw.ctx.spelling
    assert isinstance(a, ir.Expr) and isinstance(b, ir.Expr)
    assert isinstance(a.type, ir.TileT) and isinstance(b.type, ir.TileT)
    if a.type.dtype != b.type.dtype:
        raise error(
            node.span,
            f"dot operands must share a type, got {a.type.dtype} and {b.type.dtype}",
            help=f"cast one, e.g. `{sp.call(a.type.dtype, describe(exprs[1]))}`",
        )
    if a.type.dtype not in DOT_DTYPES:
        raise error(
            node.span,
            f"dot needs f16, bf16 or f32 operands, got {a.type.dtype}",
            help=f"cast them, e.g. `{sp.call('f16', describe(exprs[0]))}`",
        )
    (m, k), (k2, n) = a.type.shape, b.type.shape
    if k != k2:
        raise error(
            node.span,
            f"dot of [{m}, {k}] and [{k2}, {n}]: inner extents {k} and {k2} differ",
            help="the first operand's columns must match the second's rows; "
            f"`{sp.call('trans', 'b')}` may help",
        )
    partial = a.type.partial or b.type.partial
    if acc is None:
        acc_value: ir.Expr = ir.Full(0.0, ir.TileT("f32", (m, n)), node.span)
    else:
        assert isinstance(node, ast.Call)
        acc_value = lw.materialise(acc)
        ok_types = ("f32", a.type.dtype)
        if not isinstance(acc_value.type, ir.TileT) or acc_value.type.shape != (m, n):
            raise error(
                node.args[2].span,
                f"dot's accumulator must be a [{m}, {n}] tile, got {shown(acc_value.type)}",
                help=f"start it with `{sp.zeros('f32', f'{m}, {n}')}`",
            )
        if acc_value.type.dtype not in ok_types:
            raise error(
                node.args[2].span,
                f"dot's accumulator must be f32 (or {a.type.dtype}), got {acc_value.type.dtype}",
                help=f"start it with `{sp.zeros('f32', f'{m}, {n}')}`",
            )
        partial = partial or acc_value.type.partial
    type = ir.TileT(acc_value.type.dtype, (m, n), partial)
    return ir.Dot(a, b, acc_value, type, node.span)


def _trans(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    check_args(call, 1, 1)
    tile = tile_operand(lw, call.args[0], scope, "trans()")
    assert isinstance(tile.type, ir.TileT)
    if len(tile.type.shape) != 2:
        raise error(call.span, f"trans() needs a 2-D tile, got {shown(tile.type)}")
    shape = tile.type.shape[::-1]
    return ir.Transpose(tile, ir.TileT(tile.type.dtype, shape, tile.type.partial), call.span)


def _arange(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    sp = lw.ctx.spelling
    counts = f"{sp.call('arange', 'n')} counts 0 to n - 1"
    check_args(call, 1, 1, help=f"{counts}; from a start, write `a + {sp.call('arange', 'n')}`")
    n = lw.tile_extent(call.args[0], scope)
    return ir.Iota(ir.TileT("index", (n,)), call.span)


def _fill(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    check_args(call, 2, 2)
    tile = tile_operand(lw, call.args[0], scope, "fill()")
    assert isinstance(tile.type, ir.TileT)
    dtype = tile.type.dtype
    got = lw.value(call.args[1], scope)
    if isinstance(got, Literal):
        if not literal_fits(got, dtype):
            raise error(call.args[1].span, f"a {got.describe()} cannot fill a {dtype} tile")
        got = make_const(got, dtype, lw.ctx.spelling, call.args[1].span)
    if isinstance(got.type, ir.TileT):
        raise error(call.args[1].span, "fill()'s value must be a scalar, not a tile")
    if got.type.dtype != dtype:
        raise error(
            call.args[1].span,
            f"fill() of a {dtype} tile needs a {dtype} value, got {got.type.dtype}",
            help=f"cast it: `{lw.ctx.spelling.call(dtype, describe(call.args[1]))}`",
        )
    return ir.Fill(tile, got, ir.TileT(dtype, tile.type.shape), call.span)


def lower_cast(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    """``f16(x)``: a conversion to any scalar type, lane by lane for a tile."""
    check_args(call, 1, 1)
    dtype = call.func
    got = lw.value(call.args[0], scope)
    if isinstance(got, Literal):
        if literal_fits(got, dtype):
            return make_const(got, dtype, lw.ctx.spelling, call.span)
        got = make_const(got, got.default_dtype, lw.ctx.spelling)
    if got.type.dtype == dtype:
        return got
    type: ir.IRType = ir.ScalarT(dtype)
    if isinstance(got.type, ir.TileT):
        type = ir.TileT(dtype, got.type.shape, got.type.partial)
    return ir.Cast(got, type, call.span)


BUILTINS: dict[str, Lowering] = {
    **dict.fromkeys(SIGNATURES, lower_math),
    "clamp": lower_clamp,
    **dict.fromkeys(RANDOM, lower_random),
    "maximum": _elementwise_binary("max"),
    "minimum": _elementwise_binary("min"),
    "where": _where,
    **REDUCTIONS,
    "dot": _dot,
    "trans": _trans,
    "arange": _arange,
    "fill": _fill,
}
