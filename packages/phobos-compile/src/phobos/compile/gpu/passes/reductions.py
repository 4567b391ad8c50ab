"""Reductions from their operand's layout: in the thread, then shuffles, then shared memory.

A ``Reduce`` along ``axis`` of a tile in layout ``L`` becomes, reading ``L``'s bits
along the axis:

1. ``ReduceRegisters`` where the thread holds several lanes of the axis (its register
   bits, or a repeat, or padding to skip);
2. ``ShuffleReduce`` where lanes of one warp hold the axis (one ``shfl.xor`` per lane
   bit: a row of a wgmma accumulator is two);
3. where warps hold the axis, each warp's partial goes to a small shared buffer,
   and every thread reads back the partials of its rows and combines them
   (``SharedStore``, ``SharedLoad``, ``ReduceRegisters``; the barrier between is the
   barrier pass's).

The result is in ``L.sliced(axis)``: a row's total is held by every thread of the
row, so broadcasting it back over the row moves nothing.  A sum or product
(``ir/reduction_ops.py``: the reductions that widen) of f16, bf16 or narrow integers
accumulates in f32 or 32 bits and rounds once, as the interpreter does.
"""

from __future__ import annotations

import math

from phobos.compile.gpu import ir
from phobos.compile.gpu.layouts import plain_rows
from phobos.compile.gpu.passes.cta import element_bytes
from phobos.compile.ir import reduction_ops


def expand_reductions(kernel: ir.Kernel) -> None:
    _expand(kernel.body)


def _expand(block: ir.Block) -> None:
    out: list[ir.Op] = []
    for op in block.ops:
        for region in op.regions:
            _expand(region)
        if isinstance(op, ir.Reduce):
            out += _steps(op)
        else:
            out.append(op)
    block.ops = out


def _new(op: ir.Op, t: ir.Type, name: str, span) -> ir.Op:
    op.results = [ir.Value(t, name)]
    op.span = span
    return op


def _steps(reduce: ir.Reduce) -> list[ir.Op]:
    x = reduce.operands[0]
    present = reduce.operands[1] if reduce.masked else None
    layout = x.tile.layout
    assert layout is not None, "reductions expand after layout assignment"
    axis, kind, span = reduce.axis, reduce.op, reduce.span
    ops: list[ir.Op] = []
    acc = reduction_ops.accumulator(kind, x.dtype)
    value = x
    if acc != x.dtype:
        ops.append(
            _new(ir.Cast(operands=[value]), ir.Tile(acc, x.tile.shape, layout), "wide", span)
        )
        value = ops[-1].result
    registers, lanes, warps = layout.axis_bits(axis)
    current = layout
    if registers or layout.repeat_axis == axis or layout.padded(axis) or present is not None:
        current = layout.thread_partials(axis)
        operands = [value] if present is None else [value, present]
        step = ir.ReduceRegisters(op=kind, axis=axis, masked=present is not None, operands=operands)
        ops.append(_new(step, ir.Tile(acc, current.shape, current), "partial", span))
        value = ops[-1].result
    if lanes:
        after = current.warp_partials(axis)
        step = ir.ShuffleReduce(op=kind, axis=axis, operands=[value])
        ops.append(_new(step, ir.Tile(acc, after.shape, after), "warp_partial", span))
        value, current = ops[-1].result, after
    if warps:
        shape = current.shape
        rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
        smem = ir.Shared(acc, shape, plain_rows(rows, shape[-1], element_bytes(acc)))
        alloc = _new(ir.SharedAlloc(), smem, "partials", span)
        ops.append(alloc)
        ops.append(ir.SharedStore(operands=[alloc.result, value], span=span))
        gathered = current.gathered(axis)
        load = ir.SharedLoad(operands=[alloc.result])
        ops.append(_new(load, ir.Tile(acc, gathered.shape, gathered), "partials", span))
        final = gathered.thread_partials(axis)
        step = ir.ReduceRegisters(op=kind, axis=axis, operands=[ops[-1].result])
        ops.append(_new(step, ir.Tile(acc, final.shape, final), "total", span))
        value, current = ops[-1].result, final
    expected = layout.sliced(axis)
    squeezed = current.sliced(axis)
    if current.shape[axis] != 1 or squeezed != expected:
        raise AssertionError(f"reduction of {layout} along {axis} ended in {current}")
    if reduce.result.is_uniform:
        ops.append(_new(ir.ToUniform(operands=[value]), ir.Uniform(acc), "total", span))
    else:
        ops.append(
            _new(
                ir.Squeeze(axis=axis, operands=[value]),
                ir.Tile(acc, expected.shape, expected),
                "total",
                span,
            )
        )
    value = ops[-1].result
    if acc != reduce.result.dtype:
        t = (
            ir.Uniform(reduce.result.dtype)
            if value.is_uniform
            else ir.Tile(reduce.result.dtype, expected.shape, expected)
        )
        ops.append(_new(ir.Cast(operands=[value]), t, "total", span))
    last = ops[-1]
    last.results = [reduce.result]
    return ops
