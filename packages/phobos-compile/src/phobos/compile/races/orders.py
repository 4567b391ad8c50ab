"""Block orders: maps from one block coordinate to a (row, column) tile pair, proved one-to-one.

A kernel that numbers its blocks along one axis and works out a 2-D tile from
the number does so with ``/`` and ``%``, which have no affine form.  Two such
maps are recognised by their shape, with ``p = k·ctx.block.a + c`` (``k ≠ 0``,
so one ``p`` per block; ``k > 0`` and ``c ≥ 0`` for the grouped order, so
``p ≥ 0``), ``D`` and ``R`` the same in every block and ``G`` a positive
constant; integer ``/`` truncates and ``%`` takes the dividend's sign
(``ir.Binary``):

Row-major, ``(p / D, p % D)`` (either tile axis first):
    ``p = (p / D)·D + p % D``, so the pair gives ``p`` back: one-to-one for
    every block.

Grouped, as in tutorial 03 and Triton's matmul::

    first = p / D * G                 group_rows = min(R - first, G)
    i = p % D                         row = first + i % group_rows   (or p % group_rows)
                                      col = i / group_rows

    In a block whose ``group_rows ≥ 1``: ``0 ≤ i % group_rows < group_rows ≤ G``,
    so ``row / G = p / D`` (rounding down) gives ``first`` and ``group_rows``
    back; ``row - first`` is ``i % group_rows`` (or ``p % group_rows``, which
    fixes ``i % group_rows`` as ``p ≡ first/G·D + i``); with ``col`` that gives
    ``i``, and ``p = p / D · D + i``.  So no two such blocks share a tile.  A
    block with ``group_rows ≤ -1`` has ``first ≥ R + 1`` and ``row ≥ first``: its
    rows lie past the ``R`` tile rows, and the caller must show that they are
    past the tensor's end (``Order.rows``).

A division by zero (``D = 0``, or ``group_rows = 0``) has no defined result: the
proofs assume that no block divides by zero, as they assume that no index
overflows.  In the tutorial only a block past the last tile can, and only when
``blocks_m`` is a multiple of ``GROUP_M``; its grid stops at the last tile.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.ir import nodes as ir
from phobos.compile.races.affine import Bindings, Block, affine, is_invariant
from phobos.compile.races.terms import bare as _bare


@dataclass(frozen=True)
class Order:
    """A one-to-one order of the blocks along ``axis``.

    ``rows``: for a grouped order, the number of tile rows ``R``; blocks whose
    row is past it must touch no element.  None when every block's tile is proved.
    """

    axis: str
    rows: ir.Expr | None = None


def one_to_one(row: ir.Expr, col: ir.Expr) -> Order | None:
    """The order that gives blocks distinct ``(row, col)`` tiles, or None if none is recognised."""
    return _row_major(row, col) or _row_major(col, row) or _grouped(row, col)


def _row_major(high: ir.Expr, low: ir.Expr) -> Order | None:
    high, low = _bare(high), _bare(low)
    if not (_is(high, "div") and _is(low, "mod")):
        return None
    if high.left != low.left or high.right != low.right or not _invariant(high.right):
        return None
    axis = _block_axis(high.left)
    return None if axis is None else Order(axis)


def _grouped(row: ir.Expr, col: ir.Expr) -> Order | None:
    row, col = _bare(row), _bare(col)
    if not (_is(row, "add") and _is(col, "div")):
        return None
    in_group, group_rows = _bare(col.left), col.right
    for first, offset in ((row.left, row.right), (row.right, row.left)):
        offset = _bare(offset)
        if not _is(offset, "mod") or offset.right != group_rows:
            continue
        order = _grouped_parts(_bare(first), _bare(offset.left), in_group, _bare(group_rows))
        if order is not None:
            return order
    return None


def _grouped_parts(
    first: ir.Expr, dividend: ir.Expr, in_group: ir.Expr, group_rows: ir.Expr
) -> Order | None:
    """``first = p / D * G``, ``in_group = p % D``, ``group_rows = min(R - first, G)``,
    and the row's ``%`` divides ``in_group`` or ``p``."""
    if not (_is(in_group, "mod") and _is(first, "mul") and _is(group_rows, "min")):
        return None
    p, divisor = in_group.left, in_group.right
    if dividend not in (in_group, _bare(p)) or not _invariant(divisor):
        return None
    groups, size = _times_constant(first)
    if groups is None or not (_is(groups, "div") and groups.left == p and groups.right == divisor):
        return None
    rows = _rows_left(group_rows, first, size)
    axis = _block_axis(p, nonnegative=True)
    if rows is None or axis is None:
        return None
    return Order(axis, rows)


def _rows_left(group_rows: ir.Expr, first: ir.Expr, size: int) -> ir.Expr | None:
    """``R`` of ``min(R - first, G)`` (either operand first), when it is the same in every block."""
    for left, right in ((group_rows.left, group_rows.right), (group_rows.right, group_rows.left)):
        left, right = _bare(left), _bare(right)
        if not (_constant(right) == size and _is(left, "sub") and _bare(left.right) == first):
            continue
        if _invariant(left.left):
            return left.left
    return None


def _times_constant(expr: ir.Expr) -> tuple[ir.Expr | None, int]:
    """``(x, G)`` of ``x * G`` or ``G * x`` with a positive constant ``G``."""
    for x, k in ((expr.left, expr.right), (expr.right, expr.left)):
        value = _constant(_bare(k))
        if value is not None and value > 0:
            return _bare(x), value
    return None, 0


def _block_axis(expr: ir.Expr, nonnegative: bool = False) -> str | None:
    """``a`` when ``expr`` is ``k·ctx.block.a + c`` (``k ≠ 0``: one value per block);
    with ``nonnegative``, only for ``k > 0`` and ``c ≥ 0``."""
    form = affine(expr, Bindings())
    if form is None or len(form.terms) != 1:
        return None
    ((atom, coefficient),) = form.terms
    if not isinstance(atom, Block):
        return None
    if nonnegative and (coefficient < 0 or form.constant < 0):
        return None
    return atom.axis


def _invariant(expr: ir.Expr) -> bool:
    return is_invariant(expr, Bindings())


def _constant(expr: ir.Expr) -> int | None:
    if isinstance(expr, ir.Const) and isinstance(expr.value, int):
        return None if isinstance(expr.value, bool) else expr.value
    return None


def _is(expr: ir.Expr, op: str) -> bool:
    return isinstance(expr, ir.Binary) and expr.op == op
