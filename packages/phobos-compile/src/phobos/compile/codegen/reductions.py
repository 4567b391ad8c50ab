"""Reductions along an axis: in-thread, then warp shuffles, then shared memory.

Along the last axis (the common case: a row sum, a row max) each thread first
combines the lanes of each of its groups; the groups of one row sit on
consecutive threads, so a butterfly of ``shfl.xor`` over ``min(groups per row,
32)`` lanes combines them within the warp.  When a row fits in those lanes every
thread of the row now holds its result: nothing else moves, and the result is
held in the ``RowLayout`` so broadcasting it back over the row is free.  Else
one partial per (row, warp) goes to the shared staging buffer, and after a
barrier every thread of the row combines the row's few partials; a row wider
than the CTA (several repeats of every thread) is first combined across the
thread's repeats and its partials are combined once per row, not per repeat.
A row reduction thus costs ``log2(min(groups a row, 32))`` shuffles and, when
the row spans warps, one barrier: successive reductions stage their partials in
the two slots of a small buffer of their own, in turn (``EmitContext.partials_slot``),
so none waits for the previous one's readers before writing.

A 2-D tile reduced over its rows (axis 0, as layer norm's ``dw``/``db`` column
sums) keeps each column group in one thread when the CTA is a multiple of the
groups a row: each thread adds its own rows, a butterfly adds the warp's
threads of the same column group, and shared memory only the warps' partials.
Any other axis stages every lane in shared memory and each result lane
combines its column there.

Absent lanes and padding count as the identity.  f16/bf16 accumulate in f32 and
narrow integers in 32 bits, and the result is cast back.  When the result may
have absent lanes (every reduced lane absent), a row's presence is one warp
vote (``__ballot_sync``) per row segment that travels with the partials through
the same barrier; another axis reduces presence like a value, with ``max``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.conversions import to_layout
from phobos.compile.codegen.dtypes import byte_size, ctype, highest, literal, lowest
from phobos.compile.codegen.lanes import (
    all_lanes,
    declare_tile,
    group_loop,
    lane_loop,
    mask_lane,
    mask_word,
    word_lane,
)
from phobos.compile.codegen.layout import WARP, AnyLayout, Layout, RowLayout
from phobos.compile.codegen.values import TileValue
from phobos.compile.ir import nodes as ir

# Lanes of one row a thread combines, from which it keeps ``vec`` running partials.
LONG_CHAIN = 64

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
    value = _plain(ctx, value)
    rows = _row_partials(ctx, value, op)
    total = ctx.fresh("s")
    if rows.per_row == 1 and rows.slots == 1:
        ctx.line(f"const {ctype(rows.acc)} {total} = {rows.part}[0];")
    else:
        staged = _stage_partials(ctx, value.layout, rows)
        ctx.line(f"{ctype(rows.acc)} {total} = {_identity(op, rows.acc, ctx.index_width)};")
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int k = 0; k < {rows.per_row}; ++k)"):
            ctx.line(f"{total} = {_combine(op, total, f'{staged}[k]')};")
    result = ctx.fresh("s")
    ctx.line(f"const {ctype(dtype)} {result} = phobos::cast<{ctype(dtype)}>({total});")
    return result


def reduce_axis(
    ctx: EmitContext, value: TileValue, op: str, axis: int, layout: Layout, type_: ir.TileT
) -> TileValue:
    """Reduce ``axis`` of a tile of rank >= 2.

    Along the last axis the result stays with the threads of each row
    (``RowLayout``); along another it is in ``layout``.
    """
    value = _plain(ctx, value)
    present = type_.partial and value.mask is not None
    if axis == len(value.layout.shape) - 1:
        return _reduce_rows(ctx, value, op, type_.dtype, present)
    if _columns_stay_with_threads(value.layout, axis):
        result = _reduce_columns(ctx, value, op, layout, type_.dtype)
    else:
        result = _reduce_through_shared(ctx, value, op, axis, layout, type_.dtype)
    if not present:
        return result
    presence = TileValue("i32", value.layout, f"({value.mask} ? 1 : 0)")
    present = reduce_axis(ctx, presence, "max", axis, layout, ir.TileT("i32", layout.shape))
    return replace(result, mask=f"({present.lane} != 0)")


def _plain(ctx: EmitContext, value: TileValue) -> TileValue:
    """The operand in its shape's default layout, where the reduction's plan applies."""
    return to_layout(ctx, value, ctx.layout(value.layout.shape))


def _reduce_rows(
    ctx: EmitContext, value: TileValue, op: str, dtype: str, present: bool
) -> TileValue:
    """Each row's result, held by every thread of the row.

    With ``present``, whether any lane of the row is present travels with the
    partials (same shuffles, same barrier) and becomes the result's mask.
    """
    layout = value.layout
    assert isinstance(layout, Layout)
    rows = _row_partials(ctx, value, op, present)
    c = ctype(dtype)
    held = RowLayout(layout)
    if rows.per_row == 1:  # the shuffles reached every group of the row
        slot = f"[{rows.slot_of}]"
        lane = f"phobos::cast<{c}>({rows.part}{slot})"
        if not present:
            return TileValue(dtype, held, lane)
        word = f"phobos::all_or_none({rows.part}_p{slot} != 0)"
        return TileValue(dtype, held, lane, word_lane(word), word=word)
    staged = _stage_partials(ctx, layout, rows)
    if rows.spans > 1:
        return _combine_row_slots(ctx, rows, staged, op, dtype, held)
    name = ctx.fresh()
    declare_tile(ctx, c, name, held, present)
    with group_loop(ctx, layout, skip_padding=True):
        ctx.line(f"{ctype(rows.acc)} total = {_identity(op, rows.acc, ctx.index_width)};")
        if present:
            ctx.line("int any = 0;")
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int k = 0; k < {rows.per_row}; ++k)"):
            position = f"{_partial_row(layout, rows)} * {rows.per_row} + k"
            ctx.line(f"total = {_combine(op, 'total', f'{staged}[{position}]')};")
            if present:
                ctx.line(f"any |= {staged}_p[{position}];")
        ctx.line(f"{name}[r][0] = phobos::cast<{c}>(total);")
        if present:
            ctx.line(f"{mask_word(name)} = phobos::all_or_none(any != 0);")
    if not present:
        return TileValue(dtype, held, f"{name}[r][i]")
    return TileValue(dtype, held, f"{name}[r][i]", mask_lane(name), word=mask_word(name))


def _combine_row_slots(
    ctx: EmitContext, rows: _RowPartials, staged: str, op: str, dtype: str, held: RowLayout
) -> TileValue:
    """Each row's staged partials, combined once per row (slot ``j`` is row ``j``).

    A row spans ``spans`` repeats of every thread, so the repeats of one row share
    one total instead of each combining the partials again.
    """
    c = ctype(dtype)
    name = ctx.fresh()
    ctx.line(f"{c} {name}[{rows.slots}][1];")
    if rows.present:
        ctx.line(f"unsigned {name}_m[{rows.slots}] = {{}};")
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int j = 0; j < {rows.slots}; ++j)"):
        ctx.line(f"{ctype(rows.acc)} total = {_identity(op, rows.acc, ctx.index_width)};")
        if rows.present:
            ctx.line("int any = 0;")
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int k = 0; k < {rows.per_row}; ++k)"):
            position = f"j * {rows.per_row} + k"
            ctx.line(f"total = {_combine(op, 'total', f'{staged}[{position}]')};")
            if rows.present:
                ctx.line(f"any |= {staged}_p[{position}];")
        ctx.line(f"{name}[j][0] = phobos::cast<{c}>(total);")
        if rows.present:
            ctx.line(f"{name}_m[j] = phobos::all_or_none(any != 0);")
    lane = f"{name}[{rows.slot_of}][0]"
    if not rows.present:
        return TileValue(dtype, held, lane)
    word = f"{name}_m[{rows.slot_of}]"
    return TileValue(dtype, held, lane, word_lane(word), word=word)


def _columns_stay_with_threads(layout: AnyLayout, axis: int) -> bool:
    """A 2-D tile reduced along its rows whose threads each keep one column group."""
    return (
        isinstance(layout, Layout)
        and axis == 0
        and len(layout.shape) == 2
        and layout.threads % layout.groups_per_row == 0
    )


def _reduce_columns(
    ctx: EmitContext, value: TileValue, op: str, layout: Layout, dtype: str
) -> TileValue:
    """Sum (or max, min) a ``[R, C]`` tile over its rows, in parallel.

    Thread ``tid`` holds column group ``tid % P`` (``P`` groups per row) of rows
    ``tid / P``, ``tid / P + threads / P``, ...: it first combines its own rows
    lane by lane, then a butterfly over the warp's threads of the same column
    group (lanes ``P``, ``2P``, ... apart) leaves one partial per warp, and the
    warps' partials meet in shared memory, where each result lane adds up its
    column's few partials.  With one partial per column (a warp or more per row),
    thread ``tid < P`` already holds result group ``tid``.
    """
    source = value.layout
    assert isinstance(source, Layout)
    per_row, vec, columns = source.groups_per_row, source.vec, source.shape[1]
    acc = _accumulator(value.dtype)
    identity = _identity(op, acc, ctx.index_width)
    part = ctx.fresh("part")
    ctx.line(f"{ctype(acc)} {part}[{vec}];")
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int i = 0; i < {vec}; ++i)"):
        ctx.line(f"{part}[i] = {identity};")
    with group_loop(ctx, source):
        if source.guarded:
            ctx.line(f"if (g >= {source.groups}) continue;")
        with lane_loop(ctx, source):
            lane = _lane_or_identity(value, op, acc, ctx.index_width)
            ctx.line(f"{part}[i] = {_combine(op, f'{part}[i]', lane)};")
    offset = per_row
    while offset < WARP:
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int i = 0; i < {vec}; ++i)"):
            shuffled = f"phobos::shuffle_xor({part}[i], {offset})"
            ctx.line(f"{part}[i] = {_combine(op, f'{part}[i]', shuffled)};")
        offset *= 2
    sharing = source.threads // per_row
    in_warp = WARP // per_row if per_row < WARP else 1
    partials = sharing // in_warp
    c = ctype(dtype)
    if partials == 1:
        return TileValue(dtype, layout, f"phobos::cast<{c}>({part}[i])")
    scratch = ctx.need_scratch(partials * columns * byte_size(acc, ctx.index_width))
    staged = ctx.fresh("staged")
    ctx.line("__syncthreads();")
    ctx.line(f"{ctype(acc)}* {staged} = reinterpret_cast<{ctype(acc)}*>({scratch});")
    if per_row < WARP:
        writer, k = f"tid % {WARP} < {per_row}", f"tid / {WARP}"
    else:
        writer, k = "true", f"tid / {per_row}"
    with ctx.block(f"if ({writer})"):
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int i = 0; i < {vec}; ++i)"):
            position = f"({k}) * {columns} + (tid % {per_row}) * {vec} + i"
            ctx.line(f"{staged}[{position}] = {part}[i];")
    ctx.line("__syncthreads();")
    return _combine_staged(
        ctx, op, acc, layout, dtype, partials, f"{staged}[k * {columns} + c0]", "#pragma unroll"
    )


def _reduce_through_shared(
    ctx: EmitContext, value: TileValue, op: str, axis: int, layout: Layout, dtype: str
) -> TileValue:
    """Every lane to shared memory; each result lane combines its column there."""
    acc = _accumulator(value.dtype)
    staged = _stage_lanes(ctx, value, op, acc)
    coords = [f"c{k}" for k in range(len(layout.shape))]
    coords.insert(axis, "k")
    strides = [_stride(value.layout.shape, k) for k in range(len(coords))]
    position = " + ".join(f"{c} * {s}" if s != 1 else c for c, s in zip(coords, strides))
    count = value.layout.shape[axis]
    return _combine_staged(
        ctx, op, acc, layout, dtype, count, f"{staged}[{position}]", "#pragma unroll 4"
    )


def _combine_staged(
    ctx: EmitContext,
    op: str,
    acc: str,
    layout: Layout,
    dtype: str,
    count: int,
    element: str,
    unroll: str,
) -> TileValue:
    """Each result lane combines ``count`` staged values (``element`` of ``k`` and its lane)."""
    name = ctx.fresh()
    c = ctype(dtype)
    declare_tile(ctx, c, name, layout, False)
    with group_loop(ctx, layout, skip_padding=True), lane_loop(ctx, layout):
        ctx.line(f"{ctype(acc)} total = {_identity(op, acc, ctx.index_width)};")
        ctx.directive(unroll)
        with ctx.block(f"for (int k = 0; k < {count}; ++k)"):
            ctx.line(f"total = {_combine(op, 'total', element)};")
        ctx.line(f"{name}[r][i] = phobos::cast<{c}>(total);")
    return TileValue(dtype, layout, f"{name}[r][i]")


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


@dataclass(frozen=True)
class _RowPartials:
    """Per thread, ``part[slot]``: partial results of the rows of its groups.

    A repeat's slot is ``slot_of`` (a C expression of ``r``): the repeat itself,
    or, when a row spans several repeats of every thread, the row.  After the
    shuffles, threads ``width`` apart within a row hold one partial each:
    ``per_row`` partials per row remain to be combined.
    """

    part: str
    acc: str
    slots: int
    slot_of: str
    width: int
    per_row: int
    spans: int  # repeats per row (1: a row lies within one repeat's threads)
    present: bool  # part_p[slot]: 1 where some lane of the row is present


def _row_partials(
    ctx: EmitContext, value: TileValue, op: str, present: bool = False
) -> _RowPartials:
    """Combine each thread's lanes of a row, then shuffle across the row's threads in the warp."""
    layout = value.layout
    assert isinstance(layout, Layout)
    acc = _accumulator(value.dtype)
    identity = _identity(op, acc, ctx.index_width)
    groups_per_row = layout.groups_per_row
    # A row longer than the CTA: each thread holds groups_per_row / threads repeats of it.
    spans = groups_per_row // layout.threads if groups_per_row % layout.threads == 0 else 1
    slots = layout.repeats // spans
    slot_of = f"r / {spans}" if spans > 1 else "r"
    # A thread holding ``LONG_CHAIN`` lanes of a row or more: one running partial per
    # lane of the group, so its combines form ``vec`` independent chains, folded at
    # the end (fewer lanes: the CTAs an SM holds hide the chain, and registers matter).
    chains = layout.vec if spans * layout.vec >= LONG_CHAIN else 1
    part = ctx.fresh("part")
    running = f"{part}_l" if chains > 1 else part
    ctx.line(f"{ctype(acc)} {part}[{slots}];")
    if chains > 1:
        ctx.line(f"{ctype(acc)} {running}[{slots}][{chains}];")
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int j = 0; j < {slots}; ++j)"):
        if chains == 1:
            ctx.line(f"{part}[j] = {identity};")
        else:
            ctx.directive("#pragma unroll")
            with ctx.block(f"for (int i = 0; i < {chains}; ++i)"):
                ctx.line(f"{running}[j][i] = {identity};")
    if present:
        ctx.line(f"int {part}_p[{slots}] = {{}};")
    with group_loop(ctx, layout):
        if layout.guarded:
            ctx.line(f"if (g >= {layout.groups}) continue;")
        with lane_loop(ctx, layout):
            lane = _lane_or_identity(value, op, acc, ctx.index_width)
            slot = f"{running}[{slot_of}][i]" if chains > 1 else f"{part}[{slot_of}]"
            ctx.line(f"{slot} = {_combine(op, slot, lane)};")
            if present and value.word is None:
                ctx.line(f"{part}_p[{slot_of}] |= ({value.mask}) ? 1 : 0;")
        if present and value.word is not None:
            full = f"{(1 << layout.vec) - 1}u"
            ctx.line(f"{part}_p[{slot_of}] |= ({value.word} & {full}) != 0 ? 1 : 0;")
    if chains > 1:
        _fold_chains(ctx, op, part, running, slots, chains)
    if spans > 1:
        width = WARP
    elif groups_per_row & (groups_per_row - 1) == 0:
        width = min(groups_per_row, WARP)
    else:
        width = 1
    if present and width > 1:
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int j = 0; j < {slots}; ++j)"):
            ctx.line(f"{part}_p[j] = phobos::any_in_segment<{width}>({part}_p[j] != 0);")
    offset = width // 2
    while offset >= 1:
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int j = 0; j < {slots}; ++j)"):
            shuffled = f"phobos::shuffle_xor({part}[j], {offset})"
            ctx.line(f"{part}[j] = {_combine(op, f'{part}[j]', shuffled)};")
        offset //= 2
    per_row = layout.threads // WARP if spans > 1 else groups_per_row // width
    return _RowPartials(part, acc, slots, slot_of, width, per_row, spans, present)


def _fold_chains(ctx: EmitContext, op: str, part: str, running: str, slots: int, chains: int):
    """``part[j]``: slot ``j``'s ``chains`` running partials, combined pairwise."""
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int j = 0; j < {slots}; ++j)"):
        half = chains // 2
        while half >= 1:
            ctx.directive("#pragma unroll")
            with ctx.block(f"for (int i = 0; i < {half}; ++i)"):
                pair = f"{running}[j][i + {half}]"
                ctx.line(f"{running}[j][i] = {_combine(op, f'{running}[j][i]', pair)};")
            half //= 2
        ctx.line(f"{part}[j] = {running}[j][0];")


def _partial_row(layout: Layout, rows: _RowPartials) -> str:
    per_row = layout.groups_per_row
    return f"(g / {per_row})" if per_row > 1 else "g"


def _stage_partials(ctx: EmitContext, layout: Layout, rows: _RowPartials) -> str:
    """Partial ``k`` of row ``q`` to ``buffer[q * per_row + k]``; returns the buffer."""
    c = ctype(rows.acc)
    count = layout.groups // layout.groups_per_row * rows.per_row
    values_bytes = -(-count * byte_size(rows.acc, ctx.index_width) // 16) * 16
    slot = ctx.partials_slot(values_bytes + (4 * count if rows.present else 0))
    staged = ctx.fresh("staged")
    ctx.line(f"{c}* {staged} = reinterpret_cast<{c}*>({slot});")
    if rows.present:
        ctx.line(f"int* {staged}_p = reinterpret_cast<int*>({slot} + {values_bytes});")
    if rows.spans > 1:  # slot j is row j; one partial per warp
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int j = 0; j < {rows.slots}; ++j)"):
            position = f"j * {rows.per_row} + tid / 32"
            _write_partial(ctx, rows, staged, position, "j", "tid % 32 == 0")
    else:
        per_row = layout.groups_per_row
        writer = f"g % {rows.width} == 0" if rows.width > 1 else "true"
        k = f"(g % {per_row}) / {rows.width}" if rows.per_row > 1 else "0"
        position = f"{_partial_row(layout, rows)} * {rows.per_row} + {k}"
        with group_loop(ctx, layout, skip_padding=True):
            _write_partial(ctx, rows, staged, position, "r", writer)
    ctx.line("__syncthreads();")
    return staged


def _write_partial(
    ctx: EmitContext, rows: _RowPartials, staged: str, position: str, slot: str, writer: str
) -> None:
    with ctx.block(f"if ({writer})"):
        ctx.line(f"{staged}[{position}] = {rows.part}[{slot}];")
        if rows.present:
            ctx.line(f"{staged}_p[{position}] = {rows.part}_p[{slot}];")


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
