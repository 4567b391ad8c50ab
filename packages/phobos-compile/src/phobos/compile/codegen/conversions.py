"""Layout conversions: moving lanes between threads for broadcasts, new axes and transposes.

When an operation needs lanes another thread holds (``Broadcast`` of a row to
every row, ``Transpose``), the tile goes through the shared staging buffer:
every thread writes its lanes at their row-major position, the block
synchronises, and every thread reads the lanes of the result layout from the
positions they come from.  A leading barrier keeps a previous use of the buffer
from being overwritten while other threads still read it.  Where both layouts
assign every element to the same thread and slot (a new axis of extent 1 that
keeps the groups), the conversion is a renaming and costs nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.dtypes import byte_size, ctype
from phobos.compile.codegen.lanes import (
    all_lanes,
    copy_lanes,
    declare_tile,
    mask_lane,
    mask_word,
    set_mask_lane,
)
from phobos.compile.codegen.layout import AnyLayout, Layout, RowLayout
from phobos.compile.codegen.values import TileValue

_COORD = re.compile(r"\bc\d+\b")


def materialize(ctx: EmitContext, value: TileValue) -> TileValue:
    """Evaluate a lane expression into a register array (no-op if it already is one)."""
    if _is_array(value):
        return value
    name = ctx.fresh()
    masked = value.mask is not None
    declare_tile(ctx, ctype(value.dtype), name, value.layout, masked)
    copy_lanes(ctx, value.layout, name, value.lane, value.mask, value.word)
    mask = mask_lane(name) if masked else None
    return TileValue(value.dtype, value.layout, f"{name}[r][i]", mask, word=_word(name, masked))


def _word(name: str, masked: bool) -> str | None:
    return mask_word(name) if masked else None


def _is_array(value: TileValue) -> bool:
    """The lanes (and mask) are register arrays already, not expressions."""
    if not (value.lane.endswith("[r][i]") and value.lane[:-6].isidentifier()):
        return False
    return value.mask is None or value.mask == mask_lane(value.lane[:-6])


def to_layout(ctx: EmitContext, value: TileValue, layout: AnyLayout) -> TileValue:
    """The same tile (same shape) held in ``layout``.

    A variable moved to a layout keeps that copy for later reads in the same C
    block until it is written: ``max(scores, axis=1)`` and ``scores - m[:, newaxis]``
    move ``scores`` out of the mma fragments once, not twice.
    """
    if value.layout == layout:
        return value
    if value.anywhere:
        return replace(value, layout=layout)
    variable = value.lane[: -len("[r][i]")] if _is_variable(value) else None
    if variable is not None:
        known = ctx.converted(variable, layout)
        if known is not None:
            return known
    moved = _move(ctx, value, layout)
    if variable is not None:
        ctx.remember_conversion(variable, layout, moved)
    return moved


def _is_variable(value: TileValue) -> bool:
    """The lanes are a user variable's register array (``v_name[r][i]``)."""
    return value.lane.startswith("v_") and _is_array(value)


def _move(ctx: EmitContext, value: TileValue, layout: AnyLayout) -> TileValue:
    """The lanes through shared memory; a row broadcast moves only its rows."""
    shape = value.layout.shape
    if value.rows is not None:
        source = value.rows.layout.shape
        coords = [f"c{k}" for k in range(len(shape))]
        strides = _row_major_strides(source)
        return _convert(ctx, value.rows, layout, lambda: _flat(coords, strides, source))
    coords = [f"c{k}" for k in range(len(shape))]
    strides = _row_major_strides(shape)
    return _convert(ctx, value, layout, lambda: _flat(coords, strides, shape))


def common_layout(
    ctx: EmitContext, values: list[TileValue], default: Layout
) -> tuple[list[TileValue], AnyLayout]:
    """The operands of an elementwise op in one layout: theirs if they agree, else ``default``.

    Where the result is headed for ``ctx.target_layout`` (a ``dot``'s accumulator:
    ``acc * rescale[:, newaxis]``), operands already there stay and row broadcasts
    follow them cheaply (``TileValue.rows``), instead of a round trip of every lane.
    """
    held = {v.layout for v in values if not v.anywhere}
    target = ctx.target_layout
    movable = all(v.anywhere or v.rows is not None or v.layout == target for v in values)
    if len(held) > 1 and target in held and movable:
        return [to_layout(ctx, v, target) for v in values], target
    layout = held.pop() if len(held) == 1 else default
    return [to_layout(ctx, v, layout) for v in values], layout


def _uniform(value: TileValue) -> bool:
    """Every lane is the same value (a splat): any shape and layout can hold it as is."""
    return value.anywhere and not _COORD.search(value.lane)


def _same_slots(a: AnyLayout, b: AnyLayout) -> bool:
    """Both layouts put the n-th row-major element in the same thread, repeat and lane.

    Only then may a conversion that keeps row-major order (a new axis of extent 1, the
    transpose of a tile with one non-unit axis) be a renaming.
    """
    plain = isinstance(a, Layout) and isinstance(b, Layout)
    return plain and a.numel == b.numel and a.vec == b.vec and a.threads == b.threads


def _row_major_strides(shape: tuple[int, ...]) -> list[int]:
    return [math.prod(shape[k + 1 :]) for k in range(len(shape))]


def expand_dims(ctx: EmitContext, value: TileValue, layout: Layout, axis: int) -> TileValue:
    if isinstance(value.layout, RowLayout):
        if not value.layout.keep_axis and axis == len(value.layout.shape):
            return replace(value, layout=RowLayout(value.layout.parent, keep_axis=True))
        value = to_layout(ctx, value, ctx.layout(value.layout.shape))
    if _uniform(value):
        return replace(value, layout=layout)
    source = value.layout.shape
    strides = _row_major_strides(source)
    if _same_slots(value.layout, layout):
        return replace(materialize(ctx, value), layout=layout)
    coords = [f"c{k}" for k in range(len(layout.shape)) if k != axis]
    return _convert(ctx, value, layout, lambda: _flat(coords, strides, source))


def broadcast(ctx: EmitContext, value: TileValue, layout: Layout) -> TileValue:
    source = value.layout.shape
    if source == layout.shape:
        return value
    if _uniform(value):
        return replace(value, layout=layout)
    if isinstance(value.layout, RowLayout) and value.layout.parent == layout:
        # Every thread already holds the row value of each of its groups.
        rows = materialize(ctx, value)
        name = rows.lane[: -len("[r][i]")]
        if rows.mask is None:
            return TileValue(value.dtype, layout, f"{name}[r][0]", rows=rows)
        word = f"phobos::spread_lane0({mask_word(name)})"
        mask = mask_lane(name, "0")
        return TileValue(value.dtype, layout, f"{name}[r][0]", mask, word=word, rows=rows)
    if isinstance(value.layout, RowLayout):
        value = to_layout(ctx, value, ctx.layout(source))
    strides = _row_major_strides(source)
    coords = [f"c{k}" for k in range(len(layout.shape))]
    return _convert(ctx, value, layout, lambda: _flat(coords, strides, source))


def transpose(ctx: EmitContext, value: TileValue, layout: Layout) -> TileValue:
    source = value.layout.shape
    if isinstance(value.layout, RowLayout):
        value = to_layout(ctx, value, ctx.layout(source))
    strides = _row_major_strides(source)
    if sum(extent != 1 for extent in source) <= 1 and _same_slots(value.layout, layout):
        return replace(materialize(ctx, value), layout=layout)
    coords = [f"c{k}" for k in reversed(range(len(layout.shape)))]
    return _convert(ctx, value, layout, lambda: _flat(coords, strides, source))


def _flat(coords: list[str], strides: list[int], shape: tuple[int, ...]) -> str:
    """Row-major position in ``shape``; axes of extent 1 are broadcast (coordinate ignored)."""
    terms = [
        coord if stride == 1 else f"{coord} * {stride}"
        for coord, stride, extent in zip(coords, strides, shape)
        if extent != 1
    ]
    return " + ".join(terms) or "0"


def _convert(
    ctx: EmitContext, value: TileValue, layout: AnyLayout, source_position: Callable[[], str]
) -> TileValue:
    """The tile in ``layout``; result lane at coordinates c0.. reads ``source_position()``."""
    c = ctype(value.dtype)
    size = byte_size(value.dtype, ctx.index_width)
    numel = value.layout.numel
    data_bytes = -(-numel * size // 16) * 16
    scratch = ctx.need_scratch(data_bytes + (numel if value.mask is not None else 0))
    staged = ctx.fresh("staged")
    ctx.line("__syncthreads();")
    ctx.line(f"{c}* {staged} = reinterpret_cast<{c}*>({scratch});")
    write = [f"{staged}[{value.layout.flat()}] = {value.lane};"]
    if value.mask is not None:
        ctx.line(f"bool* {staged}_m = reinterpret_cast<bool*>({scratch} + {data_bytes});")
        write.append(f"{staged}_m[{value.layout.flat()}] = {value.mask};")
    all_lanes(ctx, value.layout, write, skip_padding=True)
    ctx.line("__syncthreads();")
    name = ctx.fresh()
    declare_tile(ctx, c, name, layout, value.mask is not None)
    position = source_position()
    read = [f"{name}[r][i] = {staged}[{position}];"]
    if value.mask is not None:
        read.append(set_mask_lane(name, f"{staged}_m[{position}]"))
    all_lanes(ctx, layout, read, skip_padding=True)
    masked = value.mask is not None
    mask = mask_lane(name) if masked else None
    return TileValue(value.dtype, layout, f"{name}[r][i]", mask, word=_word(name, masked))
