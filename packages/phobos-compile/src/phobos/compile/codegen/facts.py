"""Static facts about block-uniform scalar expressions: divisibility and sign.

A window's start decides whether its groups are aligned for vector access and
whether a lower bounds check is needed.  ``saxpy``'s ``ctx.block.x * BLOCK`` is
a multiple of BLOCK and never negative, so its 16-byte accesses need no run-time
alignment test.  Facts are conservative: 1 ("a multiple of 1") and "maybe
negative" are always true.
"""

from __future__ import annotations

import math

from phobos.compile.ir import nodes as ir


class Facts:
    """What is known of each immutable scalar variable, learnt as definitions are emitted."""

    def __init__(self) -> None:
        self._multiple: dict[str, int] = {}
        self._nonnegative: dict[str, bool] = {}

    def define(self, var: ir.Variable, value: ir.Expr | None) -> None:
        """Record a variable's value (``None``: nothing known, e.g. a ``var``)."""
        if value is None or var.mutable:
            self._multiple[var.name] = 1
            self._nonnegative[var.name] = False
            return
        self._multiple[var.name] = self.multiple_of(value)
        self._nonnegative[var.name] = self.nonnegative(value)

    def define_loop(self, var: ir.Variable, start: ir.Expr, step: ir.Expr) -> None:
        """A loop variable is start + k * step with k >= 0 and step > 0."""
        self._multiple[var.name] = math.gcd(self.multiple_of(start), self.multiple_of(step))
        self._nonnegative[var.name] = self.nonnegative(start)

    def multiple_of(self, e: ir.Expr) -> int:
        """A positive number that ``e`` is provably a multiple of."""
        if (
            isinstance(e, ir.Const)
            and not isinstance(e.value, bool)
            and float(e.value).is_integer()
        ):
            return abs(int(e.value)) or 1 << 30
        if isinstance(e, ir.Read):
            return self._multiple.get(e.var.name, 1)
        if isinstance(e, ir.Binary):
            left, right = self.multiple_of(e.left), self.multiple_of(e.right)
            if e.op == "mul":
                return left * right
            if e.op in ("add", "sub"):
                return math.gcd(left, right)
            if e.op == "shl" and isinstance(e.right, ir.Const):
                return left << int(e.right.value)
        if isinstance(e, ir.Unary) and e.op == "neg":
            return self.multiple_of(e.operand)
        if isinstance(e, ir.Cast) and e.type.dtype not in ir.FLOAT_DTYPES:
            return self.multiple_of(e.operand)
        return 1

    def nonnegative(self, e: ir.Expr) -> bool:
        if isinstance(e, ir.Const):
            return e.value >= 0
        if isinstance(e, (ir.CtxValue, ir.Extent)):
            return True
        if isinstance(e, ir.Read):
            return self._nonnegative.get(e.var.name, False)
        if isinstance(e, ir.Binary) and e.op in ("add", "mul", "div", "max", "shr", "and"):
            return self.nonnegative(e.left) and self.nonnegative(e.right)
        if isinstance(e, ir.Cast) and e.type.dtype not in ir.FLOAT_DTYPES:
            return self.nonnegative(e.operand) and e.type.dtype in ("i64", "index")
        return False
