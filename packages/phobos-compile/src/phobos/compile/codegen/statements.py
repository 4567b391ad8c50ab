"""Statement emission: bindings, stores and block-uniform control flow.

Every statement is preceded by a ``#line`` directive naming the user's file and
line (the IR spans), so NVRTC's messages, ptxas line info, compute-sanitizer
and Nsight all point at the user's source.  Scalar variables are C locals; a
tile variable is a register array (plus a mask array when its type is
partial) assigned lane by lane.  ``for``, ``if`` and ``while`` conditions are
block-uniform, so barriers inside them are reached by every thread.
"""

from __future__ import annotations

from phobos.compile.codegen import memory
from phobos.compile.codegen.atomics import emit_atomic
from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.conversions import to_layout
from phobos.compile.codegen.debug import emit_assert, emit_trace
from phobos.compile.codegen.dot_loop import emit_pipelined_loop, pipelined_dot
from phobos.compile.codegen.dtypes import ctype
from phobos.compile.codegen.early_loads import early_loads
from phobos.compile.codegen.expressions import axis_indices, emit, scalar, tile
from phobos.compile.codegen.lanes import copy_lanes, declare_tile
from phobos.compile.codegen.values import TileValue, variable_name
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir


def emit_block(ctx: EmitContext, body: tuple[ir.Stmt, ...]) -> None:
    """The statements in order, after the windows they load that can come first."""
    reloads = frozenset(ctx.reloads)
    position, early = early_loads(body, ctx.read_and_written, reloads, ctx.threads)
    for index, stmt in enumerate(body):
        if index == position:
            for load, reader in early:
                ctx.line_info(reader.span)
                ctx.preloaded[load] = tile(ctx, load)
        emit_statement(ctx, stmt)
    for load, _ in early:  # their registers end with the block's scope
        del ctx.preloaded[load]


def emit_statement(ctx: EmitContext, stmt: ir.Stmt) -> None:
    ctx.line_info(stmt.span)
    if isinstance(stmt, ir.Define):
        _define(ctx, stmt.var, stmt.value)
    elif isinstance(stmt, ir.Assign):
        _assign(ctx, stmt.var, stmt.value)
    elif isinstance(stmt, ir.Store):
        _store(ctx, stmt)
    elif isinstance(stmt, ir.For):
        _for(ctx, stmt)
    elif isinstance(stmt, ir.If):
        before = ctx.partials_state()
        with ctx.block(f"if ({scalar(ctx, stmt.cond)})"):
            emit_block(ctx, stmt.then)
        if stmt.orelse:
            ctx.resume_partials(before)
            with ctx.block("else"):
                emit_block(ctx, stmt.orelse)
        ctx.forget_partials()
    elif isinstance(stmt, ir.While):
        _while(ctx, stmt)
    elif isinstance(stmt, ir.Return):
        ctx.line("return;")
    elif isinstance(stmt, (ir.AtomicAdd, ir.AtomicMax, ir.AtomicXchg, ir.AtomicCas)):
        emit_atomic(ctx, stmt)
    elif isinstance(stmt, ir.Trace):
        emit_trace(ctx, stmt)
    elif isinstance(stmt, ir.DeviceAssert):
        emit_assert(ctx, stmt)
    else:
        raise error(
            stmt.span,
            f"'{type(stmt).__name__}' is not supported by the GPU code generator yet",
            help="run this kernel in the CPU interpreter",
        )


def _define(ctx: EmitContext, var: ir.Variable, value: ir.Expr) -> None:
    name = variable_name(var.name)
    if isinstance(var.type, ir.ScalarT):
        const = "" if var.mutable else "const "
        declared = f"[[maybe_unused]] {const}{ctype(var.type.dtype)} {name}"
        ctx.line(f"{declared} = {scalar(ctx, value)};")
        ctx.facts.define(var, value)
        return
    if var.name in ctx.reloads:  # emitted where it is read
        return
    computed = tile(ctx, value)
    preferred = ctx.preferred_layout(var.name)
    if preferred is not None:
        computed = to_layout(ctx, computed, preferred)
    elif computed.anywhere:  # a variable holds registers: give it the shape's own layout
        computed = to_layout(ctx, computed, ctx.layout(var.type.shape))
    ctx.bind_variable(var.name, computed.layout)
    declare_tile(ctx, ctype(var.type.dtype), name, computed.layout, var.type.partial, user=True)
    _copy_lanes(ctx, var, computed)


def _assign(ctx: EmitContext, var: ir.Variable, value: ir.Expr) -> None:
    name = variable_name(var.name)
    if isinstance(var.type, ir.ScalarT):
        ctx.line(f"{name} = {scalar(ctx, value)};")
        return
    _copy_lanes(ctx, var, to_layout(ctx, tile(ctx, value), ctx.variable_layout(var.name)))


def _copy_lanes(ctx: EmitContext, var: ir.Variable, value: TileValue) -> None:
    name = variable_name(var.name)
    ctx.forget_conversions(name)
    if not (isinstance(var.type, ir.TileT) and var.type.partial):
        copy_lanes(ctx, value.layout, name, value.lane, None, None)
    elif value.mask is None:  # every lane present
        copy_lanes(ctx, value.layout, name, value.lane, "true", "0xffffffffu")
    else:
        copy_lanes(ctx, value.layout, name, value.lane, value.mask, value.word)


def _store(ctx: EmitContext, stmt: ir.Store) -> None:
    access = ctx.access[stmt.tensor.name]
    if all(isinstance(index, ir.PointIndex) for index in stmt.indices):
        indices = [scalar(ctx, index.index) for index in stmt.indices]
        memory.store_scalar(ctx, access, indices, scalar(ctx, stmt.value))
        return
    indices = axis_indices(ctx, stmt.indices)
    value = emit(ctx, stmt.value)
    assert isinstance(value, TileValue), "the checker makes broadcasts to a window explicit"
    if value.layout.replicated:  # store each element once
        value = to_layout(ctx, value, ctx.layout(value.layout.shape))
    memory.store_tile(ctx, access, indices, value)


def _for(ctx: EmitContext, stmt: ir.For) -> None:
    dot = pipelined_dot(ctx, stmt)
    if dot is not None:
        emit_pipelined_loop(
            ctx,
            stmt,
            dot,
            lambda e: tile(ctx, e),
            lambda indices: axis_indices(ctx, indices),
            lambda e: scalar(ctx, e),
            lambda var, value: _copy_lanes(ctx, var, value),
        )
        return
    var = variable_name(stmt.var.name)
    c = ctype(stmt.var.type.dtype)
    stop, step = ctx.fresh("s"), ctx.fresh("s")
    start = scalar(ctx, stmt.start)
    ctx.line(f"const {c} {stop} = {scalar(ctx, stmt.stop)};")
    ctx.line(f"const {c} {step} = {scalar(ctx, stmt.step)};")
    ctx.facts.define_loop(stmt.var, stmt.start, stmt.step)
    entry, staged = ctx.partials_state(), ctx.partials_staged
    assumed = entry & {0}  # free at the top of every iteration, if the body keeps it so
    with ctx.block(f"for ({c} {var} = {start}; {var} < {stop}; {var} += {step})"):
        top = len(ctx.lines)
        ctx.resume_partials(assumed)
        emit_block(ctx, stmt.body)
        end = ctx.partials_state()
        if ctx.partials_staged > staged and not assumed <= end:
            # The next iteration would write a slot this one's slower threads may still read.
            ctx.lines.insert(top, ctx.indented("__syncthreads();"))
    ctx.resume_partials(entry & end)  # after no iteration, or after the last


def _while(ctx: EmitContext, stmt: ir.While) -> None:
    with ctx.block("while (true)"):
        ctx.forget_partials()
        ctx.line(f"if (!({scalar(ctx, stmt.cond)})) break;")
        emit_block(ctx, stmt.body)
    ctx.forget_partials()
