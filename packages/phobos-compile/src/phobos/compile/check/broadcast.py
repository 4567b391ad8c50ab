"""Broadcasting made explicit: numpy's rules, spelled as Splat, ExpandDims and Broadcast.

Shapes align on their last axis; two extents agree when equal or when one is 1.
A block-uniform scalar becomes a tile with ``Splat``; a tile of lower rank gains
leading axes with ``ExpandDims``; extent-1 axes grow with ``Broadcast``.
"""

from __future__ import annotations

from phobos.compile.check.spelling import Spelling
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span


def shape_of(value: ir.Expr) -> tuple[int, ...] | None:
    """The tile shape of ``value``, or None for a scalar."""
    return value.type.shape if isinstance(value.type, ir.TileT) else None


def is_partial(value: ir.Expr) -> bool:
    return isinstance(value.type, ir.TileT) and value.type.partial


def broadcast_shapes(
    shapes: list[tuple[int, ...]], span: Span, spelling: Spelling
) -> tuple[int, ...]:
    """The shape all ``shapes`` broadcast to, or an error naming the two that clash."""
    rank = max(len(s) for s in shapes)
    result: list[int] = []
    for axis in range(rank):
        extents = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0}
        extents.discard(1)
        if len(extents) > 1:
            pretty = " and ".join(_fmt(s) for s in shapes)
            raise error(
                span,
                f"tile shapes {pretty} do not broadcast (axis {axis}: {sorted(extents)})",
                help=f"extents must be equal or 1; reshape with `t[:, {spelling.newaxis}]` or "
                f"transpose with `{spelling.call('trans', 't')}`",
            )
        result.append(extents.pop() if extents else 1)
    return tuple(result)


def to_shape(value: ir.Expr, shape: tuple[int, ...], span: Span) -> ir.Expr:
    """``value`` broadcast to ``shape`` (which ``broadcast_shapes`` has agreed to)."""
    dtype = value.type.dtype
    if not isinstance(value.type, ir.TileT):
        return ir.Splat(value, ir.TileT(dtype, shape), span)
    partial = value.type.partial
    current = value.type.shape
    while len(current) < len(shape):
        current = (1, *current)
        value = ir.ExpandDims(value, 0, ir.TileT(dtype, current, partial), span)
    if current != shape:
        for have, want in zip(current, shape):
            if have not in (1, want):
                raise error(
                    span,
                    f"a tile of shape {_fmt(current)} does not broadcast to {_fmt(shape)}",
                    help="extents must be equal or 1",
                )
        value = ir.Broadcast(value, ir.TileT(dtype, shape, partial), span)
    return value


def _fmt(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"
