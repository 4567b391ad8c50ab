"""The size limits of one variant (docs/language.md, "Limits"), checked as it is lowered.

A window, a tile extent or any tile value larger than ``MAX_TILE_ELEMENTS`` lanes
is an error at its expression (``check_tile``); after lowering, the lanes of all
the variant's tile values together may not pass ``MAX_VARIANT_TILE_ELEMENTS``,
and the IR may not nest deeper than ``MAX_NESTING`` (``check_variant``).  Each
error names its limit (``Diagnostic.limit``), so the tuner prunes such a variant
with the reason instead of compiling it.
"""

from __future__ import annotations

import math

from phobos.compile.diagnostics import Note, PhobosError, error
from phobos.compile.ir import nodes as ir
from phobos.compile.ir.nesting import nesting_error_of, walk
from phobos.compile.limits import (
    MAX_TILE_ELEMENTS,
    MAX_VARIANT_TILE_ELEMENTS,
    TILE_ELEMENTS,
    VARIANT_TILE_ELEMENTS,
)
from phobos.compile.span import Span

SMALLER = "use a smaller tile (a shorter window, a smaller @autotune value) and loop over the rest"


def too_many_lanes(span: Span, what: str, count: int) -> PhobosError:
    return error(
        span,
        f"{what} has {count} lanes; the limit is {MAX_TILE_ELEMENTS} per tile",
        help=SMALLER,
        limit=TILE_ELEMENTS,
    )


def check_extent(span: Span, what: str, extent: int) -> None:
    """A window length or tile extent: at most ``MAX_TILE_ELEMENTS``."""
    if extent > MAX_TILE_ELEMENTS:
        raise error(
            span,
            f"{what} must be at most {MAX_TILE_ELEMENTS}, got {extent}",
            help=SMALLER,
            limit=TILE_ELEMENTS,
        )


def check_tile(shape: tuple[int, ...], span: Span, what: str = "this tile") -> None:
    """A tile's lanes: at most ``MAX_TILE_ELEMENTS``."""
    count = math.prod(shape)
    if count > MAX_TILE_ELEMENTS:
        shown = "[" + ", ".join(map(str, shape)) + "]"
        raise too_many_lanes(span, f"{what} ({shown})", count)


def check_variant(kernel: ir.Kernel) -> None:
    """The lowered variant's nesting, and the lanes of all its tile values together."""
    nested = nesting_error_of(kernel)
    if nested is not None:
        raise nested
    total = 0
    largest: tuple[int, Span] | None = None
    for node, _ in walk(kernel.body):
        type_ = getattr(node, "type", None)
        if isinstance(type_, ir.TileT) and not isinstance(node, ir.Read):
            lanes = math.prod(type_.shape)
            total += lanes
            if largest is None or lanes > largest[0]:
                largest = (lanes, node.span)  # type: ignore[attr-defined]
    if total > MAX_VARIANT_TILE_ELEMENTS and largest is not None:
        values = ", ".join(f"{n}={v}" for n, v in kernel.values)
        raise error(
            kernel.span,
            f"this variant of '{kernel.name}'{f' ({values})' if values else ''} computes "
            f"tiles of {total} lanes in all; the limit is {MAX_VARIANT_TILE_ELEMENTS} "
            "per variant",
            help="use smaller tiles (smaller windows or @autotune values), or fewer tile "
            "operations in one kernel",
            notes=(Note(largest[1], f"the largest tile, {largest[0]} lanes"),),
            limit=VARIANT_TILE_ELEMENTS,
        )
