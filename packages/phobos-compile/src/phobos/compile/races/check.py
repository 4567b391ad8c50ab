"""The static race check: prove that blocks' store footprints are disjoint, or warn.

Two blocks of one launch differ in at least one coordinate.  For every block
axis ``a`` the kernel uses, a store and another access of the same tensor are
kept apart along ``a`` when some tensor axis indexes both as
``c·block.a + offset``, with one ``c`` and the same invariant part, and the
offsets of both (over every loop iteration, plus the window length) fit in ``c``
consecutive elements: then a block's elements lie in its own stride of ``c``.
Coordinates pinned by ``if ctx.block.a == k`` take that value.  A block
coordinate the kernel never reads is taken to be 0 (a launch along it would
repeat the same work).  Where a start has no affine form, tiles that the block
number gives through ``/`` and ``%`` are kept apart by ``races.tiles`` when the
order is one-to-one (``races.orders``: row-major, or grouped as in tutorial 03).
Atomic updates may meet each other; a plain store may not meet an atomic
update, nor a load by another block.
"""

from __future__ import annotations

from phobos.compile.diagnostics import Diagnostic, Note
from phobos.compile.ir import nodes as ir
from phobos.compile.races.affine import Affine, Block, GridStride
from phobos.compile.races.footprint import (
    ATOMIC,
    LOAD,
    STORE,
    Access,
    Axis,
    accesses,
    block_axes_used,
)
from phobos.compile.races.tiles import tiles_apart

HELP = (
    "Phobos proves stores disjoint when a tensor axis is indexed `ctx.block.x * S + offset` "
    "and one block's offsets (loops with compile-time trip counts included) span at most S "
    "elements, or when two axes are indexed `row * S + offset` and `col * S2 + offset` with "
    "(row, col) from ctx.block.x in row-major or grouped order (docs/errors.md); check a "
    "launch on real arguments with `race_check=True`"
)


def check_races(kernel: ir.Kernel) -> list[Diagnostic]:
    """A warning for each store that may race with another block's access of its tensor."""
    found = accesses(kernel)
    axes = block_axes_used(kernel) or frozenset({"x"})
    stores = [a for a in found if a.kind == STORE]
    report: list[Diagnostic] = []
    for position, store in enumerate(stores):
        others = stores[position:] + [a for a in found if a.kind in (ATOMIC, LOAD)]
        for other in others:
            if other.tensor != store.tensor:
                continue
            problem = _race(store, other, axes)
            if problem is not None:
                report.append(problem)
                break
    return report


def _race(store: Access, other: Access, axes: frozenset[str]) -> Diagnostic | None:
    """None when no two blocks can meet at an element; else the warning."""
    mine, theirs = dict(store.pins), dict(other.pins)
    apart = [a for a in sorted(axes) if not (a in mine and mine.get(a) == theirs.get(a))]
    if not apart:
        return None
    if all(_separates(store, other, axis) for axis in apart):
        return None
    if other is store:
        definite = _same_everywhere(store) or _neighbours_overlap(store, apart)
        if definite is not None:
            return definite
    return _unproven(store, other)


def _separates(store: Access, other: Access, axis: str) -> bool:
    """True when some tensor axis keeps apart blocks that differ along ``axis``."""
    pins = dict(store.pins).get(axis), dict(other.pins).get(axis)
    return any(
        _axis_separates(_pin(s, store), _pin(o, other), axis, pins)
        for s, o in zip(store.axes, other.axes)
    ) or tiles_apart(store, other, axis)


def _pin(axis: Axis, access: Access) -> tuple[Affine | None, int]:
    start = axis.start
    if start is not None:
        for coordinate, value in access.pins:
            start = start.substitute(Block(coordinate), value)
    return start, axis.length


def _axis_separates(
    mine: tuple[Affine | None, int],
    theirs: tuple[Affine | None, int],
    axis: str,
    pins: tuple[int | None, int | None],
) -> bool:
    """True when blocks that differ along ``axis`` meet at no index of this tensor axis."""
    (a, length_a), (b, length_b) = mine, theirs
    if a is None or b is None:
        return False
    if pins[0] is not None and pins[1] is not None:
        return a.blocks() == b.blocks() == {} and _apart(a, length_a, b, length_b)
    stride = (a.blocks() or b.blocks()).get(axis, 0)
    a, b = _unpin(a, pins[0], axis, stride), _unpin(b, pins[1], axis, stride)
    a, b = _without_grid_strides(a, axis, stride), _without_grid_strides(b, axis, stride)
    if stride == 0 or a.blocks() != {axis: stride} or b.blocks() != {axis: stride}:
        return False
    if a.invariants() != b.invariants():
        return False
    extents = [_offsets(a, length_a), _offsets(b, length_b)]
    if None in extents:
        return False
    low = min(e[0] for e in extents)
    high = max(e[1] for e in extents)
    return high - low + 1 <= abs(stride)


def _without_grid_strides(start: Affine, axis: str, stride: int) -> Affine:
    """``start`` less its ``stride·grid.axis·iteration`` terms.

    Block ``a`` of a grid-stride loop starts at ``stride·(a + grid·j)``: as
    ``0 ≤ a < grid``, two blocks' starts differ by a nonzero multiple of
    ``stride`` whatever their iterations, so only the offsets within one stride
    matter.  Grid strides of another axis or stride stay, and defeat the proof.
    """
    kept = {
        atom: c
        for atom, c in start.terms
        if not (isinstance(atom, GridStride) and atom.axis == axis and c == stride)
    }
    return Affine.of(start.constant, kept)


def _unpin(start: Affine, pinned: int | None, axis: str, stride: int) -> Affine:
    """A start pinned at ``block.axis == k`` written as ``stride·block.axis + (start - stride·k)``."""
    if pinned is None or start.blocks():
        return start
    return start.plus(Affine.of(-stride * pinned, {Block(axis): stride}))


def _apart(a: Affine, length_a: int, b: Affine, length_b: int) -> bool:
    """Two block-free index ranges that do not meet."""
    if a.invariants() != b.invariants():
        return False
    ranges = _offsets(a, length_a), _offsets(b, length_b)
    if None in ranges:
        return False
    (low_a, high_a), (low_b, high_b) = ranges
    return high_a < low_b or high_b < low_a


def _offsets(start: Affine, length: int) -> tuple[int, int] | None:
    """The least and greatest element, apart from the block and invariant terms."""
    iterations = start.iteration_range()
    if iterations is None:
        return None
    return start.constant + iterations[0], start.constant + iterations[1] + length - 1


def _same_everywhere(store: Access) -> Diagnostic | None:
    starts = [_pin(axis, store)[0] for axis in store.axes]
    if any(s is None or s.blocks() for s in starts):
        return None
    return Diagnostic(
        "warning",
        f"every block that runs this store writes the same elements of '{store.tensor}' "
        "(its index does not depend on ctx.block): a data race when the launch has more "
        "than one block",
        store.span,
        "index the window with ctx.block so that each block writes elements of its own, "
        "or guard the store with `if ctx.block.x == 0`",
    )


def _neighbours_overlap(store: Access, apart: list[str]) -> Diagnostic | None:
    """Blocks next to each other along one axis whose contiguous windows overlap."""
    starts = [_pin(axis, store)[0] for axis in store.axes]
    if any(s is None or s.iteration_range() != (0, 0) for s in starts):
        return None
    used = {a for s in starts for a in s.blocks()}
    if len(used) != 1 or len(apart) != 1 or used != set(apart):
        return None
    (axis,) = used
    moving = [(s, ax.length) for s, ax in zip(starts, store.axes) if s.blocks()]
    if any(abs(s.blocks()[axis]) >= length for s, length in moving):
        return None
    start, length = moving[0]
    return Diagnostic(
        "warning",
        f"blocks next to each other along {axis} write overlapping elements of "
        f"'{store.tensor}': the window starts {abs(start.blocks()[axis])} elements further "
        f"in each block but is {length} long",
        store.span,
        f"make the window's start advance by its length: `ctx.block.{axis} * {length}`",
    )


def _unproven(store: Access, other: Access) -> Diagnostic:
    if other is store:
        message = f"cannot prove that blocks write disjoint elements of '{store.tensor}'"
        return Diagnostic("warning", message, store.span, HELP)
    verb, note = {
        STORE: ("written", "another block may write them here"),
        ATOMIC: ("updated", "another block may update them atomically here"),
        LOAD: ("read", "another block may read them here"),
    }[other.kind]
    message = (
        f"cannot prove that the elements of '{store.tensor}' this store writes are not "
        f"{verb} by another block"
    )
    return Diagnostic("warning", message, store.span, HELP, (Note(other.span, note),))
