"""Atomic read-modify-write statements: several blocks may update one element.

``atomic_add`` and ``atomic_max`` take a window or one element.  On a window,
every thread updates the present lanes it holds that fall inside the tensor,
one atomic per lane (a value held by several threads, a row reduction's, is
first spread so that each element is held once).  On one element, thread 0
updates it.  ``atomic_xchg`` and ``atomic_cas`` take one element; when the
program keeps the old value, thread 0 passes it to the block through shared
memory, so the variable is block-uniform like every scalar.  Outside the
tensor nothing is written and the old value reads as 0.

The runtime uses the hardware's atomics where they exist and a
compare-and-swap loop on the element's word otherwise (f32 max, f16 max,
16-bit adds); 1-byte elements have no atomic word of their own and are refused.
"""

from __future__ import annotations

from phobos.compile.codegen import memory
from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.conversions import to_layout
from phobos.compile.codegen.dtypes import INDEX_CTYPE, byte_size, ctype
from phobos.compile.codegen.expressions import axis_indices, emit, scalar
from phobos.compile.codegen.lanes import group_loop, lane_loop
from phobos.compile.codegen.values import TileValue, variable_name
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir

_FUNCTION = {  # the runtime's function, which is also the Phobos spelling
    ir.AtomicAdd: "atomic_add",
    ir.AtomicMax: "atomic_max",
    ir.AtomicXchg: "atomic_xchg",
    ir.AtomicCas: "atomic_cas",
}


def emit_atomic(ctx: EmitContext, stmt: ir.Atomic) -> None:
    access = ctx.access[stmt.tensor.name]
    if byte_size(stmt.tensor.dtype, ctx.index_width) < 2:
        raise error(
            stmt.span,
            f"{_FUNCTION[type(stmt)]} on a {stmt.tensor.dtype} tensor is not supported by the "
            "GPU code generator yet",
            help="keep the counts in an i32 tensor",
        )
    memory.order_accesses(ctx, access)
    function = f"phobos::{_FUNCTION[type(stmt)]}"
    if any(isinstance(index, ir.WindowIndex) for index in stmt.indices):
        _window(ctx, stmt, access, function)
        return
    indices = [scalar(ctx, index.index) for index in stmt.indices]
    inside = " && ".join(
        memory.in_bounds(ctx, index, access.extent(axis)) for axis, index in enumerate(indices)
    )
    element = f"{access.pointer} + ({memory.element_offset(access, indices)})"
    arguments = [scalar(ctx, stmt.value)]
    if isinstance(stmt, ir.AtomicCas):
        arguments.insert(0, scalar(ctx, stmt.compare))
    call = f"{function}({element}, {', '.join(arguments)})"
    result = stmt.result if isinstance(stmt, (ir.AtomicXchg, ir.AtomicCas)) else None
    if result is None:
        ctx.line(f"if (tid == 0 && {inside}) {call};")
        return
    c = ctype(stmt.tensor.dtype)
    scratch = ctx.need_scratch(8)
    ctx.line("__syncthreads();")
    with ctx.block("if (tid == 0)"):
        ctx.line(f"{c} old = {c}();")
        ctx.line(f"if ({inside}) old = {call};")
        ctx.line(f"*reinterpret_cast<{c}*>({scratch}) = old;")
    ctx.line("__syncthreads();")
    name = variable_name(result.name)
    const = "[[maybe_unused]] " + ("" if result.mutable else "const ")
    ctx.line(f"{const}{c} {name} = *reinterpret_cast<const {c}*>({scratch});")
    ctx.facts.define(result, None)


def _window(ctx: EmitContext, stmt: ir.Atomic, access: memory.TensorAccess, function: str) -> None:
    indices = axis_indices(ctx, stmt.indices)
    value = emit(ctx, stmt.value)
    assert isinstance(value, TileValue), "the checker makes broadcasts to a window explicit"
    if value.layout.replicated:  # update each element once
        value = to_layout(ctx, value, ctx.layout(value.layout.shape))
    with group_loop(ctx, value.layout, skip_padding=True), lane_loop(ctx, value.layout):
        tensor_indices = []
        tile_axis = 0
        for index in indices:
            if index.length is None:
                tensor_indices.append(index.start)
            else:
                tensor_indices.append(f"{index.start} + {INDEX_CTYPE}(c{tile_axis})")
                tile_axis += 1
        inside = [
            memory.in_bounds(ctx, index, access.extent(axis))
            for axis, index in enumerate(tensor_indices)
        ]
        if value.mask is not None:
            inside.insert(0, value.mask)
        element = f"{access.pointer} + ({memory.element_offset(access, tensor_indices)})"
        ctx.line(f"if ({' && '.join(inside)}) {function}({element}, {value.lane});")
