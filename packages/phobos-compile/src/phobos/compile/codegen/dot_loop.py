"""The matmul k-loop, software-pipelined: the next k-step's tiles land while this one multiplies.

``for k in a .. b step s { acc = dot(x[m :+ BM, k :+ BK], y[k :+ BK, n :+ BN], acc) }``
is recognised when both operands are window loads that ``cp.async`` can move
and the product runs on the tensor cores.  Two shared-memory stages alternate.
Each iteration waits for its own stage's copies, synchronises the block (so the
copies are visible and everyone is done with the other stage), issues the
copies of the next k-step into the other stage, and only then runs its
``mma.sync`` steps, so global-memory latency hides behind the tensor cores.
The next step's windows are the operands' own index expressions evaluated in a
scope where the loop variable is rebound to its next value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from phobos.compile.codegen import memory
from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.dot import (
    Indices,
    Operand,
    Staged,
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
    a_bytes, b_bytes = operand_bytes(ctx, dot)
    stage_bytes = a_bytes + b_bytes
    scratch = ctx.need_scratch(2 * stage_bytes)
    t = ctype(dot.a.type.dtype)
    stages = []
    for s in range(2):
        a, b = ctx.fresh("dot_a"), ctx.fresh("dot_b")
        ctx.line(f"{t}* const {a} = reinterpret_cast<{t}*>({scratch} + {s * stage_bytes});")
        offset = s * stage_bytes + a_bytes
        ctx.line(f"{t}* const {b} = reinterpret_cast<{t}*>({scratch} + {offset});")
        stages.append((a, b))
    a_access, b_access = ctx.access[dot.a.tensor.name], ctx.access[dot.b.tensor.name]

    def issue(at: str, a_buffer: str, b_buffer: str) -> None:
        """Copies of the operands' windows for loop value ``at`` (if the loop gets there)."""
        with ctx.block(f"if ({at} < {stop})"):
            ctx.line(f"const {c} {var} = {at};")
            a_idx, b_idx = indices(dot.a.indices), indices(dot.b.indices)
            memory.copy_tile_async(ctx, a_access, a_idx, ctx.layout((m, k)), a_buffer, k + 8)
            memory.copy_tile_async(ctx, b_access, b_idx, ctx.layout((k, n)), b_buffer, n + 8)

    partial = dot.a.type.partial or dot.b.type.partial
    hoisted = _lanes_invariant(dot, loop.var)
    meet = ctx.fresh("meet")
    if partial and hoisted:
        ctx.line(f"bool {meet} = true;  // every k-step's windows met")
    ctx.line("__syncthreads();")  # earlier users of the buffer are done
    issue(start, *stages[0])
    stage = ctx.fresh("stage")
    ctx.line(f"int {stage} = 0;")
    ctx.forget_partials()
    with ctx.block(f"for ({c} {var} = {start}; {var} < {stop}; {var} += {step})"):
        ctx.line_info(loop.body[0].span)
        ctx.line("phobos::copy_async_wait();")
        ctx.line("__syncthreads();")
        current_a, current_b = ctx.fresh("dot_a"), ctx.fresh("dot_b")
        (a0, b0), (a1, b1) = stages
        ctx.line(f"{t}* const {current_a} = {stage} ? {a1} : {a0};")
        ctx.line(f"{t}* const {current_b} = {stage} ? {b1} : {b0};")
        following = ctx.fresh("s")
        ctx.line(f"const {c} {following} = {var} + {step};")
        issue(following, f"({stage} ? {a0} : {a1})", f"({stage} ? {b0} : {b1})")
        layout = result_layout(ctx, dot)
        acc = operand(dot.acc)
        present = None
        if partial and hoisted:
            a_idx, b_idx = _indices_used(ctx, indices, dot)
            some = window_overlap(ctx, a_access, a_idx, b_access, b_idx, k)
            ctx.line(f"{meet} = {meet} && {some};")
        elif partial:
            a_idx, b_idx = indices(dot.a.indices), indices(dot.b.indices)
            present = window_meet(ctx, a_access, a_idx, b_access, b_idx, k)
        staged = Staged(current_a, current_b, k + 8, n + 8)
        if hoisted:  # the accumulator's presence is left as it is until the loop ends
            result = product(ctx, dot, layout, staged, replace(acc, mask=None, word=None), None)
            assign(loop.body[0].var, replace(result, mask=acc.mask, word=acc.word))
        else:
            assign(loop.body[0].var, product(ctx, dot, layout, staged, acc, present))
        ctx.line(f"{stage} ^= 1;")
    if partial and hoisted:
        with ctx.block(f"if ({start} < {stop})"):
            ctx.line(f"const {c} {var} = {start};")
            a_idx, b_idx = _indices_used(ctx, indices, dot)
            lanes = window_lanes(a_access, a_idx, b_access, b_idx)
            acc = operand(dot.acc)
            mask = and_masks(acc.mask, f"({meet} && {lanes})")
            assign(loop.body[0].var, TileValue(acc.dtype, acc.layout, acc.lane, mask))


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
