"""Layout conversions, moved the cheapest way their two maps allow.

* The same map: nothing (the conversion is removed).
* Every element a thread holds in the target it already holds in the source (a
  different register order, fewer copies, a broadcast within the thread): a
  ``Permute``, which renames registers and costs nothing at run time.
* Otherwise through shared memory: every element stored once by its first holder,
  read back by every thread that holds it in the target (``SharedStore``,
  ``SharedLoad``; the barrier pass puts the barrier between them and before the
  buffer is used again).
"""

from __future__ import annotations

import math

import numpy as np

from phobos.compile.gpu import ir
from phobos.compile.gpu.layouts import Layout, plain_rows, register_permutation
from phobos.compile.gpu.passes.cta import element_bytes


def expand_conversions(kernel: ir.Kernel) -> None:
    _expand(kernel, kernel.body)


def _expand(kernel: ir.Kernel, block: ir.Block) -> None:
    out: list[ir.Op] = []
    for op in block.ops:
        for region in op.regions:
            _expand(kernel, region)
        if not isinstance(op, ir.Convert):
            out.append(op)
            continue
        source, target = op.operands[0].tile.layout, op.result.tile.layout
        assert source is not None and target is not None
        if source == target:
            ir.replace_uses(kernel.body, op.result, op.operands[0])
            continue
        if same_threads(source, target):
            out.append(ir.Permute(operands=op.operands, results=op.results, span=op.span))
            continue
        x = op.operands[0]
        shape = x.tile.shape
        rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
        alloc = ir.SharedAlloc(span=op.span)
        alloc.results = [
            ir.Value(
                ir.Shared(x.dtype, shape, plain_rows(rows, shape[-1], element_bytes(x.dtype))),
                "exchange",
            )
        ]
        out.append(alloc)
        out.append(ir.SharedStore(operands=[alloc.result, x], span=op.span))
        out.append(ir.SharedLoad(operands=[alloc.result], results=op.results, span=op.span))
    block.ops = out


def same_threads(source: Layout, target: Layout) -> bool:
    """Every (thread, register) of ``target`` holds an element its thread holds in ``source``,
    at the same source register in every thread: a ``Permute`` renames registers by one map,
    thread 0's (``layouts.register_permutation``), so a renaming that differs between threads goes through
    shared memory instead."""
    renaming = register_permutation(source, target)
    if renaming is None:
        return False
    src, dst = source.coords(), target.coords()
    valid = target.valid()
    moved = src[:, renaming]  # each thread's element at the register the map takes
    return bool(np.all((moved == dst).all(axis=-1) | ~valid))
