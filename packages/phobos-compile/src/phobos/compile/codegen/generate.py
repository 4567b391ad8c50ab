"""``generate``: one tile-IR kernel variant to CUDA C++ and its launch contract.

The kernel-wide choices are made here, before any code is emitted: the lanes
per group (one 16-byte vector of the narrowest element the kernel moves
through memory), the CTA size (the reserved value ``NUM_THREADS``, else
``layout.choose_threads``: 16 lanes a thread up to 8 warps, then up to 64
lanes a thread counting the tiles loops carry, then more warps; kernels with
``dot`` use ``choose_fragment_threads``), how many CTAs must share an SM
(``occupancy.py``: the second number of ``__launch_bounds__``), which ``let``
tiles are loaded again inside loops instead of held (``reload.py``) and the C
parameters.  The CTA size is the contract's ``block``.  Then the body is
emitted statement by statement and wrapped in the ``extern "C" __global__``
entry point, with the shared staging buffer sized to the largest conversion,
reduction or ``dot`` (static up to 48 KiB, dynamic beyond).  Variables a loop
carries are given, from their definition on, the layout their updates
produce: a ``dot`` accumulator the accumulator fragments, a running row max or
sum the row layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from phobos.compile.codegen.context import PARTIALS, PARTIALS_SLOT, SCRATCH, EmitContext
from phobos.compile.codegen.dot import result_layout
from phobos.compile.codegen.dtypes import INDEX_CTYPE, byte_size
from phobos.compile.codegen.layout import (
    MAX_THREADS,
    WARP,
    AnyLayout,
    RowLayout,
    choose_fragment_threads,
    choose_threads,
    kernel_vector_lanes,
    lanes_per_group,
)
from phobos.compile.codegen.occupancy import (
    carried_tile_sizes,
    loaded_together,
    min_ctas_per_sm,
)
from phobos.compile.codegen.reload import reloaded_tiles
from phobos.compile.codegen.signature import build_signature
from phobos.compile.codegen.specialization import Specialization
from phobos.compile.codegen.statements import emit_block
from phobos.compile.codegen.walk import walk
from phobos.compile.contract import Contract, ScalarSpec, Slot, TensorSpec
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir

RUNTIME_HEADER = "phobos_tile.cuh"
NUM_THREADS = "NUM_THREADS"
# Static shared memory stops at 48 KiB; above it the buffer is dynamic (the launcher opts in).
STATIC_SMEM_LIMIT = 48 * 1024


@dataclass(frozen=True)
class GeneratedKernel:
    source: str  # CUDA C++ including the runtime header
    entry: str  # the extern "C" __global__ function's name
    contract: Contract


def generate(kernel: ir.Kernel, spec: Specialization, arch: str) -> GeneratedKernel:
    """CUDA C++ for one variant, specialised by ``spec``, and its launch contract for ``arch``."""
    nodes = list(walk(kernel.body))
    atomics = (ir.AtomicAdd, ir.AtomicMax, ir.AtomicXchg, ir.AtomicCas)
    written = frozenset(n.tensor.name for n in nodes if isinstance(n, (ir.Store, *atomics)))
    read = frozenset(n.tensor.name for n in nodes if isinstance(n, (ir.Load, *atomics)))
    shapes = {n.type.shape for n in nodes if isinstance(getattr(n, "type", None), ir.TileT)}
    moved = [
        byte_size(n.tensor.dtype, spec.index_width)
        for n in nodes
        if isinstance(n, (ir.Load, ir.Store))
        and any(isinstance(index, ir.WindowIndex) for index in n.indices)
    ]
    kernel_vec = kernel_vector_lanes(moved)
    has_dot = any(isinstance(n, ir.Dot) for n in nodes)
    reloads = reloaded_tiles(kernel.body, written)
    carried = sum(
        size for name, size in carried_tile_sizes(kernel.body).items() if name not in reloads
    )
    largest = max((math.prod(s) for s in shapes), default=1)
    held = max(largest, loaded_together(kernel.body)) + carried
    threads = _threads(kernel, largest, shapes, kernel_vec, has_dot, held)
    ctas = min_ctas_per_sm(threads, has_dot, held)
    signature = build_signature(kernel, spec, written)
    ctx = EmitContext(
        threads, kernel_vec, spec.index_width, signature.access, read & written, arch=arch
    )
    ctx.reloads = reloads
    for var_name, layout in _carried_layouts(ctx, nodes).items():
        ctx.prefer_layout(var_name, layout)
    emit_block(ctx, kernel.body)

    entry = f"phobos_{kernel.name}"
    ctas = max(ctas, ctx.ctas_per_sm)
    source = _assemble(kernel, entry, threads, ctas, spec, signature.declarations, ctx)
    contract = _contract(kernel, spec, arch, entry, threads, ctx, read, written, signature.slots)
    return GeneratedKernel(source, entry, contract)


def _contract(
    kernel: ir.Kernel,
    spec: Specialization,
    arch: str,
    entry: str,
    threads: int,
    ctx: EmitContext,
    read: frozenset[str],
    written: frozenset[str],
    slots: tuple[Slot, ...],
) -> Contract:
    dynamic = _dynamic_scratch(ctx)
    partials = 2 * ctx.partials_bytes
    return Contract(
        kernel=kernel.name,
        entry=entry,
        arch=arch,
        index_width=spec.index_width,
        block=(threads, 1, 1),
        dynamic_smem=ctx.scratch_bytes if dynamic else 0,
        static_smem=partials + (0 if dynamic else ctx.scratch_bytes),
        values=dict(kernel.values),
        params=tuple(p.name for p in kernel.params),
        tensors=tuple(
            TensorSpec(
                name=t.name,
                dtype=t.dtype,
                dims=t.dims,
                read=t.name in read,
                written=t.name in written,
                align=spec.tensor(t.name).align,
                unit_stride=spec.tensor(t.name).unit_stride,
            )
            for t in kernel.tensors
        ),
        scalars=tuple(
            ScalarSpec(p.name, p.dtype) for p in kernel.params if isinstance(p, ir.ScalarParam)
        ),
        slots=slots,
        source_file=kernel.span.file,
    )


def _carried_layouts(ctx: EmitContext, nodes: list[object]) -> dict[str, AnyLayout]:
    """Layouts for variables a loop carries, so that its updates need no layout change.

    A ``dot`` accumulator lives in the accumulator fragments.  A variable whose
    value comes from a row reduction (a running max or sum, directly or through
    other such variables) lives with the rows' threads.
    """
    out: dict[str, AnyLayout] = {}
    bindings = [n for n in nodes if isinstance(n, (ir.Define, ir.Assign))]
    for n in bindings:
        if isinstance(n, ir.Assign) and isinstance(n.value, ir.Dot):
            out[n.var.name] = result_layout(ctx, n.value)
    rows: dict[str, AnyLayout] = {}
    changed = True
    while changed:
        changed = False
        for n in bindings:
            if n.var.name in rows or not isinstance(n.var.type, ir.TileT):
                continue
            layout = _row_source(ctx, n.value, n.var.type.shape, rows)
            if layout is not None:
                rows[n.var.name] = layout
                changed = True
    for n in bindings:
        if n.var.mutable and n.var.name in rows:
            out.setdefault(n.var.name, rows[n.var.name])
    return out


def _row_source(
    ctx: EmitContext, value: ir.Expr, shape: tuple[int, ...], rows: dict[str, AnyLayout]
) -> AnyLayout | None:
    """The row layout ``value`` (of ``shape``) takes from a row reduction inside it, if any."""
    for inner in walk((value,)):
        if isinstance(inner, ir.Read) and inner.var.name in rows and inner.type.shape == shape:
            return rows[inner.var.name]
        if (
            isinstance(inner, ir.Reduce)
            and isinstance(inner.type, ir.TileT)
            and inner.type.shape == shape
            and inner.axis == len(inner.operand.type.shape) - 1
        ):
            return RowLayout(ctx.layout(inner.operand.type.shape))
    return None


def _threads(
    kernel: ir.Kernel,
    largest: int,
    shapes: set[tuple[int, ...]],
    kernel_vec: int,
    has_dot: bool,
    held: int,
) -> int:
    values = dict(kernel.values)
    if NUM_THREADS not in values:
        if has_dot:
            groups = [math.prod(s) // lanes_per_group(s, kernel_vec) for s in shapes]
            return choose_fragment_threads(groups)
        return choose_threads(largest, held)
    chosen = values[NUM_THREADS]
    if chosen <= 0 or chosen % WARP or chosen > MAX_THREADS:
        raise error(
            kernel.span,
            f"NUM_THREADS is {chosen}; it must be a multiple of {WARP} from {WARP} to {MAX_THREADS}",
            help="NUM_THREADS sets the CTA size; leave it out to let the compiler choose",
        )
    return chosen


def _dynamic_scratch(ctx: EmitContext) -> bool:
    """Static shared memory stops at 48 KiB: a larger staging buffer is dynamic."""
    return ctx.scratch_bytes + 2 * ctx.partials_bytes > STATIC_SMEM_LIMIT


def _assemble(
    kernel: ir.Kernel,
    entry: str,
    threads: int,
    ctas: int,
    spec: Specialization,
    declarations: tuple[str, ...],
    ctx: EmitContext,
) -> str:
    values = ", ".join(f"{k}={v}" for k, v in kernel.values) or "none"
    bounds = f"{threads}, {ctas}" if ctas > 1 else f"{threads}"
    head = [
        f"// Generated by phobos-compile from kernel '{kernel.name}' ({values}).",
        f'#include "{RUNTIME_HEADER}"',
        "",
        f"typedef phobos::i{spec.index_width} {INDEX_CTYPE};",
        "",
        *(text + "\n" for text in ctx.helpers.values()),
        f'extern "C" __global__ void __launch_bounds__({bounds})',
        f"{entry}({', '.join(declarations)}) {{",
        "    const int tid = threadIdx.x;",
    ]
    if _dynamic_scratch(ctx):
        head.append(f"    extern __shared__ __align__(16) unsigned char {SCRATCH}[];")
    elif ctx.scratch_bytes:
        head.append(f"    __shared__ __align__(16) unsigned char {SCRATCH}[{ctx.scratch_bytes}];")
    if ctx.partials_bytes:
        head.append(f"    constexpr int {PARTIALS_SLOT} = {ctx.partials_bytes};")
        head.append(f"    __shared__ __align__(16) unsigned char {PARTIALS}[2 * {PARTIALS_SLOT}];")
    return "\n".join(head + ctx.lines + ["}", ""])
