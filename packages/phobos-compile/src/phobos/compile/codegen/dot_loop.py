"""The matmul k-loop, software-pipelined: later k-steps' tiles land while this one multiplies.

``for k in a .. b step s { acc = dot(x[m :+ BM, k :+ BK], y[k :+ BK, n :+ BN], acc) }``
is recognised when both operands are window loads that ``cp.async`` can move
and the product runs on the tensor cores.  ``S`` shared-memory stages
(``pipeline_stages``: 2 to 4, as shared memory allows) rotate: before the loop
the first ``S - 1`` k-steps' copies are issued, one commit group each.  Each iteration waits until
only the newest ``S - 2`` groups are pending (its own stage has landed),
synchronises the block (so the copies are visible and everyone is done with
the stage the previous iteration read), issues the copies of the k-step
``S - 1`` ahead into that stage, and only then runs its ``mma.sync`` steps, so
global-memory latency hides behind ``S - 1`` iterations of tensor-core work.
A later step's windows are the operands' own index expressions evaluated in a
scope where the loop variable is rebound to that step's value.  With ``wgmma``
(sm_90a, ``MmaLayout.warpgroups``) the stages are swizzled instead of padded,
start on 1024 bytes, and are fenced for the async proxy once landed (wgmma.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from phobos.compile.codegen import memory, wgmma
from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.dot import (
    Indices,
    Operand,
    Presence,
    Staged,
    copy_window,
    copyable,
    operand_bytes,
    product,
    result_layout,
    window_lanes,
    window_meet,
    window_overlap,
)
from phobos.compile.codegen.dtypes import ctype
from phobos.compile.codegen.layout import MmaLayout
from phobos.compile.codegen.occupancy import MAX_REGISTERS, PAIRED_CTAS, REGISTERS_PER_SM
from phobos.compile.codegen.values import TileValue, and_masks, variable_name
from phobos.compile.codegen.walk import walk
from phobos.compile.ir import nodes as ir

Assign = Callable[[ir.Variable, TileValue], None]


def pipelined_dot(ctx: EmitContext, loop: ir.For) -> ir.Dot | None:
    """The loop's dot, when the loop is exactly ``acc = dot(window, window, acc)``."""
    if len(loop.body) != 1 or not isinstance(loop.body[0], ir.Assign):
        return None
    assign = loop.body[0]
    dot = assign.value
    if not isinstance(dot, ir.Dot) or not isinstance(dot.acc, ir.Read):
        return None
    if dot.acc.var.name != assign.var.name:
        return None
    if not isinstance(result_layout(ctx, dot), MmaLayout):
        return None
    return dot if copyable(ctx, dot.a) and copyable(ctx, dot.b) else None


def emit_pipelined_loop(
    ctx: EmitContext,
    loop: ir.For,
    dot: ir.Dot,
    operand: Operand,
    indices: Indices,
    scalar: Callable[[ir.Expr], str],
    assign: Assign,
) -> None:
    var = variable_name(loop.var.name)
    c = ctype(loop.var.type.dtype)
    start, stop, step = ctx.fresh("s"), ctx.fresh("s"), ctx.fresh("s")
    ctx.line(f"const {c} {start} = {scalar(loop.start)};")
    ctx.line(f"const {c} {stop} = {scalar(loop.stop)};")
    ctx.line(f"const {c} {step} = {scalar(loop.step)};")
    ctx.facts.define_loop(loop.var, loop.start, loop.step)

    (m, k), n = dot.a.type.shape, dot.type.shape[1]
    layout = result_layout(ctx, dot)
    assert isinstance(layout, MmaLayout)
    warpgroups = layout.warpgroups  # wgmma from swizzled stages, else mma.sync from padded rows
    if warpgroups:
        a_bytes, b_bytes = wgmma.stage_bytes(m, n, k)
        a_staged, b_staged = wgmma.operands(m, n, k)
        a_place, b_place = a_staged.offset, b_staged.offset
    else:
        a_bytes, b_bytes = operand_bytes(ctx, dot)
        a_place, b_place = memory.padded_rows(k + 8), memory.padded_rows(n + 8)
    stage_bytes = a_bytes + b_bytes
    paired = blocks_pair(ctx.threads, m * n // ctx.threads)
    stages = pipeline_stages(stage_bytes, ctx.arch, paired)
    if paired and REGISTERS_PER_SM // (PAIRED_CTAS * ctx.threads) < MAX_REGISTERS:
        ctx.ctas_per_sm = max(ctx.ctas_per_sm, PAIRED_CTAS)  # ptxas keeps to the pair's share
    t = ctype(dot.a.type.dtype)
    if warpgroups:
        scratch = ctx.fresh("stages")
        ctx.line(
            f"unsigned char* const {scratch} = phobos::align_shared<{wgmma.STAGE_ALIGN}>("
            f"{ctx.need_scratch(stages * stage_bytes + wgmma.STAGE_ALIGN)});"
        )
    else:
        scratch = ctx.need_scratch(stages * stage_bytes)
    a_access, b_access = ctx.access[dot.a.tensor.name], ctx.access[dot.b.tensor.name]

    def a_of(stage: str) -> str:
        return f"reinterpret_cast<{t}*>({scratch} + {stage} * {stage_bytes})"

    def b_of(stage: str) -> str:
        return f"reinterpret_cast<{t}*>({scratch} + {stage} * {stage_bytes} + {a_bytes})"

    def issue(at: str, stage: str) -> None:
        """Copies of the operands' windows for loop value ``at`` (if the loop gets there)
        into ``stage``, closed as one commit group (empty past the loop's end)."""
        with ctx.block(f"if ({at} < {stop})"):
            ctx.line(f"const {c} {var} = {at};")
            a_idx, b_idx = indices(dot.a.indices), indices(dot.b.indices)
            copy_window(ctx, a_access, a_idx, ctx.layout((m, k)), a_of(stage), a_place)
            copy_window(ctx, b_access, b_idx, ctx.layout((k, n)), b_of(stage), b_place)
        ctx.line("phobos::copy_async_commit();")

    partial = dot.a.type.partial or dot.b.type.partial
    hoisted = _lanes_invariant(dot, loop.var)
    meet = ctx.fresh("meet")
    if partial and hoisted:
        ctx.line(f"bool {meet} = true;  // every k-step's windows met")
    ctx.line("__syncthreads();")  # earlier users of the buffer are done
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int first = 0; first < {stages - 1}; ++first)"):
        issue(f"{start} + first * {step}", "first")
    read = ctx.fresh("stage")
    ctx.line(f"int {read} = 0;  // the stage this iteration multiplies")
    ctx.forget_partials()
    with ctx.block(f"for ({c} {var} = {start}; {var} < {stop}; {var} += {step})"):
        ctx.line_info(loop.body[0].span)
        ctx.line(f"phobos::copy_async_wait_pending<{stages - 2}>();")
        if warpgroups:  # the landed copies, made visible to wgmma's (async) proxy
            ctx.line("phobos::fence_async_shared();")
        ctx.line("__syncthreads();")
        current_a, current_b = ctx.fresh("dot_a"), ctx.fresh("dot_b")
        ctx.line(f"{t}* const {current_a} = {a_of(read)};")
        ctx.line(f"{t}* const {current_b} = {b_of(read)};")
        write, ahead = ctx.fresh("stage"), ctx.fresh("s")
        ctx.line(f"const int {write} = {read} == 0 ? {stages - 1} : {read} - 1;")
        ctx.line(f"const {c} {ahead} = {var} + {stages - 1} * {step};")
        issue(ahead, write)
        acc = operand(dot.acc)
        present = None
        if partial and hoisted:
            a_idx, b_idx = _indices_used(ctx, indices, dot)
            some = window_overlap(ctx, a_access, a_idx, b_access, b_idx, k)
            ctx.line(f"{meet} = {meet} && {some};")
        elif partial:
            a_idx, b_idx = indices(dot.a.indices), indices(dot.b.indices)
            present = Presence(window_meet(ctx, a_access, a_idx, b_access, b_idx, k))
        staged: Staged | wgmma.Stage = (
            wgmma.Stage(current_a, current_b, a_staged, b_staged)
            if warpgroups
            else Staged(current_a, current_b, k + 8, n + 8)
        )
        if hoisted:  # the accumulator's presence is left as it is until the loop ends
            result = product(ctx, dot, layout, staged, replace(acc, mask=None, word=None), None)
            assign(loop.body[0].var, replace(result, mask=acc.mask, word=acc.word))
        else:
            assign(loop.body[0].var, product(ctx, dot, layout, staged, acc, present))
        ctx.line(f"{read} = {read} == {stages - 1} ? 0 : {read} + 1;")
    if partial and hoisted:
        with ctx.block(f"if ({start} < {stop})"):
            ctx.line(f"const {c} {var} = {start};")
            a_idx, b_idx = _indices_used(ctx, indices, dot)
            lanes = window_lanes(a_access, a_idx, b_access, b_idx)
            acc = operand(dot.acc)
            mask = and_masks(acc.mask, f"({meet} && {lanes})")
            assign(loop.body[0].var, TileValue(acc.dtype, acc.layout, acc.lane, mask))


def blocks_pair(threads: int, accumulator_words: int) -> bool:
    """Two blocks of the k-loop share an SM: the accumulator and the registers beside it
    (``_OTHER_REGISTERS``) fit in half an SM's registers.

    Two blocks overlap one's copies and barrier with the other's ``mma.sync``;
    one block alone leaves the tensor cores idle while all its warps issue the
    next stage's copies.  At 256 threads the share is 128 registers a thread,
    which ptxas is then told (``__launch_bounds__(256, 2)``).
    """
    share = min(MAX_REGISTERS, REGISTERS_PER_SM // (PAIRED_CTAS * threads))
    return accumulator_words + _OTHER_REGISTERS <= share


def pipeline_stages(stage_bytes: int, arch: str, paired: bool) -> int:
    """Shared-memory stages of the k-loop: ``MAX_STAGES`` or fewer, at least 2.

    A stage holds one k-step's ``a`` and ``b``; with ``s`` stages, ``s - 1``
    k-steps of copies are in flight while one multiplies, which is what hides
    global-memory latency.  Blocks that pair (``blocks_pair``) take at most
    half of an SM's shared memory each; a block alone may fill what one block
    may ask for.
    """
    per_sm = _SHARED_KIB_PER_SM.get(_compute_capability(arch), _SHARED_KIB_UNKNOWN) * 1024
    budget = per_sm // PAIRED_CTAS if paired else per_sm - _RESERVED_PER_BLOCK
    return max(2, min(MAX_STAGES, budget // stage_bytes))


MAX_STAGES = 4
_OTHER_REGISTERS = 64  # a thread's fragments, addresses and temporaries beside its accumulator
# Shared memory of one SM (KiB) by compute capability; an unknown card gets the smallest.
_SHARED_KIB_PER_SM = {80: 164, 86: 100, 87: 164, 89: 100, 90: 228, 100: 228, 103: 228, 120: 100}
_SHARED_KIB_UNKNOWN = 100
# What a block may ask for is the SM's shared memory less 1 KiB the system keeps per block,
# less the kernel's static shared memory (the partials of reductions: a few KiB at most).
_RESERVED_PER_BLOCK = 8 * 1024


def _compute_capability(arch: str) -> int:
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return int(digits) if digits else 0


def _lanes_invariant(dot: ir.Dot, loop_var: ir.Variable) -> bool:
    """The rows of ``a``'s window and the columns of ``b``'s do not move with the loop.

    Then a result lane's own part of its presence (row inside ``a``, column
    inside ``b``) is the same at every k-step, and is applied once, after the
    loop, instead of lane by lane at every step; only the block-uniform overlap
    of the k ranges is tracked per step.
    """
    a_rows = next(i for i in dot.a.indices if isinstance(i, ir.WindowIndex))
    b_cols = [i for i in dot.b.indices if isinstance(i, ir.WindowIndex)][1]
    return not any(
        isinstance(node, ir.Read) and node.var.name == loop_var.name
        for node in walk((a_rows.start, b_cols.start))
    )


def _indices_used(
    ctx: EmitContext, indices: Indices, dot: ir.Dot
) -> tuple[list[memory.AxisIndex], list[memory.AxisIndex]]:
    """Both operands' window starts, each marked used: a test may need only some of them."""
    a_idx, b_idx = indices(dot.a.indices), indices(dot.b.indices)
    for index in (*a_idx, *b_idx):
        ctx.line(f"(void)({index.start});")
    return a_idx, b_idx
