"""Reductions along an axis: in-thread, then warp shuffles, then shared memory.

Along the last axis (the common case: a row sum, a row max) each thread first
combines the lanes of each of its groups; the groups of one row sit on
consecutive threads, so a butterfly of ``shfl.xor`` over ``min(groups per row,
32)`` lanes combines them within the warp; one partial per (row, warp) then goes
to the shared staging buffer, and after a barrier every thread that needs a
row's result combines its few partials.  Along another axis the lanes to combine
live in different threads and rows, so every lane goes through shared memory
and each result lane combines its column there.

Absent lanes and padding count as the identity.  f16/bf16 accumulate in f32 and
narrow integers in 32 bits, and the result is cast back.  When the result may
have absent lanes (every reduced lane absent), presence is reduced the same way
with ``max``.
"""

from __future__ import annotations

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.dtypes import byte_size, ctype, highest, literal, lowest
from phobos.compile.codegen.lanes import all_lanes, declare_tile, group_loop, lane_loop
from phobos.compile.codegen.layout import WARP, Layout
from phobos.compile.codegen.values import TileValue
from phobos.compile.ir import nodes as ir

_WIDER = {
    "f16": "f32",
    "bf16": "f32",
    "bool": "i32",
    "i8": "i32",
    "i16": "i32",
    "u8": "u32",
    "u16": "u32",
}


def _accumulator(dtype: str) -> str:
    return _WIDER.get(dtype, dtype)


def _identity(op: str, dtype: str, index_width: int) -> str:
    if op == "sum":
        return literal(0, dtype)
    return lowest(dtype, index_width) if op == "max" else highest(dtype, index_width)


def _combine(op: str, a: str, b: str) -> str:
    return f"({a} + {b})" if op == "sum" else f"phobos::{op}({a}, {b})"


def reduce_to_scalar(ctx: EmitContext, value: TileValue, op: str, dtype: str) -> str:
    """Reduce a 1-D tile to a block-uniform scalar every thread holds."""
    staged, per_row, acc = _row_partials(ctx, value, op)
    total = ctx.fresh("s")
    ctx.line(f"{ctype(acc)} {total} = {_identity(op, acc, ctx.index_width)};")
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int k = 0; k < {per_row}; ++k)"):
        ctx.line(f"{total} = {_combine(op, total, f'{staged}[k]')};")
    result = ctx.fresh("s")
    ctx.line(f"const {ctype(dtype)} {result} = phobos::cast<{ctype(dtype)}>({total});")
    return result


def reduce_axis(
    ctx: EmitContext, value: TileValue, op: str, axis: int, layout: Layout, type_: ir.TileT
) -> TileValue:
    """Reduce ``axis`` of a tile of rank >= 2; the result is in ``layout``."""
    acc = _accumulator(value.dtype)
    if axis == len(value.layout.shape) - 1:
        staged, per_row, acc = _row_partials(ctx, value, op)
        positions = f"{layout.flat()} * {per_row} + k"
        count = per_row
    else:
        staged = _stage_lanes(ctx, value, op, acc)
        count = value.layout.shape[axis]
        coords = [f"c{k}" for k in range(len(layout.shape))]
        coords.insert(axis, "k")
        strides = [_stride(value.layout.shape, k) for k in range(len(coords))]
        positions = " + ".join(f"{c} * {s}" if s != 1 else c for c, s in zip(coords, strides))
    name = ctx.fresh()
    c = ctype(type_.dtype)
    declare_tile(ctx, c, name, layout, False)
    with group_loop(ctx, layout, skip_padding=True), lane_loop(ctx, layout):
        ctx.line(f"{ctype(acc)} total = {_identity(op, acc, ctx.index_width)};")
        ctx.directive("#pragma unroll 4")
        with ctx.block(f"for (int k = 0; k < {count}; ++k)"):
            ctx.line(f"total = {_combine(op, 'total', f'{staged}[{positions}]')};")
        ctx.line(f"{name}[r][i] = phobos::cast<{c}>(total);")
    result = TileValue(type_.dtype, layout, f"{name}[r][i]")
    if not type_.partial or value.mask is None:
        return result
    presence = TileValue("i32", value.layout, f"({value.mask} ? 1 : 0)")
    present = reduce_axis(ctx, presence, "max", axis, layout, ir.TileT("i32", layout.shape))
    return TileValue(type_.dtype, layout, result.lane, f"({present.lane} != 0)")


def _stride(shape: tuple[int, ...], axis: int) -> int:
    out = 1
    for extent in shape[axis + 1 :]:
        out *= extent
    return out


def _lane_or_identity(value: TileValue, op: str, acc: str, index_width: int) -> str:
    lane = f"phobos::cast<{ctype(acc)}>({value.lane})"
    if value.mask is None:
        return lane
    return f"({value.mask} ? {lane} : {_identity(op, acc, index_width)})"


def _row_partials(ctx: EmitContext, value: TileValue, op: str) -> tuple[str, int, str]:
    """Stage each row's partial results; returns (buffer, partials per row, accumulator dtype).

    Partials of row ``q`` are at ``buffer[q * per_row + k]``, k < per_row.
    """
    layout = value.layout
    acc = _accumulator(value.dtype)
    c = ctype(acc)
    identity = _identity(op, acc, ctx.index_width)
    part = ctx.fresh("part")
    ctx.line(f"{c} {part}[{layout.repeats}];")
    with group_loop(ctx, layout):
        ctx.line(f"{part}[r] = {identity};")
        if layout.guarded:
            ctx.line(f"if (g >= {layout.groups}) continue;")
        with lane_loop(ctx, layout):
            lane = _lane_or_identity(value, op, acc, ctx.index_width)
            ctx.line(f"{part}[r] = {_combine(op, f'{part}[r]', lane)};")
    groups_per_row = layout.groups_per_row
    width = min(groups_per_row, WARP) if groups_per_row & (groups_per_row - 1) == 0 else 1
    offset = width // 2
    while offset >= 1:
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int r = 0; r < {layout.repeats}; ++r)"):
            shuffled = f"phobos::shuffle_xor({part}[r], {offset})"
            ctx.line(f"{part}[r] = {_combine(op, f'{part}[r]', shuffled)};")
        offset //= 2
    per_row = groups_per_row // width
    rows = layout.groups // groups_per_row
    scratch = ctx.need_scratch(rows * per_row * byte_size(acc, ctx.index_width))
    staged = ctx.fresh("staged")
    ctx.line("__syncthreads();")
    ctx.line(f"{c}* {staged} = reinterpret_cast<{c}*>({scratch});")
    writer = f"g % {width} == 0" if width > 1 else "true"
    position = f"(g / {groups_per_row}) * {per_row} + (g % {groups_per_row}) / {width}"
    with group_loop(ctx, layout, skip_padding=True), ctx.block(f"if ({writer})"):
        ctx.line(f"{staged}[{position}] = {part}[r];")
    ctx.line("__syncthreads();")
    return staged, per_row, acc


def _stage_lanes(ctx: EmitContext, value: TileValue, op: str, acc: str) -> str:
    """Every lane (absent ones as the identity) at its row-major position in shared memory."""
    c = ctype(acc)
    scratch = ctx.need_scratch(value.layout.numel * byte_size(acc, ctx.index_width))
    staged = ctx.fresh("staged")
    ctx.line("__syncthreads();")
    ctx.line(f"{c}* {staged} = reinterpret_cast<{c}*>({scratch});")
    lane = _lane_or_identity(value, op, acc, ctx.index_width)
    all_lanes(ctx, value.layout, [f"{staged}[{value.layout.flat()}] = {lane};"], skip_padding=True)
    ctx.line("__syncthreads();")
    return staged
