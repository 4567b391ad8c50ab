"""Tiles numbered through ``/`` and ``%``: two accesses kept apart by a one-to-one block order.

Where a start has no affine form, ``c[m :+ BM, n :+ BN]`` with
``m = row * BM + offset`` and ``n = col * BN + offset`` still keeps blocks apart
when ``(row, col)`` is a one-to-one function of the block (``races.orders``):
blocks with different tiles differ in ``row`` or ``col``, and on that tensor
axis each block's elements lie within its own stride, as in ``races.check``.
Both accesses must have the same tiles (the same written-out expressions),
strides and offsets that fit in a stride.

A grouped order also has blocks past its last tile row (``group_rows ≤ -1``).
Their rows start at ``(R + 1)·BM`` or later; with ``R = (E + c) / d`` for the
tensor axis's extent ``E``, ``c ≥ -1`` and ``0 < d ≤ BM`` (so ``R ≥ ⌈E / BM⌉ - 1``,
as ``blocks_m = (M + BM - 1) / BM`` is), that is at or past ``E``: every lane
of such a block is absent, and it touches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

from phobos.compile.ir import nodes as ir
from phobos.compile.races.affine import Affine, Bindings, Invariant, affine
from phobos.compile.races.footprint import Access, Axis
from phobos.compile.races.orders import Order, one_to_one
from phobos.compile.races.terms import bare


@dataclass(frozen=True)
class Tiled:
    """A start written ``tile·stride + offset``: ``tile`` depends on the block, ``offset`` not."""

    tile: ir.Expr
    stride: int
    offset: Affine


def tiles_apart(mine: Access, theirs: Access, axis: str) -> bool:
    """True when two tensor axes of both accesses hold tiles that a one-to-one order of the
    blocks along ``axis`` gives, so blocks that differ along ``axis`` meet at no element."""
    if axis in dict(mine.pins) or axis in dict(theirs.pins):
        return False
    for row, col in permutations(range(len(mine.axes)), 2):
        rows = _same_tiles(mine.axes[row], theirs.axes[row])
        cols = _same_tiles(mine.axes[col], theirs.axes[col])
        if rows is None or cols is None:
            continue
        order = one_to_one(rows[0].tile, cols[0].tile)
        if order is not None and order.axis == axis and _past_rows_absent(order, rows, mine, row):
            return True
    return False


def _same_tiles(mine: Axis, theirs: Axis) -> tuple[Tiled, Tiled] | None:
    """Both axes' tiles, when they are one tile with one stride and the offsets fit in it."""
    a, b = tiled(mine.term), tiled(theirs.term)
    if a is None or b is None or a.tile != b.tile or a.stride != b.stride:
        return None
    if a.offset.invariants() != b.offset.invariants():
        return None
    low = min(a.offset.constant, b.offset.constant)
    high = max(a.offset.constant + mine.length, b.offset.constant + theirs.length) - 1
    return (a, b) if high - low + 1 <= a.stride else None


def _past_rows_absent(order: Order, rows: tuple[Tiled, Tiled], access: Access, axis: int) -> bool:
    """For a grouped order, whether rows past its ``R`` tile rows lie past the tensor's end."""
    if order.rows is None:
        return True
    if any(t.offset.terms or t.offset.constant < 0 for t in rows):
        return False
    extent = access.dims[axis]
    return isinstance(extent, str) and _covers(order.rows, extent, rows[0].stride)


def _covers(count: ir.Expr, extent: str, stride: int) -> bool:
    """True when ``(count + 1)·stride ≥ extent``: ``count`` is ``(extent + c) / d`` with
    ``c ≥ -1`` and ``0 < d ≤ stride``, or the extent itself."""
    divisor = 1
    if isinstance(count, ir.Binary) and count.op == "div":
        right = affine(count.right, Bindings())
        if right is None or not right.is_constant:
            return False
        count, divisor = count.left, right.constant
    form = affine(count, Bindings())
    if form is None or not 0 < divisor <= stride or form.constant < -1:
        return False
    target = Affine.of(0, {Invariant(ir.Extent(extent, ir.ScalarT("index"))): 1})
    return form.terms == target.terms


def tiled(term: ir.Expr) -> Tiled | None:
    """``term`` as ``tile·stride + offset`` with a positive constant stride, or None."""
    term = bare(term)
    if not isinstance(term, ir.Binary):
        return None
    if term.op == "mul":
        for tile, factor in ((term.left, term.right), (term.right, term.left)):
            stride = affine(factor, Bindings())
            if stride is not None and stride.is_constant and stride.constant > 0:
                return Tiled(tile, stride.constant, Affine())
        return None
    if term.op not in ("add", "sub"):
        return None
    sign = 1 if term.op == "add" else -1
    pairs = [(term.left, term.right, sign)] + ([(term.right, term.left, 1)] if sign == 1 else [])
    for inner, rest, rest_sign in pairs:
        found, offset = tiled(inner), affine(rest, Bindings())
        if found is None or offset is None or offset.blocks():
            continue
        if any(not isinstance(atom, Invariant) for atom, _ in offset.terms):
            continue
        return Tiled(found.tile, found.stride, found.offset.plus(offset, rest_sign))
    return None
