"""``dot``: ``acc + a @ b`` on the tensor cores (``mma.sync``), or on the CUDA cores.

Both operands are staged in shared memory, row-major, each row padded by 16
bytes so that a warp's fragment loads spread over the banks.  When an operand
is a window load of a 16-byte-aligned, unit-stride f16/bf16 tensor, its groups
go from global to shared memory with ``cp.async`` (no registers; a window wholly
inside its tensor takes one untested copy per group, else a boundary group is
copied lane by lane with zeros for absent lanes), ``trans(window)`` included,
which is staged as it lies; any other operand is computed into registers and
written to shared memory, a 16-byte group at a time where it can be.

With f16 or bf16 operands, an f32 accumulator and extents that ``m16n8k16``
tiles, each warp then loads its fragments with ``ldmatrix`` (``b``
transposed) and issues one ``mma.sync`` per 16x8 tile and k-step; the result
stays in the accumulator fragments (``MmaLayout``), so a ``for`` loop that
carries ``acc = dot(a, b, acc)`` keeps it in registers from one iteration to
the next.  Other dtypes and shapes take a plain loop over k per result lane.

On sm_90a a pipelined k-loop (dot_loop.py) whose tile fits whole warpgroups
multiplies with ``wgmma`` instead, from stages in the swizzled layouts its
descriptors read (wgmma.py); its result is ``MmaLayout`` with the warps stacked
down the rows (``result_layout`` decides, so the accumulator is held that way).

Absent lanes of ``a`` and ``b`` are staged as zeros.  A result lane is absent
only when no k has both ``a[m, k]`` and ``b[k, n]`` present (and where ``acc``
is absent).  For window loads presence is a product of per-axis bounds, so the
test is a few comparisons; otherwise the present k of each row of ``a`` and
column of ``b`` are bit sets in shared memory, and a lane tests whether its two
sets meet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from phobos.compile.codegen import memory, wgmma
from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.conversions import to_layout
from phobos.compile.codegen.dot_pairing import count_dot
from phobos.compile.codegen.dtypes import INDEX_CTYPE, byte_size, ctype
from phobos.compile.codegen.lanes import (
    all_lanes,
    declare_coords,
    declare_tile,
    group_loop,
    lane_loop,
    mask_lane,
    mask_word,
    set_mask_lane,
)
from phobos.compile.codegen.layout import (
    VECTOR_BYTES,
    AnyLayout,
    Layout,
    MmaLayout,
    mma_shape_ok,
)
from phobos.compile.codegen.signature import TensorAccess
from phobos.compile.codegen.values import TileValue, and_masks
from phobos.compile.ir import nodes as ir

_TENSOR_CORE_DTYPES = ("f16", "bf16")
_PAD = 8  # elements of row padding (16 bytes of f16/bf16)

Operand = Callable[[ir.Expr], TileValue]
Indices = Callable[[tuple[ir.TensorIndex, ...]], list[memory.AxisIndex]]


def result_layout(ctx: EmitContext, dot: ir.Dot) -> AnyLayout:
    """Where ``dot``'s result lives: accumulator fragments when the tensor cores do it."""
    (m, k), n = dot.a.type.shape, dot.type.shape[1]
    tensor_cores = dot.a.type.dtype in _TENSOR_CORE_DTYPES and dot.type.dtype == "f32"
    if tensor_cores and mma_shape_ok(m, n, k):
        warpgroups = (
            wgmma.fits(ctx.arch, ctx.threads, m, n, k)
            and copyable(ctx, dot.a)
            and copyable(ctx, dot.b)
        )
        return MmaLayout(dot.type.shape, ctx.threads, warpgroups)
    return ctx.layout(dot.type.shape)


@dataclass(frozen=True)
class Presence:
    """Which result lanes are present: ``lane``, per lane; ``always``, when known, a
    block-uniform condition under which every lane is (whole windows, no absent lane in
    the registers staged), so the usual block sets whole presence words at once."""

    lane: str
    always: str | None = None


@dataclass(frozen=True)
class Staged:
    """``a[m * a_row + k]`` and ``b[k * b_row + n]`` in shared memory.

    ``b_transposed``: ``b`` is held as its transpose, ``b[n * b_row + k]``: the
    operand ``trans(t)`` staged as ``t`` lies, which ``ldmatrix`` (not
    transposed) reads straight into ``b`` fragments.
    """

    a: str
    b: str
    a_row: int
    b_row: int
    b_transposed: bool = False

    def b_at(self, k: str, n: str) -> str:
        """The shared-memory element ``b[k, n]``."""
        if self.b_transposed:
            return f"{self.b}[{n} * {self.b_row} + {k}]"
        return f"{self.b}[{k} * {self.b_row} + {n}]"


def emit_dot(ctx: EmitContext, node: ir.Dot, operand: Operand, indices: Indices) -> TileValue:
    layout = result_layout(ctx, node)
    if isinstance(layout, MmaLayout):
        count_dot(ctx, layout.repeats * layout.vec)
    # The accumulator first: a layout change stages it through the same shared buffer.
    outer, ctx.target_layout = ctx.target_layout, layout
    acc = to_layout(ctx, operand(node.acc), layout)
    ctx.target_layout = outer
    (m, k), n = node.a.type.shape, node.type.shape[1]
    dtype = node.a.type.dtype
    b_source = _transposed_source(node.b)
    transposed = b_source is not None
    a_bytes, b_bytes = operand_bytes(ctx, node, transposed)
    b_row = k + _PAD if transposed else n + _PAD
    a_load, b_load = _reloaded(ctx, node.a), _reloaded(ctx, b_source or node.b)
    if copyable(ctx, a_load) and copyable(ctx, b_load):
        assert isinstance(a_load, ir.Load) and isinstance(b_load, ir.Load)
        a_idx, b_idx = indices(a_load.indices), indices(b_load.indices)
        scratch = ctx.need_scratch(a_bytes + b_bytes)
        staged = _buffers(ctx, dtype, scratch, a_bytes, k + _PAD, b_row, transposed)
        a_access, b_access = ctx.access[a_load.tensor.name], ctx.access[b_load.tensor.name]
        b_shape = (n, k) if transposed else (k, n)
        a_place, b_place = memory.padded_rows(staged.a_row), memory.padded_rows(b_row)
        copy_window(ctx, a_access, a_idx, ctx.layout((m, k)), staged.a, a_place)
        copy_window(ctx, b_access, b_idx, ctx.layout(b_shape), staged.b, b_place)
        ctx.line("phobos::copy_async_wait();")
        ctx.line("__syncthreads();")
        partial = a_load.type.partial or b_load.type.partial
        present = None
        if partial:
            some = window_overlap(ctx, a_access, a_idx, b_access, b_idx, k, transposed)
            lanes = window_lanes(a_access, a_idx, b_access, b_idx, transposed)
            a_rows = _window_axes(a_idx)[0]
            b_cols = _window_axes(b_idx)[0 if transposed else 1]
            rows, cols = _inside(a_access, a_idx, a_rows), _inside(b_access, b_idx, b_cols)
            present = Presence(f"({some} && {lanes})", f"{some} && {rows} && {cols}")
    else:
        a_copy, b_copy = _copied(ctx, a_load, indices), _copied(ctx, b_load, indices)
        a = operand(node.a) if a_copy is None else a_copy
        b = operand(b_source or node.b) if b_copy is None else b_copy
        present, staged = _stage_through_registers(
            ctx, (m, k, n), a, b, a_bytes, b_bytes, b_transposed=transposed
        )
    return product(ctx, node, layout, staged, acc, present)


@dataclass(frozen=True)
class Copied:
    """An operand that a window load gives: copied by ``cp.async``, never in registers."""

    access: TensorAccess
    indices: list[memory.AxisIndex]
    partial: bool


def _copied(ctx: EmitContext, e: ir.Expr, indices: Indices) -> Copied | None:
    if not copyable(ctx, e):
        return None
    assert isinstance(e, ir.Load)
    return Copied(ctx.access[e.tensor.name], indices(e.indices), e.type.partial)


def copy_window(
    ctx: EmitContext,
    access: TensorAccess,
    indices: list[memory.AxisIndex],
    layout: Layout,
    buffer: str,
    place: memory.SharedPlace,
) -> None:
    """A window into shared memory ``buffer`` (group (c0, c1) at ``place``) with ``cp.async``.

    When the whole window lies inside the tensor and its rows start on 16 bytes
    (a block-uniform test), every group is one ``cp.async`` with no test of its
    own; otherwise each group is tested (``memory.copy_tile_async``), the
    boundary ones copied lane by lane with zeros for absent lanes.
    """
    whole = ctx.fresh("whole")
    ctx.line(f"const bool {whole} = {_whole_and_aligned(access, indices)};")
    with ctx.block(f"if ({whole})"):
        memory.order_accesses(ctx, access)
        with group_loop(ctx, layout, skip_padding=True):
            start = len(ctx.lines)
            group = _group_starts(indices)
            pointer = f"{access.pointer} + ({memory.element_offset(access, group)})"
            ctx.line(f"phobos::copy_async_16({buffer} + {place('c0', 'c1')}, {pointer});")
            declare_coords(ctx, layout, start, "0")
    with ctx.block("else"):
        memory.copy_tile_async(ctx, access, indices, layout, buffer, place)


def _group_starts(indices: list[memory.AxisIndex]) -> list[str]:
    """Each tensor axis's index for a group's first lane: window starts plus ``c0``, ``c1``."""
    out, tile_axis = [], 0
    for index in indices:
        if index.length is None:
            out.append(index.start)
        else:
            out.append(f"{index.start} + {INDEX_CTYPE}(c{tile_axis})")
            tile_axis += 1
    return out


def _whole_and_aligned(access: TensorAccess, indices: list[memory.AxisIndex]) -> str:
    """Every lane of the window inside the tensor, and every row's first lane on 16 bytes.

    Groups are 16 bytes along the unit-stride last axis, so they are aligned
    when the window's first element is and the row stride is a whole number of
    groups.
    """
    terms = []
    for axis, index in enumerate(indices):
        extent = access.extent(axis)
        if index.length is None:
            terms.append(f"phobos::below<{INDEX_CTYPE}>({index.start}, {extent})")
        else:
            terms.append(f"{index.start} >= 0 && {index.start} <= {extent} - {index.length}")
    rows = next(axis for axis, index in enumerate(indices) if index.length is not None)
    first = memory.element_offset(access, [index.start for index in indices])
    terms.append(f"phobos::is_aligned<16>({access.pointer} + ({first}))")
    terms.append(f"{access.stride(rows)} % {_GROUP_LANES} == 0")
    return " && ".join(terms)


_GROUP_LANES = 8  # 16-bit lanes in one 16-byte cp.async group


def operand_bytes(ctx: EmitContext, node: ir.Dot, b_transposed: bool = False) -> tuple[int, int]:
    """Bytes of the staged ``a`` and ``b`` (rows padded, each rounded to 16)."""
    (m, k), n = node.a.type.shape, node.type.shape[1]
    size = byte_size(node.a.type.dtype, ctx.index_width)
    b_elements = n * (k + _PAD) if b_transposed else k * (n + _PAD)
    return _round16(m * (k + _PAD) * size), _round16(b_elements * size)


def _reloaded(ctx: EmitContext, e: ir.Expr) -> ir.Expr:
    """What a read of a reloaded tile (``reload.py``) emits again: its definition."""
    while isinstance(e, ir.Read) and e.var.name in ctx.reloads:
        e = ctx.reloads[e.var.name]
    return e


def copyable(ctx: EmitContext, e: ir.Expr) -> bool:
    """A window load that ``cp.async`` can move group by group (16 bytes per group)."""
    if not isinstance(e, ir.Load) or e.type.dtype not in _TENSOR_CORE_DTYPES:
        return False
    access = ctx.access[e.tensor.name]
    last = e.indices[-1]
    windows = [i for i in e.indices if isinstance(i, ir.WindowIndex)]
    return (
        isinstance(last, ir.WindowIndex)
        and len(windows) == 2
        and access.unit_stride
        and access.align >= 16
        and ctx.layout(e.type.shape).vec == 8
    )


def _buffers(
    ctx: EmitContext,
    dtype: str,
    scratch: str,
    a_bytes: int,
    a_row: int,
    b_row: int,
    b_transposed: bool = False,
    a_name: str | None = None,
) -> Staged:
    """The two operands' buffers in ``scratch``, after a barrier (earlier readers of it are
    done) unless ``a_name``, the ``a`` buffer's name, was taken at a barrier just passed
    (``_stage_through_registers``' vote)."""
    c = ctype(dtype)
    sa, sb = a_name or ctx.fresh("dot_a"), ctx.fresh("dot_b")
    if a_name is None:
        ctx.line("__syncthreads();")
    ctx.line(f"{c}* {sa} = reinterpret_cast<{c}*>({scratch});")
    ctx.line(f"{c}* {sb} = reinterpret_cast<{c}*>({scratch} + {a_bytes});")
    return Staged(sa, sb, a_row, b_row, b_transposed)


def _transposed_source(e: ir.Expr) -> ir.Expr | None:
    """The tile under ``trans(...)``, staged as it lies: ``b`` held transposed (``Staged``).

    ``dot(q, trans(k))`` then stores ``k``'s rows as they are (16-byte groups,
    or ``cp.async`` from a window) instead of moving lanes between threads (a
    layout conversion: two barriers and a shared-memory round trip per lane)
    or scattering them one by one to swapped coordinates.
    """
    if isinstance(e, ir.Transpose) and all(extent > 1 for extent in e.type.shape):
        return e.operand
    return None


def _stage_through_registers(
    ctx: EmitContext,
    mkn: tuple[int, int, int],
    a: TileValue | Copied,
    b: TileValue | Copied,
    a_bytes: int,
    b_bytes: int,
    b_transposed: bool = False,
) -> tuple[Presence | None, Staged]:
    """Write the operands' lanes to shared memory; with absent lanes, also their k bit sets.

    At most one operand may be ``Copied`` (a window): it goes by ``cp.async``
    while the other's lanes are stored, and its k range (block-uniform) stands
    in for its bit sets.  ``b_transposed``: ``b`` holds the transpose of the
    operand, ``[n, k]``.

    The bit sets are built with shared-memory atomics that many threads aim at
    the same word, so they are built only when some lane of a register operand
    is absent: one block-wide vote (``__syncthreads_and``) finds the usual case,
    every lane present, where the result's presence is the accumulator's.
    """
    m, k, n = mkn
    words = -(-k // 64)
    values = [v for v in (a, b) if isinstance(v, TileValue)]
    masked = any(v.mask is not None for v in values)
    bits_bytes = (m + n) * words * 8 if masked else 0
    scratch = ctx.need_scratch(a_bytes + b_bytes + bits_bytes)
    b_row = k + _PAD if b_transposed else n + _PAD
    voted = ctx.fresh("dot_a") if masked else None
    if voted is not None:  # the vote is a barrier: earlier readers of the buffer are done
        _vote_full(ctx, tuple(values), f"{voted}_full")
    dtype = values[0].dtype
    staged = _buffers(ctx, dtype, scratch, a_bytes, k + _PAD, b_row, b_transposed, voted)
    full = f"{staged.a}_full"
    for copied, buffer, row, shape in (
        (a, staged.a, staged.a_row, (m, k)),
        (b, staged.b, staged.b_row, (n, k) if b_transposed else (k, n)),
    ):
        if isinstance(copied, Copied):
            place = memory.padded_rows(row)
            copy_window(ctx, copied.access, copied.indices, ctx.layout(shape), buffer, place)
    a_bits = f"{staged.a}_bits"
    b_bits = f"{staged.b}_bits"
    if masked:
        offset = a_bytes + b_bytes
        ctx.line(f"phobos::u64* {a_bits} = reinterpret_cast<phobos::u64*>({scratch} + {offset});")
        if isinstance(b, TileValue):
            ctx.line(f"phobos::u64* {b_bits} = {a_bits} + {m * words};")
    # a[m, k]: row c0, k c1; b[k, n]: k c0, column c1 (transposed: column c0, k c1).
    b_owner, b_k = ("c0", "c1") if b_transposed else ("c1", "c0")
    sides = [
        (value, buffer, row, bits, owner, k_coord)
        for value, buffer, row, bits, owner, k_coord in (
            (a, staged.a, staged.a_row, a_bits, "c0", "c1"),
            (b, staged.b, staged.b_row, b_bits, b_owner, b_k),
        )
        if isinstance(value, TileValue)
    ]
    if masked:  # one block-uniform branch: the usual block neither clears nor marks
        with ctx.block(f"if (!{full})"):
            with ctx.block(f"for (int j = tid; j < {(m + n) * words}; j += {ctx.threads})"):
                ctx.line(f"{a_bits}[j] = 0;")
            ctx.line("__syncthreads();")
            for value, _, _, bits, owner, k_coord in sides:
                word = f"&{bits}[{owner} * {words} + {k_coord} / 64]"
                mark = f"phobos::set_bit({word}, {k_coord} % 64);"
                body = [mark if value.mask is None else f"if ({value.mask}) {mark}"]
                all_lanes(ctx, value.layout, body, skip_padding=True)
    for value, buffer, row, *_ in sides:
        zero = f"{ctype(value.dtype)}()"
        lane = value.lane if value.mask is None else f"({value.mask} ? {value.lane} : {zero})"
        if _stores_whole_groups(ctx, value, row):
            _store_groups(ctx, value, lane, f"{buffer} + c0 * {row} + c1")
        else:
            all_lanes(
                ctx, value.layout, [f"{buffer}[c0 * {row} + c1] = {lane};"], skip_padding=True
            )
    if len(values) < 2:
        ctx.line("phobos::copy_async_wait();")
    ctx.line("__syncthreads();")
    if len(values) == 2:
        if not masked:
            return None, staged
        terms = [
            f"({a_bits}[c0 * {words} + {w}] & {b_bits}[c1 * {words} + {w}])" for w in range(words)
        ]
        return Presence(f"({full} || ((" + " | ".join(terms) + ") != 0))", full), staged
    if isinstance(a, Copied):  # its rows are the result's rows: b's bits meet its k range
        copied, (lanes, k_axis), bits, owner, coord = a, _window_axes(a.indices), b_bits, "c1", "c0"
    else:
        assert isinstance(b, Copied)
        axes = _window_axes(b.indices)
        copied, bits, owner, coord = b, a_bits, "c0", "c1"
        k_axis, lanes = axes[::-1] if b_transposed else axes
    if not copied.partial and not masked:
        return None, staged
    lo, hi, some = _window_k_range(ctx, copied.access, copied.indices, k_axis, k)
    lane = f"{copied.indices[lanes].start} + {INDEX_CTYPE}({coord})"
    own = _below(lane, copied.access.extent(lanes))
    present = f"{some} && {own}"
    always = f"{some} && {_inside(copied.access, copied.indices, lanes)}"
    if masked:
        ranges = [
            f"({bits}[{owner} * {words} + {w}] & phobos::bit_range({lo} - {64 * w}, {hi} - {64 * w}))"
            for w in range(words)
        ]
        present += f" && ({full} || ((" + " | ".join(ranges) + ") != 0))"
        always += f" && {full}"
    return Presence(f"({present})", always), staged


def _window_k_range(
    ctx: EmitContext,
    access: TensorAccess,
    indices: list[memory.AxisIndex],
    k_axis: int,
    k: int,
) -> tuple[str, str, str]:
    """The k the window holds, ``lo .. hi - 1``, and a block-uniform flag: some k, and the
    window's point indices inside the tensor."""
    lo, hi, some = ctx.fresh("s"), ctx.fresh("s"), ctx.fresh("s")
    start, extent = indices[k_axis].start, access.extent(k_axis)
    ctx.line(f"{INDEX_CTYPE} {lo} = {INDEX_CTYPE}(0);")
    ctx.line(f"if (-{start} > {lo}) {lo} = -{start};")
    ctx.line(f"{INDEX_CTYPE} {hi} = {INDEX_CTYPE}({k});")
    ctx.line(f"if ({extent} - {start} < {hi}) {hi} = {extent} - {start};")
    ctx.line(f"const bool {some} = {lo} < {hi} && {_points_inside(access, indices)};")
    return lo, hi, some


def _stores_whole_groups(ctx: EmitContext, value: TileValue, row: int) -> bool:
    """Each of the value's groups is one aligned 16-byte run of a staged row.

    A plain layout's group is ``vec`` lanes along the last axis, the staged
    row's contiguous one; when that is 16 bytes and rows are whole 16-byte
    runs, a thread stores each group with one vector store instead of a
    store per lane.
    """
    layout = value.layout
    size = byte_size(value.dtype, ctx.index_width)
    return (
        isinstance(layout, Layout)
        and layout.vec * size == VECTOR_BYTES
        and (row * size) % VECTOR_BYTES == 0
    )


def _store_groups(ctx: EmitContext, value: TileValue, lane: str, address: str) -> None:
    """Each group of ``value`` gathered lane by lane, then stored at once."""
    layout = value.layout
    assert isinstance(layout, Layout)
    group = ctx.fresh("group")
    with group_loop(ctx, layout, skip_padding=True):
        start = len(ctx.lines)
        ctx.line(f"{ctype(value.dtype)} {group}[{layout.vec}];")
        with lane_loop(ctx, layout):
            ctx.line(f"{group}[i] = {lane};")
        ctx.line(f"phobos::store_vectors<{VECTOR_BYTES}>({address}, {group});")
        declare_coords(ctx, layout, start, "0")


def _vote_full(ctx: EmitContext, values: tuple[TileValue, ...], full: str) -> None:
    """``full``: block-uniform, true when every lane of every value is present."""
    mine = ctx.fresh("mine")
    ctx.line(f"bool {mine} = true;")
    for value in values:
        if value.word is not None and value.layout.vec < 32:
            every = f"{(1 << value.layout.vec) - 1}u"
            with group_loop(ctx, value.layout, skip_padding=True):
                ctx.line(f"{mine} = {mine} && ({value.word} & {every}) == {every};")
        elif value.mask is not None:
            all_lanes(ctx, value.layout, [f"{mine} = {mine} && {value.mask};"], skip_padding=True)
    ctx.line(f"const bool {full} = __syncthreads_and({mine}) != 0;")


def window_meet(
    ctx: EmitContext,
    a_access: TensorAccess,
    a_idx: list[memory.AxisIndex],
    b_access: TensorAccess,
    b_idx: list[memory.AxisIndex],
    k: int,
    b_transposed: bool = False,
) -> str:
    """Presence of a result lane when both operands are window loads.

    ``a[m, k]`` is present when its row and the k index are inside ``a``;
    ``b[k, n]`` when the k index and its column are inside ``b``.  Some k works
    for both when the two k ranges overlap (a block-uniform test).
    ``b_transposed``: ``b_idx`` is the window of ``trans(b)``, ``[n, k]``.
    """
    some = window_overlap(ctx, a_access, a_idx, b_access, b_idx, k, b_transposed)
    lanes = window_lanes(a_access, a_idx, b_access, b_idx, b_transposed)
    return f"({some} && {lanes})"


def window_overlap(
    ctx: EmitContext,
    a_access: TensorAccess,
    a_idx: list[memory.AxisIndex],
    b_access: TensorAccess,
    b_idx: list[memory.AxisIndex],
    k: int,
    b_transposed: bool = False,
) -> str:
    """A block-uniform flag: the two windows' k ranges meet inside both tensors."""
    _, a_ks = _window_axes(a_idx)
    b_ks = _window_axes(b_idx)[1 if b_transposed else 0]
    lo, hi, some = ctx.fresh("s"), ctx.fresh("s"), ctx.fresh("s")
    index = INDEX_CTYPE
    a_k, b_k = a_idx[a_ks].start, b_idx[b_ks].start
    ctx.line(f"{index} {lo} = {index}(0);")
    ctx.line(f"if (-{a_k} > {lo}) {lo} = -{a_k};")
    ctx.line(f"if (-{b_k} > {lo}) {lo} = -{b_k};")
    ctx.line(f"{index} {hi} = {index}({k});")
    ctx.line(f"if ({a_access.extent(a_ks)} - {a_k} < {hi}) {hi} = {a_access.extent(a_ks)} - {a_k};")
    ctx.line(f"if ({b_access.extent(b_ks)} - {b_k} < {hi}) {hi} = {b_access.extent(b_ks)} - {b_k};")
    a_points = _points_inside(a_access, a_idx)
    b_points = _points_inside(b_access, b_idx)
    ctx.line(f"const bool {some} = {lo} < {hi} && {a_points} && {b_points};")
    return some


def window_lanes(
    a_access: TensorAccess,
    a_idx: list[memory.AxisIndex],
    b_access: TensorAccess,
    b_idx: list[memory.AxisIndex],
    b_transposed: bool = False,
) -> str:
    """A result lane's own part of its presence: its row inside ``a``, its column inside ``b``."""
    a_rows, _ = _window_axes(a_idx)
    b_cols = _window_axes(b_idx)[0 if b_transposed else 1]
    index = INDEX_CTYPE
    row = _below(f"{a_idx[a_rows].start} + {index}(c0)", a_access.extent(a_rows))
    col = _below(f"{b_idx[b_cols].start} + {index}(c1)", b_access.extent(b_cols))
    return f"{row} && {col}"


def _window_axes(indices: list[memory.AxisIndex]) -> tuple[int, int]:
    first, second = (axis for axis, index in enumerate(indices) if index.length is not None)
    return first, second


def _inside(access: TensorAccess, indices: list[memory.AxisIndex], axis: int) -> str:
    """Block-uniform: every index of the window along ``axis`` is inside the tensor."""
    start, length = indices[axis].start, indices[axis].length
    return f"{start} >= 0 && {start} <= {access.extent(axis)} - {length}"


def _points_inside(access: TensorAccess, indices: list[memory.AxisIndex]) -> str:
    terms = [
        _below(index.start, access.extent(axis))
        for axis, index in enumerate(indices)
        if index.length is None
    ]
    return " && ".join(terms) or "true"


def _below(index: str, extent: str) -> str:
    return f"phobos::below<{INDEX_CTYPE}>({index}, {extent})"


def product(
    ctx: EmitContext,
    node: ir.Dot,
    layout: AnyLayout,
    staged: Staged | wgmma.Stage,
    acc: TileValue,
    present: Presence | None,
) -> TileValue:
    """``acc + a @ b`` from the staged operands, with its presence (``Presence``)."""
    k = node.a.type.shape[1]
    c = ctype(node.type.dtype)
    name = ctx.fresh()
    mask = and_masks(acc.mask, present.lane if present else None)
    declare_tile(ctx, c, name, layout, mask is not None)
    lines = []
    if isinstance(layout, MmaLayout):
        all_lanes(ctx, layout, [f"{name}[r][i] = {acc.lane};"])
        if isinstance(staged, wgmma.Stage):
            wgmma.multiply(ctx, layout, name, staged, node.a.type.dtype, k)
        else:
            _mma(ctx, layout, name, staged, node.a.type.dtype, k)
    else:
        assert isinstance(layout, Layout) and isinstance(staged, Staged)
        wide = "f32" if node.type.dtype in _TENSOR_CORE_DTYPES else node.type.dtype
        w = ctype(wide)
        lines = [
            f"{w} total = phobos::cast<{w}>({acc.lane});",
            "#pragma unroll 4",
            f"for (int k = 0; k < {k}; ++k) total += "
            f"phobos::cast<{w}>({staged.a}[c0 * {staged.a_row} + k]) * "
            f"phobos::cast<{w}>({staged.b_at('k', 'c1')});",
            f"{name}[r][i] = phobos::cast<{c}>(total);",
        ]
    if mask is not None and not (present and present.always):
        lines.append(set_mask_lane(name, mask))
    if lines:
        all_lanes(ctx, layout, lines, skip_padding=True)
    if mask is not None and present and present.always:
        _set_presence(ctx, layout, name, acc, present.always, mask)
    if mask is None:
        return TileValue(node.type.dtype, layout, f"{name}[r][i]")
    return TileValue(
        node.type.dtype, layout, f"{name}[r][i]", mask_lane(name), word=mask_word(name)
    )


def _set_presence(
    ctx: EmitContext, layout: AnyLayout, name: str, acc: TileValue, always: str, mask: str
) -> None:
    """The result's presence words: the accumulator's where every lane is known present
    (``always``), else lane by lane."""
    with ctx.block(f"if ({always})"):
        if acc.word is not None:
            with group_loop(ctx, layout, skip_padding=True):
                ctx.line(f"{name}_m[r] = {acc.word};")
        elif acc.mask is not None:
            all_lanes(ctx, layout, [set_mask_lane(name, acc.mask)], skip_padding=True)
        else:
            with group_loop(ctx, layout, skip_padding=True):
                ctx.line(f"{name}_m[r] = {(1 << layout.vec) - 1}u;")
    with ctx.block("else"):
        all_lanes(ctx, layout, [set_mask_lane(name, mask)], skip_padding=True)


def _mma(
    ctx: EmitContext, layout: MmaLayout, name: str, staged: Staged, dtype: str, k: int
) -> None:
    """Each warp's tiles: fragments from shared memory, one mma.sync per tile and k-step of 16.

    With a warp grid (``MmaLayout.warp_grid``) a warp's tiles sit in rows
    ``down`` apart and columns ``across`` apart, at offsets known at compile
    time, so the k-step loads each of its rows' ``a`` fragment and each of its
    columns' ``b`` fragment once and reuses them across the warp's tiles.  A
    row's ``a`` fragment is one ``ldmatrix.x4``; two columns' ``b`` fragments
    are one ``ldmatrix.x4.trans``.
    """
    grid = layout.warp_grid
    if grid is None:
        _mma_per_tile(ctx, layout, name, staged, dtype, k)
        return
    down, across = grid
    per_warp = layout.tiles_per_row // across  # a warp's tiles in one row
    with ctx.block(""):  # a scope: a kernel may hold several dots
        ctx.line(f"const int warp_row = (tid / 32) / {across};")
        ctx.line(f"const int warp_col = (tid / 32) % {across};")
        _lane_rows(ctx)
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int kk = 0; kk < {k}; kk += 16)"):
            for row in range(layout.repeats // per_warp):
                _load_a(ctx, staged, f"fa{row}", f"({row * down} + warp_row) * 16")
            columns = range(per_warp)
            for first, second in zip(columns[::2], columns[1::2]):
                tile = f"({first * across} + warp_col + (lane_half / 8) * {across})"
                _load_b_pair(ctx, staged, f"fb{first}", f"fb{second}", tile)
            if per_warp % 2:
                last = per_warp - 1
                _load_b(ctx, staged, f"fb{last}", f"({last * across} + warp_col) * 8")
            for r in range(layout.repeats):
                operands = f"{name}[{r}], fa{r // per_warp}, fb{r % per_warp}"
                ctx.line(f"phobos::mma_16816<{ctype(dtype)}>({operands});")


def _mma_per_tile(
    ctx: EmitContext, layout: MmaLayout, name: str, staged: Staged, dtype: str, k: int
) -> None:
    """Any tiling: each tile loads its own fragments."""
    tile_row, tile_col = layout.tile()
    with ctx.block(""), group_loop(ctx, layout, skip_padding=True):
        _lane_rows(ctx)
        ctx.line(f"const int am = {tile_row} * 16;")
        ctx.line(f"const int bn = {tile_col} * 8;")
        ctx.directive("#pragma unroll")
        with ctx.block(f"for (int kk = 0; kk < {k}; kk += 16)"):
            _load_a(ctx, staged, "fa", "am")
            _load_b(ctx, staged, "fb", "bn")
            ctx.line(f"phobos::mma_16816<{ctype(dtype)}>({name}[r], fa, fb);")


def _lane_rows(ctx: EmitContext) -> None:
    """The row of a 16x16 fragment that this lane addresses for ``ldmatrix``, and its half.

    Lanes 0-15 address rows 0-15 of the fragment's first 8 columns (the k or n
    half), lanes 16-31 the same rows of the second half.
    """
    ctx.line("const int lane_row = tid % 16;")
    ctx.line("const int lane_half = ((tid / 16) % 2) * 8;")


def _load_a(ctx: EmitContext, staged: Staged, fragment: str, row: str) -> None:
    """The ``a`` fragment of rows ``row .. row + 15`` at k-step ``kk``: its four 8x8 quarters."""
    address = f"{staged.a} + ({row} + lane_row) * {staged.a_row} + kk + lane_half"
    ctx.line(f"unsigned {fragment}[4];")
    ctx.line(f"phobos::load_matrix_x4({fragment}, {address});")


def _load_b(ctx: EmitContext, staged: Staged, fragment: str, column: str) -> None:
    """The ``b`` fragment of columns ``column .. column + 7`` (k rows from lanes 0-15).

    A transposed ``b`` takes an ``ldmatrix.x4`` whose two halves are the same tile.
    """
    if staged.b_transposed:
        both = f"{fragment}_both"
        ctx.line(f"unsigned {both}[4];")
        ctx.line(f"phobos::load_matrix_x4({both}, {_transposed_b_row(staged, f'({column})')});")
        ctx.line(f"const unsigned {fragment}[2] = {{{both}[0], {both}[1]}};")
        return
    address = f"{staged.b} + (kk + lane_row) * {staged.b_row} + {column}"
    ctx.line(f"unsigned {fragment}[2];")
    ctx.line(f"phobos::load_matrix_x2_trans({fragment}, {address});")


def _load_b_pair(ctx: EmitContext, staged: Staged, first: str, second: str, tile: str) -> None:
    """Two ``b`` fragments in one ``ldmatrix.x4``: tile column ``tile`` as lanes 0-15 see
    it, and as lanes 16-31 see it (``lane_half`` may move it).

    Row-major ``b`` (``[k, n]``) is read transposed, lanes 0-15 addressing k rows.
    Transposed ``b`` (``[n, k]``) is read as it lies: lanes ``8j .. 8j + 7`` address
    the tile's 8 columns at k-half ``j % 2`` (matrix ``j`` is fragment half ``j``).
    """
    both = f"{first}_{second}"
    ctx.line(f"unsigned {both}[4];")
    if staged.b_transposed:
        ctx.line(f"phobos::load_matrix_x4({both}, {_transposed_b_row(staged, f'{tile} * 8')});")
    else:
        address = f"{staged.b} + (kk + lane_row) * {staged.b_row} + {tile} * 8"
        ctx.line(f"phobos::load_matrix_x4_trans({both}, {address});")
    ctx.line(f"const unsigned {first}[2] = {{{both}[0], {both}[1]}};")
    ctx.line(f"const unsigned {second}[2] = {{{both}[2], {both}[3]}};")


def _transposed_b_row(staged: Staged, column: str) -> str:
    """The row a lane gives ``ldmatrix`` in a transposed ``b``: lanes ``8j .. 8j + 7``
    address columns ``column .. column + 7`` at k-half ``j % 2``."""
    return f"{staged.b} + ({column} + tid % 8) * {staged.b_row} + kk + ((tid / 8) % 2) * 8"


def _round16(n: int) -> int:
    return -(-n // 16) * 16
