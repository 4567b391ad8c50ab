"""Shared-memory allocation: an offset for every buffer, reusing bytes once a buffer is dead.

A buffer (or a ring's mbarriers, 8 bytes each) lives from its ``SharedAlloc``
(``MbarrierAlloc``) to its last use; a use inside a loop that
the buffer was allocated outside of keeps it alive for the whole loop (the next
iteration reads it again).  Buffers are placed first-fit by offset, each on its
layout's alignment (1024 bytes for the swizzled wgmma layouts, so the swizzle
pattern starts with the buffer), and the CTA's shared memory is the highest end.

Reusing a dead buffer's bytes can cost a barrier: the new buffer's first write
must wait for the old one's last reads.  So allocation and the barrier pass are
solved together: where a barrier is needed only because two buffers share bytes
(``barriers.aliasing_barriers``), those two are placed apart, while the CTA's
shared memory stays within ``BUDGET`` (two CTAs still fit an SM).  A CTA needing more
than the target gives one is refused as a limit (``SHARED_MEMORY``).  Two reductions
in a row then take two buffers and one barrier each; a third takes the first's
bytes again, which the second's barrier already protects.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.diagnostics import error
from phobos.compile.gpu import ir
from phobos.compile.gpu.arch import shared_bytes_per_cta
from phobos.compile.gpu.layouts import shared_bytes
from phobos.compile.gpu.passes.barriers import aliasing_barriers
from phobos.compile.limits import SHARED_MEMORY

MBARRIER_BYTES = 8


@dataclass
class _Live:
    op: ir.SharedAlloc | ir.MbarrierAlloc
    start: int
    end: int
    size: int
    align: int


BUDGET = 100 * 1024


def allocate_shared(kernel: ir.Kernel) -> None:
    _settle(kernel)
    _check_fits(kernel)


def _settle(kernel: ir.Kernel) -> None:
    apart: set[frozenset[ir.Value]] = set()
    _place(kernel, apart)
    for _ in range(16):
        new = {pair for pairs in aliasing_barriers(kernel) for pair in pairs} - apart
        if not new:
            return
        _place(kernel, apart | new)
        if kernel.shared_bytes > BUDGET:
            _place(kernel, apart)
            return
        apart |= new


def _check_fits(kernel: ir.Kernel) -> None:
    """A CTA needing more shared memory than the target gives one is a limit, at the line of
    the largest buffer (the tuner prunes such a variant before NVRTC sees it)."""
    most = shared_bytes_per_cta(kernel.arch)
    if kernel.shared_bytes <= most:
        return
    allocs = [op for op in kernel.walk() if isinstance(op, ir.SharedAlloc)]
    largest = max(allocs, key=lambda op: shared_bytes(op.result.type.layout, op.result.type.stages))
    raise error(
        largest.span,
        f"this variant needs {kernel.shared_bytes} bytes of shared memory a CTA; "
        f"{kernel.arch} gives a CTA at most {most}",
        help="use smaller tiles here, or fewer stages (NUM_STAGES)",
        limit=SHARED_MEMORY,
    )


def _place(kernel: ir.Kernel, apart: set[frozenset[ir.Value]]) -> None:
    positions: dict[ir.Op, int] = {}
    loops: list[tuple[int, int]] = []  # (first, last) position of each loop's ops
    _number(kernel.body, positions, loops)
    lives: dict[ir.Value, _Live] = {}
    for op, at in positions.items():
        if isinstance(op, ir.SharedAlloc):
            t = op.result.type
            assert isinstance(t, ir.Shared)
            lives[op.result] = _Live(
                op, at, at, shared_bytes(t.layout, t.stages), t.layout.alignment
            )
        elif isinstance(op, ir.MbarrierAlloc):
            t = op.result.type
            assert isinstance(t, ir.Mbarriers)
            lives[op.result] = _Live(op, at, at, MBARRIER_BYTES * t.count, MBARRIER_BYTES)
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
                if (
                    (other.start <= live.end and live.start <= other.end)
                    or frozenset((other.op.result, live.op.result)) in apart
                )
                and o < offset + live.size
                and offset < o + s
            ]
            if not clash:
                break
            offset = max(o + s for o, s, _ in clash)
        live.op.offset = offset
        placed.append((offset, live.size, live))
        top = max(top, offset + live.size)
    # The base of shared memory is only known to be 16-byte aligned: a buffer that needs
    # more (a swizzled one, 1024) is placed from a base aligned at run time, which can
    # take up to that much more.
    kernel.shared_align = max((live.align for live in lives.values()), default=16)
    kernel.shared_bytes = top + (
        kernel.shared_align - 16 if kernel.shared_align > 16 and top else 0
    )


def _number(block: ir.Block, positions: dict[ir.Op, int], loops: list[tuple[int, int]]) -> None:
    for op in block.ops:
        positions[op] = len(positions)
        first = len(positions)
        for region in op.regions:
            _number(region, positions, loops)
        if isinstance(op, (ir.For, ir.While)):
            loops.append((first, len(positions) - 1))
