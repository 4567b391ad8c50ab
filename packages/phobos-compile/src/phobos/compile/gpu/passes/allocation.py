"""Shared-memory allocation: an offset for every buffer, reusing bytes once a buffer is dead.

A buffer lives from its ``SharedAlloc`` to its last use; a use inside a loop that
the buffer was allocated outside of keeps it alive for the whole loop (the next
iteration reads it again).  Buffers are placed first-fit by offset, each on its
layout's alignment (1024 bytes for the swizzled wgmma layouts, so the swizzle
pattern starts with the buffer), and the CTA's shared memory is the highest end.
Reductions' and conversions' small exchange buffers reuse the same bytes one after
another; the barrier pass then orders their uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.gpu import ir
from phobos.compile.gpu.layouts import shared_bytes


@dataclass
class _Live:
    op: ir.SharedAlloc
    start: int
    end: int
    size: int
    align: int


def allocate_shared(kernel: ir.Kernel) -> None:
    positions: dict[ir.Op, int] = {}
    loops: list[tuple[int, int]] = []  # (first, last) position of each loop's ops
    _number(kernel.body, positions, loops)
    lives: dict[ir.Value, _Live] = {}
    for op, at in positions.items():
        if isinstance(op, ir.SharedAlloc):
            t = op.result.type
            assert isinstance(t, ir.Shared)
            lives[op.result] = _Live(op, at, at, shared_bytes(t.layout, t.stages), t.layout.alignment)
    for op, at in positions.items():
        for v in op.operands:
            if v in lives:
                lives[v].end = max(lives[v].end, at)
    for live in lives.values():  # a use inside a loop the buffer was made before: all of it
        changed = True
        while changed:
            changed = False
            for first, last in loops:
                if first <= live.end <= last and live.start < first and live.end < last:
                    live.end = last
                    changed = True
    placed: list[tuple[int, int, _Live]] = []
    top = 0
    for live in sorted(lives.values(), key=lambda x: x.start):
        offset = 0
        while True:
            offset = -(-offset // live.align) * live.align
            clash = [
                (o, s, other)
                for o, s, other in placed
                if other.start <= live.end and live.start <= other.end and o < offset + live.size and offset < o + s
            ]
            if not clash:
                break
            offset = max(o + s for o, s, _ in clash)
        live.op.offset = offset
        placed.append((offset, live.size, live))
        top = max(top, offset + live.size)
    kernel.shared_bytes = top


def _number(block: ir.Block, positions: dict[ir.Op, int], loops: list[tuple[int, int]]) -> None:
    for op in block.ops:
        positions[op] = len(positions)
        first = len(positions)
        for region in op.regions:
            _number(region, positions, loops)
        if isinstance(op, (ir.For, ir.While)):
            loops.append((first, len(positions) - 1))
