"""Atomics: ``atomic_add``, ``atomic_max``, ``atomic_xchg`` and ``atomic_cas``.

An atomic updates tensor elements so that several blocks may update one element
without a race.  ``atomic_add`` and ``atomic_max`` update a window (lane by lane)
or one element and give no value.  ``atomic_xchg`` and ``atomic_cas`` swap one
element and give its old value, which is what a lock needs; since expressions
have no effects, the old value is only taken as the whole value of a ``let``, a
``var`` or an assignment (``let old = atomic_cas(lock[0], 0, 1)``), and either
may also stand as a statement that drops it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phobos.compile.check.messages import describe, shown
from phobos.compile.check.spelling import Spelling
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

if TYPE_CHECKING:
    from phobos.compile.check.lowering import Statements
    from phobos.compile.check.scope import Scope


@dataclass(frozen=True)
class AtomicOp:
    """What one atomic takes: its operands after the access, its types, windows or not."""

    operands: tuple[str, ...]
    dtypes: tuple[str, ...]
    windows: bool
    verb: str
    does: str

    def access(self, spelling: Spelling) -> str:
        """What it updates: a window (``t[a :+ L]``) or one element (``t[i]``)."""
        return spelling.windows("t") if self.windows else "t[i]"

    def signature(self, name: str, spelling: Spelling) -> str:
        return spelling.call(name, self.access(spelling), *self.operands)


ATOMICS: dict[str, AtomicOp] = {
    "atomic_add": AtomicOp(
        ("v",),
        ("i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"),
        True,
        "add into",
        "adds into",
    ),
    "atomic_max": AtomicOp(
        ("v",), ("i32", "u32", "i64", "u64", "f32", "f64"), True, "update", "updates"
    ),
    "atomic_xchg": AtomicOp(
        ("v",), ("i32", "u32", "i64", "u64", "f32", "f64"), False, "swap", "swaps"
    ),
    "atomic_cas": AtomicOp(("compare", "v"), ("i32", "u32", "i64", "u64"), False, "swap", "swaps"),
}

# A new variable for the old value, given its type; None drops the old value.
ResultVariable = Callable[[ir.ScalarT], ir.Variable]


def is_atomic_call(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Call) and expr.func in ATOMICS


def gives_value(name: str) -> bool:
    """Whether the atomic ``name`` gives the old value (it works on one element)."""
    return not ATOMICS[name].windows


def lower_atomic(
    lw: Statements, call: ast.Call, scope: Scope, result: ResultVariable | None
) -> ir.Variable | None:
    """Emit the atomic ``call``; with ``result``, also define a variable holding the old value."""
    op = ATOMICS[call.func]
    spelling = lw.ctx.spelling
    if len(call.args) != 1 + len(op.operands) or call.keywords:
        raise error(
            call.span,
            f"{call.func} takes a tensor access and {_count(op.operands)}",
            help=f"write `{op.signature(call.func, spelling)}`",
        )
    target, *operands = call.args
    if not isinstance(target, ast.Subscript):
        written = (describe(e) for e in operands)
        raise error(
            target.span,
            f"{call.func} {op.does} a tensor access",
            help=f"index the tensor: `{spelling.call(call.func, op.access(spelling), *written)}`",
        )
    tensor, indices, value = lw.window_update(target, operands[-1], call.span, scope)
    if tensor.dtype not in op.dtypes:
        raise error(
            target.span,
            f"{call.func} cannot {op.verb} {tensor.dtype}",
            help=f"it works on {', '.join(op.dtypes)} tensors",
        )
    if not op.windows and not all(isinstance(i, ir.PointIndex) for i in indices):
        raise error(
            target.span,
            f"{call.func} works on one element, not a window",
            help=f"index one element: `{describe(target.base)}[i]` (a point on every axis)",
        )
    variable = result(ir.ScalarT(tensor.dtype)) if result is not None else None
    if call.func == "atomic_add":
        lw.ctx.emit(ir.AtomicAdd(tensor, indices, value, call.span))
    elif call.func == "atomic_max":
        lw.ctx.emit(ir.AtomicMax(tensor, indices, value, call.span))
    elif call.func == "atomic_xchg":
        lw.ctx.emit(ir.AtomicXchg(tensor, indices, value, call.span, variable))
    else:
        compare = lw.element_value(tensor, operands[0], scope)
        if isinstance(compare.type, ir.TileT):
            raise error(
                operands[0].span,
                f"atomic_cas compares with a scalar, not a {shown(compare.type)}",
                help="reduce the tile first, or compare one element at a time",
            )
        lw.ctx.emit(ir.AtomicCas(tensor, indices, compare, value, call.span, variable))
    return variable


def value_error(call: ast.Call, spelling: Spelling) -> Exception:
    """The error for an atomic used inside an expression."""
    if not gives_value(call.func):
        return error(
            call.span,
            f"{call.func} is a statement and gives no value",
            help=f"write it on its own line: `{ATOMICS[call.func].signature(call.func, spelling)}`",
        )
    return error(
        call.span,
        f"{call.func} gives the old value only as the whole value of `let`, `var` or `=`",
        help=f"write `{spelling.let('old', describe(call))}` on its own line, then use `old`",
    )


def _count(operands: tuple[str, ...]) -> str:
    return "a value" if len(operands) == 1 else f"{len(operands)} values ({', '.join(operands)})"
