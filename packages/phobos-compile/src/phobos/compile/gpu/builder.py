"""Building GPU IR: ops appended to the current block, pure ops shared and hoisted.

Lowering and the passes create ops through a ``Builder``.  A pure op (no side
effect, no region) with the same class, attributes and operands as one already
built in an enclosing block is not built again: its value is reused.  That makes
``start`` the same value wherever the program computes ``ctx.block.x * BLOCK``,
which is what lets lowering see that a store's window bounds are the ones its
value's presence already carries.

A builder that builds a whole kernel (``hoist``, lowering's) puts a pure uniform op
in the outermost block its operands allow (the kernel's own for ``N``'s extent or a
parameter, before the loop for ``head * stride``): a value fixed before a loop is
never made inside it, so lowering sees that a window's bounds do not move with the
loop, and no iteration computes it again.  A pass's builder, which starts inside a
kernel, appends where it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from phobos.compile.gpu import ir
from phobos.compile.span import NO_SPAN, Span

_PURE = (
    ir.Constant,
    ir.Param,
    ir.Extent,
    ir.Stride,
    ir.BlockIndex,
    *ir.ELEMENTWISE,
    ir.Splat,
    ir.Coord,
    ir.ExpandDims,
    ir.Broadcast,
    ir.Transpose,
    ir.Squeeze,
    ir.ToUniform,
    ir.Reduce,
)


def _key(op: ir.Op, types: tuple[ir.Type, ...]) -> tuple[object, ...] | None:
    if not isinstance(op, _PURE):
        return None
    attrs = tuple(sorted((k, repr(v)) for k, v in op.attributes().items()))
    return (type(op), attrs, tuple(v.id for v in op.operands), types)


class Builder:
    """Appends ops to a stack of blocks; ``span`` is given to every op built."""

    def __init__(self, block: ir.Block, *, hoist: bool = False) -> None:
        self._hoist = hoist
        self._blocks = [block]
        self._shared: list[dict[tuple[object, ...], ir.Value]] = [{}]
        self._depth: dict[ir.Value, int] = {}  # the block (in the stack) a value is made in
        self.span: Span = NO_SPAN

    @property
    def block(self) -> ir.Block:
        return self._blocks[-1]

    def add(self, op: ir.Op, *result_types: ir.Type, name: str = "") -> ir.Op:
        """Append ``op`` with fresh results of ``result_types`` (or reuse an equal pure op)."""
        key = _key(op, result_types)
        if key is not None:
            for table in reversed(self._shared):
                if key in table:
                    existing = table[key]
                    op.results = [existing]
                    return op
        op.results = [ir.Value(t, name) for t in result_types]
        if op.span is NO_SPAN:
            op.span = self.span
        depth = len(self._blocks) - 1
        if self._hoist and key is not None and all(isinstance(t, ir.Uniform) for t in result_types):
            depth = max((self._depth.get(v, 0) for v in op.operands), default=0)
        self._blocks[depth].ops.append(op)
        for v in op.results:
            self._depth[v] = depth
        if key is not None:
            self._shared[depth][key] = op.results[0]
        return op

    def value(self, op: ir.Op, result_type: ir.Type, name: str = "") -> ir.Value:
        return self.add(op, result_type, name=name).result

    @contextmanager
    def inside(self, block: ir.Block) -> Iterator[ir.Block]:
        """Build into ``block`` (a region); values shared from outside stay visible."""
        self._blocks.append(block)
        self._shared.append({})
        for v in block.args:
            self._depth[v] = len(self._blocks) - 1
        try:
            yield block
        finally:
            self._blocks.pop()
            self._shared.pop()

    # -------------------------------------------------------------- shorthands

    def constant(self, value: int | float | bool, dtype: str) -> ir.Value:
        return self.value(ir.Constant(value=value), ir.Uniform(dtype))

    def binary(
        self, op: str, left: ir.Value, right: ir.Value, dtype: str | None = None
    ) -> ir.Value:
        """``left op right``; the result takes the operands' type, or ``dtype`` (a comparison)."""
        result = _like(left.type, dtype or left.dtype)
        return self.value(ir.Binary(op=op, operands=[left, right]), result)

    def unary(self, op: str, operand: ir.Value) -> ir.Value:
        return self.value(ir.Unary(op=op, operands=[operand]), operand.type)

    def cast(self, operand: ir.Value, dtype: str) -> ir.Value:
        if operand.dtype == dtype:
            return operand
        return self.value(ir.Cast(operands=[operand]), _like(operand.type, dtype))

    def select(self, cond: ir.Value, if_true: ir.Value, if_false: ir.Value) -> ir.Value:
        return self.value(ir.Select(operands=[cond, if_true, if_false]), if_true.type)

    def splat(self, value: ir.Value, shape: tuple[int, ...]) -> ir.Value:
        return self.value(ir.Splat(operands=[value]), ir.Tile(value.dtype, shape))

    def coord(self, shape: tuple[int, ...], axis: int, dtype: str = "i32") -> ir.Value:
        return self.value(ir.Coord(axis=axis), ir.Tile(dtype, shape))

    def land(self, left: ir.Value | None, right: ir.Value | None) -> ir.Value | None:
        """``left && right`` where None means true."""
        if left is None:
            return right
        if right is None or right is left:
            return left
        return self.binary("land", left, right, "bool")


def _like(t: ir.Type, dtype: str) -> ir.Type:
    if isinstance(t, ir.Tile):
        return ir.Tile(dtype, t.shape, t.layout)
    return ir.Uniform(dtype)
