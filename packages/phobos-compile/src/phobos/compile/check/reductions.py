"""The reductions along an axis: ``sum``, ``prod``, ``max``, ``min``, ``any``, ``all``,
``xor_sum`` (``ir/reduction_ops.py`` holds what each takes, its identity and whether it
widens), and ``argmax``/``argmin``.

``any`` and ``all`` reduce bools; a tile of numbers is read as ``t != 0`` (as numpy's
``any`` and ``all`` read it: NaN counts as true), made here, so the back ends see bools
only.  ``xor_sum`` takes integers.

``argmax(t, axis=k)`` is the index (i32) of the first largest present lane along the
axis: the first NaN where there is one (as ``numpy.argmax``), -1 where no lane is
present.  It is made of what the other reductions already are, so every back end runs
it unchanged: the largest value (``max``, which propagates NaN), broadcast back; the
lanes that hold it (or NaN where the largest is NaN); their indices, the axis's extent
where a lane does not hold it or is absent; the smallest of those (``min``), and -1 for
the extent.  Two reductions, where a reduction of (value, index) pairs would be one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phobos.compile.check.arguments import check_args, tile_operand
from phobos.compile.check.broadcast import to_shape
from phobos.compile.check.messages import describe
from phobos.compile.check.scope import Scope
from phobos.compile.check.types import Value, is_numeric
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.ir import reduction_ops
from phobos.compile.syntax import ast

if TYPE_CHECKING:
    from phobos.compile.check.lowering import Expressions


def _operand(lw: Expressions, call: ast.Call, scope: Scope) -> tuple[ir.Expr, int]:
    """The tile a reduction reduces and its axis (``axis=`` may be left out in 1-D)."""
    check_args(call, 1, 1, keywords=("axis",))
    tile = tile_operand(lw, call.args[0], scope, f"{call.func}()")
    assert isinstance(tile.type, ir.TileT)
    rank = len(tile.type.shape)
    axis_kw = next((k for k in call.keywords if k.name == "axis"), None)
    if axis_kw is None:
        if rank != 1:
            raise error(
                call.span,
                f"{call.func}() of a rank-{rank} tile needs an axis",
                help=f"write `{lw.ctx.spelling.call(call.func, describe(call.args[0]), 'axis=0')}`",
            )
        axis = 0
    else:
        axis = lw.compile_time_int(axis_kw.value, scope, "the axis")
        if not -rank <= axis < rank:
            raise error(
                axis_kw.span,
                f"axis {axis} is out of range for a rank-{rank} tile",
                help=f"use an axis from 0 to {rank - 1}",
            )
        axis %= rank
    return tile, axis


def _reduction(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    if len(call.args) == 2 and call.func in ("max", "min") and not call.keywords:
        elementwise = "maximum" if call.func == "max" else "minimum"
        raise error(
            call.span,
            f"{lw.ctx.spelling.call(call.func, 't', 'axis=k')} reduces one tile; "
            "it does not take two values",
            help=f"for the elementwise {call.func}imum write "
            f"`{lw.ctx.spelling.call(elementwise, 'a', 'b')}`",
        )
    tile, axis = _operand(lw, call, scope)
    op = reduction_ops.REDUCTIONS[call.func]
    dtype = tile.type.dtype
    kind = reduction_ops.kind(dtype)
    if kind not in op.accepts:
        if not (op.truth and kind in reduction_ops.NUMBERS):
            raise _refused(lw, call, dtype)
        tile = _nonzero(tile, call.span)
    return _reduce(call.func, tile, axis, call.span)


# For a reduction of numbers given bools: the reduction of bools it may have meant.
_OF_BOOLS = {
    "prod": ("all", "the product of bools"),
    "min": ("all", "the smallest of bools"),
    "max": ("any", "the largest of bools"),
}
# The integer type of a float's width, for xor_sum's help.
_SAME_WIDTH = {"f16": "i16", "bf16": "i16", "f32": "i32", "f64": "i64"}


def _refused(lw: Expressions, call: ast.Call, dtype: str) -> Exception:
    """The error for a reduction of a type it does not take, with what to write."""
    sp, func, t = lw.ctx.spelling, call.func, describe(call.args[0])
    rest = [f"{k.name}={describe(k.value)}" for k in call.keywords]
    if func == "xor_sum":
        if dtype == "bool":
            return error(
                call.span,
                "xor_sum() needs integers, got bool",
                help=f"for the parity of the true lanes write "
                f"`{sp.call(func, sp.call('i32', t), *rest)}` (1 where an odd number hold true)",
            )
        wide = _SAME_WIDTH[dtype]
        return error(
            call.span,
            f"xor_sum() needs integers, got {dtype}",
            help=f"xor_sum combines the bits of integers; cast first: "
            f"`{sp.call(func, sp.call(wide, t), *rest)}` (a cast converts the value, not its bits)",
        )
    if func in _OF_BOOLS:
        other, what = _OF_BOOLS[func]
        help = f"{what} is `{sp.call(other, t, *rest)}`"
    else:
        help = f"count the true lanes with `{sp.call(func, sp.call('i32', t), *rest)}`"
    return error(call.span, f"{func}() needs numbers, got {dtype}", help=help)


def _nonzero(tile: ir.Expr, span) -> ir.Expr:
    """``tile != 0``: the truth of each lane of a tile of numbers."""
    t = tile.type
    assert isinstance(t, ir.TileT)
    zero = ir.Const(0.0 if t.dtype in ir.FLOAT_DTYPES else 0, ir.ScalarT(t.dtype), span)
    truth = ir.TileT("bool", t.shape, t.partial)
    return ir.Binary("ne", tile, to_shape(zero, t.shape, span), truth, span)


def _arg_reduction(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    tile, axis = _operand(lw, call, scope)
    t = tile.type
    if not is_numeric(t.dtype):
        raise error(call.span, f"{call.func}() needs numbers, got {t.dtype}")
    assert isinstance(t, ir.TileT)
    span, shape, n = call.span, t.shape, t.shape[axis]
    x = _bound(lw, call.func, tile, span)  # each value computed once, read where needed
    best = _bound(
        lw, "best", _reduce("max" if call.func == "argmax" else "min", x, axis, span), span
    )
    best_all = _back(best, axis, shape, span)
    holds = ir.TileT("bool", shape, t.partial)
    hit: ir.Expr = ir.Binary("eq", x, best_all, holds, span)
    if t.dtype in ir.FLOAT_DTYPES:  # NaN is the largest and the smallest: its first index
        nan = ir.Binary(
            "land",
            ir.Math("isnan", (best_all,), holds, span),
            ir.Math("isnan", (x,), holds, span),
            holds,
            span,
        )
        hit = ir.Binary("lor", hit, nan, holds, span)
    extent = ir.Const(n, ir.ScalarT("i32"), span)
    indices = ir.TileT("i32", shape, t.partial)
    candidate = ir.Select(
        hit, _lane_index(shape, axis, span), to_shape(extent, shape, span), indices, span
    )
    filled = ir.Fill(candidate, extent, ir.TileT("i32", shape), span)
    first = _bound(lw, "first", _reduce("min", filled, axis, span), span)
    none = ir.Const(-1, ir.ScalarT("i32"), span)
    if isinstance(first.type, ir.ScalarT):
        found = ir.Binary("eq", first, extent, ir.ScalarT("bool"), span)
        return ir.Select(found, none, first, first.type, span)
    rest = first.type.shape
    found = ir.Binary("eq", first, to_shape(extent, rest, span), ir.TileT("bool", rest), span)
    return ir.Select(found, to_shape(none, rest, span), first, first.type, span)


def _bound(lw: Expressions, name: str, value: ir.Expr, span) -> ir.Expr:
    """``value`` bound to a new variable (a ``let``), read back."""
    var = lw.ctx.new_variable(name, value.type, False, span)
    lw.ctx.emit(ir.Define(var, value, span))
    return ir.Read(var, value.type, span)


def _reduce(op: str, x: ir.Expr, axis: int, span) -> ir.Expr:
    t = x.type
    assert isinstance(t, ir.TileT)
    shape = t.shape[:axis] + t.shape[axis + 1 :]
    result = ir.TileT(t.dtype, shape, t.partial) if shape else ir.ScalarT(t.dtype)
    return ir.Reduce(op, x, axis, result, span)


def _back(reduced: ir.Expr, axis: int, shape: tuple[int, ...], span) -> ir.Expr:
    """A reduction's result over the lanes it reduced (a free broadcast on every back end)."""
    if isinstance(reduced.type, ir.TileT):
        t = reduced.type
        kept = (*t.shape[:axis], 1, *t.shape[axis:])
        reduced = ir.ExpandDims(reduced, axis, ir.TileT(t.dtype, kept, t.partial), span)
        return ir.Broadcast(reduced, ir.TileT(t.dtype, shape, t.partial), span)
    return to_shape(reduced, shape, span)


def _lane_index(shape: tuple[int, ...], axis: int, span) -> ir.Expr:
    """Each lane's index along ``axis`` (i32), over ``shape``."""
    n = shape[axis]
    index: ir.Expr = ir.Cast(ir.Iota(ir.TileT("index", (n,)), span), ir.TileT("i32", (n,)), span)
    current = (n,)
    for _ in range(axis):
        current = (1, *current)
        index = ir.ExpandDims(index, 0, ir.TileT("i32", current), span)
    while len(current) < len(shape):
        current = (*current, 1)
        index = ir.ExpandDims(index, len(current) - 1, ir.TileT("i32", current), span)
    return ir.Broadcast(index, ir.TileT("i32", shape), span) if current != shape else index


REDUCTIONS = {
    **dict.fromkeys(reduction_ops.REDUCTIONS, _reduction),
    "argmax": _arg_reduction,
    "argmin": _arg_reduction,
}
