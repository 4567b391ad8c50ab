"""Global memory: loads and stores of tensor windows, one group of lanes at a time.

A window ``t[a :+ L, b :+ M]`` maps the tile's axes to the tensor's window
axes, in order; point indices (``t[i, b :+ M]``) fix an axis.  The tensor axis
of the last window is the *lane axis*: the ``vec`` lanes of a group step along
it.  Per group the code computes every axis's index once, the group's pointer,
whether the non-lane axes are in bounds (``inside``), and hands the group to
the runtime (``phobos::load_group`` ...), which takes the vector path when the
whole group is in bounds and aligned and the lane-by-lane masked path
otherwise.

Vector width: when the lane axis is the tensor's last axis and the
specialisation says it has unit stride, a group moves in words of
``min(16, vec * size, align)`` bytes.  The run-time alignment test is dropped
when the window start is provably a multiple of the word (``facts.py``);
``saxpy``'s hot path is then two 16-byte loads, one 16-byte store and a bounds
compare per group.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.dtypes import INDEX_CTYPE, byte_size, ctype
from phobos.compile.codegen.lanes import (
    declare_coords,
    declare_tile,
    group_loop,
    lane_loop,
    mask_lane,
    mask_word,
)
from phobos.compile.codegen.layout import AnyLayout, Layout
from phobos.compile.codegen.signature import TensorAccess
from phobos.compile.codegen.values import TileValue

# A thread holding this many lanes of a stored tile skips the groups with no lane
# present (past a row's end): they neither compute their lanes nor store, so a
# 16384-wide softmax of 12288 columns skips a quarter of its divisions.  Such a
# thread's registers are capped by two CTAs an SM anyway (``occupancy``); with
# fewer lanes the branches cost registers (8192 columns: 80 -> 86, one CTA an SM
# fewer) and the CTAs an SM holds hide the idle lanes.
SKIPPING_LANES = 64


@dataclass(frozen=True)
class AxisIndex:
    """One tensor axis of an access: a point (``length`` None) or a window start."""

    start: str  # a C expression of the index type, hoisted into a constant
    length: int | None
    start_multiple: int = 1  # the start is provably a multiple of this


def order_accesses(ctx: EmitContext, access: TensorAccess) -> None:
    """A tensor the kernel both reads and writes: order the block's accesses to it.

    The kernel body runs once per block, so a read must see the block's earlier
    writes and a write must not overtake the block's earlier reads, though other
    threads make them.  A barrier before each access gives that order.
    """
    if access.tensor.name in ctx.read_and_written:
        ctx.line("__syncthreads();")


def _unsigned(index_width: int) -> str:
    return f"phobos::u{index_width}"


def in_bounds(ctx: EmitContext, index: str, extent: str) -> str:
    u = _unsigned(ctx.index_width)
    return f"{u}({index}) < {u}({extent})"


def _lane_axis(indices: list[AxisIndex]) -> int:
    return max(axis for axis, index in enumerate(indices) if index.length is not None)


def _group_indices(indices: list[AxisIndex], layout: Layout) -> list[str]:
    """Each tensor axis's index for the group's first lane (coordinates ``c0``...)."""
    out: list[str] = []
    tile_axis = 0
    for index in indices:
        if index.length is None:
            out.append(index.start)
        else:
            coord = f"c{tile_axis}"
            out.append(f"{index.start} + {INDEX_CTYPE}({coord})")
            tile_axis += 1
    return out


def element_offset(access: TensorAccess, indices: list[str]) -> str:
    terms = []
    for axis, index in enumerate(indices):
        stride = access.stride(axis)
        terms.append(f"({index})" if stride == "1" else f"({index}) * {stride}")
    return " + ".join(terms)


def _vector_bytes(ctx: EmitContext, access: TensorAccess, lane_axis: int, vec: int) -> int:
    """The vector word (bytes) a group may move in; 0 for lane-by-lane access."""
    if not access.unit_stride or lane_axis != access.tensor.rank - 1:
        return 0
    size = byte_size(access.tensor.dtype, ctx.index_width)
    word = min(16, vec * size, access.align)
    return word if word > size else 0


def _needs_alignment_test(
    ctx: EmitContext, access: TensorAccess, indices: list[AxisIndex], lanes: int, word: int
) -> bool:
    if word == 0:
        return False
    if len(indices) > 1:  # a run-time row stride can move any row off the word
        return True
    size = byte_size(access.tensor.dtype, ctx.index_width)
    return (math.gcd(indices[0].start_multiple, lanes) * size) % word != 0


def _inside(
    ctx: EmitContext,
    access: TensorAccess,
    indices: list[str],
    lane_axis: int,
    layout: Layout,
    check_bounds: bool,
) -> str:
    terms = []
    if check_bounds:
        terms = [
            in_bounds(ctx, index, access.extent(axis))
            for axis, index in enumerate(indices)
            if axis != lane_axis
        ]
    if layout.guarded:
        terms.append(f"g < {layout.groups}")
    return " && ".join(terms) or "true"


def load_tile(
    ctx: EmitContext,
    access: TensorAccess,
    indices: list[AxisIndex],
    layout: Layout,
    dtype: str,
    partial: bool,
) -> TileValue:
    """Materialise a window of the tensor into registers; lanes outside it are absent."""
    order_accesses(ctx, access)
    name = ctx.fresh()
    declare_tile(ctx, ctype(dtype), name, layout, partial)
    lane_axis = _lane_axis(indices)
    word = _vector_bytes(ctx, access, lane_axis, layout.vec)
    test = _needs_alignment_test(ctx, access, indices, layout.vec, word)
    test_alignment = "true" if test else "false"
    with group_loop(ctx, layout):
        start = len(ctx.lines)
        group = _group_indices(indices, layout)
        inside = _inside(ctx, access, group, lane_axis, layout, partial)
        pointer = f"{access.pointer} + ({element_offset(access, group)})"
        stride = access.stride(lane_axis)
        if partial:
            extent = access.extent(lane_axis)
            args = f"{group[lane_axis]}, {extent}, {inside}, {name}[r], {name}_m[r]"
            if stride == "1":
                ctx.line(f"phobos::load_group<{word}, {test_alignment}>({pointer}, {args});")
            else:
                ctx.line(f"phobos::load_group_strided({pointer}, {stride}, {args});")
        else:
            if stride == "1":
                call = (
                    f"phobos::load_group_unchecked<{word}, {test_alignment}>({pointer}, {name}[r])"
                )
            else:
                call = f"phobos::load_group_strided_unchecked({pointer}, {stride}, {name}[r])"
            ctx.line(call + ";" if inside == "true" else f"if ({inside}) {call};")
        declare_coords(ctx, layout, start, "0")
    if not partial:
        return TileValue(dtype, layout, f"{name}[r][i]")
    return TileValue(dtype, layout, f"{name}[r][i]", mask_lane(name), word=mask_word(name))


def store_tile(
    ctx: EmitContext, access: TensorAccess, indices: list[AxisIndex], value: TileValue
) -> None:
    """Write the present lanes of ``value`` that fall inside the tensor.

    Each run of lanes contiguous along the last axis (the whole group in the
    default layout, pairs of columns in ``mma`` fragments) is one store group.
    """
    order_accesses(ctx, access)
    layout = value.layout
    c = ctype(value.dtype)
    with group_loop(ctx, layout):
        ctx.line(f"{c} lanes[{layout.vec}];")
        if value.word is not None:
            ctx.line(f"const unsigned present = {value.word};")
        if value.word is None or layout.repeats * layout.vec < SKIPPING_LANES:
            _store_group(ctx, access, indices, value)
            return
        with ctx.block("if (present != 0u)"):
            _store_group(ctx, access, indices, value)


def _store_group(
    ctx: EmitContext, access: TensorAccess, indices: list[AxisIndex], value: TileValue
) -> None:
    """One group's lanes, computed into ``lanes``, then stored run by run.

    ``present`` is declared here unless the value has a mask word (the caller's).
    """
    layout = value.layout
    lane_axis = _lane_axis(indices)
    if value.mask is None:
        ctx.line("const unsigned present = 0xffffffffu;")
    elif value.word is None:
        ctx.line("unsigned present = 0u;")
    with lane_loop(ctx, layout):
        ctx.line(f"lanes[i] = {value.lane};")
        if value.mask is not None and value.word is None:
            ctx.line(f"present |= unsigned({value.mask}) << i;")
    if len(layout.runs) == 1:
        _store_run(ctx, access, indices, layout, lane_axis, 0, layout.vec)
        return
    for first, length in layout.runs:
        with ctx.block(""):  # a scope per run: each declares its own coordinates
            _store_run(ctx, access, indices, layout, lane_axis, first, length)


def _store_run(
    ctx: EmitContext,
    access: TensorAccess,
    indices: list[AxisIndex],
    layout: AnyLayout,
    lane_axis: int,
    first: int,
    length: int,
) -> None:
    word = _vector_bytes(ctx, access, lane_axis, length)
    test = _needs_alignment_test(ctx, access, indices, length, word)
    start = len(ctx.lines)
    group = _group_indices(indices, layout)
    inside = _inside(ctx, access, group, lane_axis, layout, True)
    pointer = f"{access.pointer} + ({element_offset(access, group)})"
    stride = access.stride(lane_axis)
    values = f"lanes + {first}, present >> {first}" if first else "lanes, present"
    args = f"{group[lane_axis]}, {access.extent(lane_axis)}, {inside}, {values}"
    if stride == "1":
        test_text = "true" if test else "false"
        ctx.line(f"phobos::store_group<{length}, {word}, {test_text}>({pointer}, {args});")
    else:
        ctx.line(f"phobos::store_group_strided<{length}>({pointer}, {stride}, {args});")
    declare_coords(ctx, layout, start, str(first))


# Where a tile's element (c0, c1) lies in a shared-memory buffer: an element offset.
SharedPlace = Callable[[str, str], str]


def padded_rows(row: int) -> SharedPlace:
    """Row-major rows of ``row`` elements (the tile's, plus any padding)."""
    return lambda c0, c1: f"{c0} * {row} + {c1}"


def copy_tile_async(
    ctx: EmitContext,
    access: TensorAccess,
    indices: list[AxisIndex],
    layout: Layout,
    buffer: str,
    place: SharedPlace,
) -> None:
    """Copy a 2-D window into shared memory ``buffer``, group (c0, c1) at ``place(c0, c1)``.

    Each 16-byte group goes with ``cp.async``, straight from global to shared
    memory; a boundary group is copied lane by lane with zeros for absent lanes.
    The caller waits (``phobos::copy_async_wait``) and synchronises.
    """
    order_accesses(ctx, access)
    lane_axis = _lane_axis(indices)
    test = "true" if _needs_alignment_test(ctx, access, indices, layout.vec, 16) else "false"
    with group_loop(ctx, layout, skip_padding=True):
        start = len(ctx.lines)
        group = _group_indices(indices, layout)
        inside = _inside(ctx, access, group, lane_axis, layout, True)
        pointer = f"{access.pointer} + ({element_offset(access, group)})"
        target = f"{buffer} + {place('c0', 'c1')}"
        args = f"{target}, {pointer}, {group[lane_axis]}, {access.extent(lane_axis)}, {inside}"
        ctx.line(f"phobos::copy_group_async<{layout.vec}, {test}>({args});")
        declare_coords(ctx, layout, start, "0")


def _point_access(ctx: EmitContext, access: TensorAccess, indices: list[str]) -> tuple[str, str]:
    inside = " && ".join(
        in_bounds(ctx, index, access.extent(axis)) for axis, index in enumerate(indices)
    )
    return inside or "true", f"{access.pointer}[{element_offset(access, indices) or '0'}]"


def load_scalar(ctx: EmitContext, access: TensorAccess, indices: list[str], dtype: str) -> str:
    """One element, read by every thread; an index outside the tensor reads as zero."""
    order_accesses(ctx, access)
    inside, element = _point_access(ctx, access, indices)
    name = ctx.fresh("s")
    ctx.line(f"const {ctype(dtype)} {name} = ({inside}) ? {element} : {ctype(dtype)}();")
    return name


def store_scalar(ctx: EmitContext, access: TensorAccess, indices: list[str], value: str) -> None:
    """One element, written once per block (by thread 0); skipped outside the tensor."""
    order_accesses(ctx, access)
    inside, element = _point_access(ctx, access, indices)
    with ctx.block(f"if (tid == 0 && {inside})"):
        ctx.line(f"{element} = {value};")
