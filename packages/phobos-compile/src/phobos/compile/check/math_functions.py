"""The elementwise math functions: how many operands each takes, of which types, giving which.

Every one is elementwise: its operands take one type as an operator's do (a literal
adapts to the other operands; a lone literal is ``f32`` for a float function) and
broadcast to one shape, and a lane of the result is absent where a lane of any operand
is.  ``clamp(t, lo, hi)`` is ``minimum(maximum(t, lo), hi)`` and lowers to those two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from phobos.compile.check.broadcast import is_partial
from phobos.compile.check.messages import counted, describe, shown
from phobos.compile.check.scope import Scope
from phobos.compile.check.types import Literal, Value, is_numeric, make_const
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

if TYPE_CHECKING:
    from phobos.compile.check.lowering import Expressions


@dataclass(frozen=True)
class Operands:
    """The operand types a function accepts, as its error names them (one operand, several),
    and the cast its help suggests."""

    dtypes: tuple[str, ...]
    one: str
    many: str
    cast: str


FLOATS = Operands(ir.FLOAT_DTYPES, "a float operand", "float operands", "f32")
NUMBERS = Operands((*ir.INT_DTYPES, *ir.FLOAT_DTYPES, "index"), "a number", "numbers", "f32")
# Not index: its width (32 or 64 bits) is the launch's, so a count of its bits would be too.
INTEGERS = Operands(ir.INT_DTYPES, "an integer of i8 to u64 (not index)", "integers", "i32")
WIDE_UNSIGNED = Operands(("u32", "u64"), "a u32 or u64 operand", "u32 or u64 operands", "u32")


@dataclass(frozen=True)
class Signature:
    arity: int
    operands: Operands
    result: str | None = None  # None: the operands' type
    help: str | None = None  # for an operand of the wrong type, instead of a cast


FLOAT_FUNCTIONS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "expm1", "log1p")
FLOAT_FUNCTIONS += ("tanh", "sigmoid", "erf", "sin", "cos")
_WHOLE = "an integer is already whole: drop the call"
_NEVER = "an integer is never NaN or infinite"

SIGNATURES: dict[str, Signature] = {
    **dict.fromkeys(FLOAT_FUNCTIONS, Signature(1, FLOATS)),
    **dict.fromkeys(("floor", "ceil", "round", "trunc"), Signature(1, FLOATS, help=_WHOLE)),
    **dict.fromkeys(("isnan", "isinf", "isfinite"), Signature(1, FLOATS, "bool", _NEVER)),
    "abs": Signature(1, NUMBERS),
    "sign": Signature(1, NUMBERS),
    "popcount": Signature(1, INTEGERS, "i32"),
    "pow": Signature(2, FLOATS),
    "fma": Signature(3, FLOATS),
    "umulhi": Signature(2, WIDE_UNSIGNED),
}


def _arity(call: ast.Call, count: int) -> None:
    if len(call.args) != count:
        raise error(
            call.span, f"{call.func}() takes {counted(count, 'argument')}, got {len(call.args)}"
        )
    if call.keywords:
        raise error(
            call.keywords[0].span, f"{call.func}() has no keyword '{call.keywords[0].name}'"
        )


def _operands(lw: Expressions, call: ast.Call, scope: Scope, floats: bool) -> list[ir.Expr]:
    """The arguments, of one type and shape; literals alone are ``f32`` for a float function."""
    values: list[Value] = [lw.value(a, scope) for a in call.args]
    if floats and all(isinstance(v, Literal) for v in values):
        first = values[0]
        assert isinstance(first, Literal)
        values[0] = make_const(first, "f32", lw.ctx.spelling)
    return lw.elementwise(list(call.args), values, call.span)


def lower_math(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    signature = SIGNATURES[call.func]
    _arity(call, signature.arity)
    operands = _operands(lw, call, scope, signature.operands is FLOATS)
    dtype = operands[0].type.dtype
    if dtype not in signature.operands.dtypes:
        sp = lw.ctx.spelling
        one = signature.arity == 1
        wanted = signature.operands.one if one else signature.operands.many
        casts = (sp.call(signature.operands.cast, describe(a)) for a in call.args)
        help = f"cast {'it' if one else 'them'}: `{sp.call(call.func, *casts)}`"
        if signature.help and is_numeric(dtype):
            help = signature.help
        raise error(
            call.span, f"{call.func}() needs {wanted}, got {shown(operands[0].type)}", help=help
        )
    return ir.Math(call.func, tuple(operands), _result_type(operands, signature.result), call.span)


def lower_clamp(lw: Expressions, call: ast.Call, scope: Scope) -> Value:
    """``minimum(maximum(t, lo), hi)``: NaN where any of the three is NaN; ``hi`` when lo > hi."""
    _arity(call, 3)
    t, lo, hi = _operands(lw, call, scope, floats=False)
    if not is_numeric(t.type.dtype):
        raise error(call.span, f"clamp() needs numbers, got {t.type.dtype}")
    low = ir.Binary("max", t, lo, _result_type([t, lo], None), call.span)
    return ir.Binary("min", low, hi, _result_type([low, hi], None), call.span)


def _result_type(operands: list[ir.Expr], dtype: str | None) -> ir.IRType:
    first = operands[0].type
    dtype = dtype or first.dtype
    if isinstance(first, ir.TileT):
        return ir.TileT(dtype, first.shape, any(is_partial(o) for o in operands))
    return ir.ScalarT(dtype)
