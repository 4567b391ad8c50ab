"""``rand(seed, offsets)``, ``randn(seed, offsets)`` and ``randint(seed, offsets)``.

Counter-based random numbers (Philox 4x32-10; ``interp/philox.py`` defines them): one value
for each lane of ``offsets``, a function of the seed and that lane's offset alone.  The seed
is a scalar integer of any type (``index`` too) and the offsets an integer tile or scalar;
both are read by value (as 64-bit two's-complement integers), so the type they come in never
changes the numbers.  The call lowers to ``Math(fn, (seed, offsets))`` with the seed cast to
``u64`` and splat to the offsets' shape, and offsets narrower than 32 bits cast to ``i32``
(both casts keep the value); a lane of the result is absent where the offset's is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phobos.compile.check.arguments import check_args
from phobos.compile.check.broadcast import is_partial, to_shape
from phobos.compile.check.messages import describe, shown, type_name
from phobos.compile.check.scope import Scope
from phobos.compile.check.types import INT_RANGES, Literal, Value, is_int, make_const
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

if TYPE_CHECKING:
    from phobos.compile.check.lowering import Expressions

# Each function and the dtype of its values.
RANDOM = {"rand": "f32", "randn": "f32", "randint": "u32"}
# The offset types the runtime takes as they are; narrower integers become i32 (by value).
WIDE_OFFSETS = ("i32", "u32", "i64", "u64", "index")


def _literal(lit: Literal, span, lw: Expressions, types: tuple[str, ...]) -> ir.Const:
    """An integer literal as the first of ``types`` that holds it (the last one's error else)."""
    for dtype in types:
        low, high = INT_RANGES[dtype]
        if low <= lit.value <= high:
            return make_const(lit, dtype, lw.ctx.spelling, span)
    return make_const(lit, types[-1], lw.ctx.spelling, span)


def _seed(lw: Expressions, call: ast.Call, scope: Scope) -> ir.Expr:
    sp = lw.ctx.spelling
    expr, offsets = call.args
    got = lw.value(expr, scope)
    if isinstance(got, Literal) and got.is_int:
        got = _literal(got, expr.span, lw, ("u64", "i64"))
    if isinstance(got, Literal) or not is_int(got.type.dtype):
        raise error(
            expr.span,
            f"{call.func}() needs an integer seed, got {type_name(got)}",
            help=f"cast it: `{sp.call(call.func, sp.call('i64', describe(expr)), describe(offsets))}`",
        )
    if isinstance(got.type, ir.TileT):
        raise error(
            expr.span,
            f"{call.func}() takes one seed, a scalar, got {shown(got.type)}",
            help="give every lane the same seed (a scalar parameter such as `seed: i64`) and "
            "tell the lanes apart by their offsets",
        )
    if got.type.dtype == "u64":
        return got
    return ir.Cast(got, ir.ScalarT("u64"), expr.span)


def _offsets(lw: Expressions, call: ast.Call, scope: Scope) -> ir.Expr:
    sp = lw.ctx.spelling
    seed, expr = call.args
    got = lw.value(expr, scope)
    if isinstance(got, Literal) and got.is_int:
        got = _literal(got, expr.span, lw, ("i32", "i64", "u64"))
    if isinstance(got, Literal) or not is_int(got.type.dtype):
        raise error(
            expr.span,
            f"{call.func}() needs integer offsets, got {type_name(got)}",
            help="an offset numbers a random value (one per lane), such as "
            f"`base + {sp.call('arange', 'BLOCK')}`; to use a float's whole part, "
            f"cast it: `{sp.call(call.func, describe(seed), sp.call('i64', describe(expr)))}`",
        )
    if got.type.dtype in WIDE_OFFSETS:
        return got
    type = got.type
    if isinstance(type, ir.TileT):
        return ir.Cast(got, ir.TileT("i32", type.shape, type.partial), expr.span)
    return ir.Cast(got, ir.ScalarT("i32"), expr.span)


def lower_random(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    check_args(call, 2, 2)
    seed = _seed(lw, call, scope)
    offsets = _offsets(lw, call, scope)
    dtype = RANDOM[call.func]
    type = offsets.type
    if isinstance(type, ir.TileT):
        seed = to_shape(seed, type.shape, call.args[0].span)
        result: ir.IRType = ir.TileT(dtype, type.shape, is_partial(offsets))
    else:
        result = ir.ScalarT(dtype)
    return ir.Math(call.func, (seed, offsets), result, call.span)
