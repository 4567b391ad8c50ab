"""Barriers: exactly where two threads' shared-memory accesses would otherwise race.

After allocation every shared access is a range of the CTA's bytes.  Walking the
program in order, the pass keeps the accesses made since the last barrier; an
access that overlaps one of them, one of the two a write, gets a ``Barrier``
just before it, which clears the set.  Two reads never need one.

A loop's body is walked with what is pending before the loop and what its own
end leaves pending (the next iteration), until no barrier is added; a branch's
sides each start from what is pending before it, and after it both sides' accesses
are pending.

What the asynchronous units touch counts as well: a ``cp.async`` writes its bytes
(they land at the wait, before the barrier put before their first reader), and a
``wgmma`` reads its operands (the whole CTA, from the barrier before it until
the next one).  Stage rings that the pipelining pass made synchronise themselves
(``stages`` > 1) and are left alone here.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.gpu import ir
from phobos.compile.gpu.layouts import shared_bytes


@dataclass(frozen=True)
class _Access:
    start: int
    end: int
    write: bool

    def conflicts(self, other: _Access) -> bool:
        return (self.write or other.write) and self.start < other.end and other.start < self.end


def insert_barriers(kernel: ir.Kernel) -> None:
    buffers: dict[ir.Value, tuple[int, int, bool]] = {}
    for op in kernel.walk():
        if isinstance(op, ir.SharedAlloc):
            t = op.result.type
            assert isinstance(t, ir.Shared) and op.offset is not None
            buffers[op.result] = (op.offset, op.offset + shared_bytes(t.layout, t.stages), t.stages > 1)
    _Inserter(buffers).block(kernel.body, frozenset())


class _Inserter:
    def __init__(self, buffers: dict[ir.Value, tuple[int, int, bool]]) -> None:
        self.buffers = buffers

    def accesses(self, op: ir.Op) -> list[_Access]:
        out: list[_Access] = []
        for i, v in enumerate(op.operands):
            if v not in self.buffers:
                continue
            start, end, ring = self.buffers[v]
            if ring:
                continue
            out.append(_Access(start, end, _writes(op, i)))
        return out

    def block(self, block: ir.Block, pending: frozenset[_Access]) -> frozenset[_Access]:
        out: list[ir.Op] = []
        for op in block.ops:
            if isinstance(op, ir.Barrier):
                pending = frozenset()
                out.append(op)
                continue
            if isinstance(op, (ir.For, ir.While)):
                pending = self.loop(op, pending, out)
                continue
            if isinstance(op, ir.If):
                sides = [self.block(region, pending) for region in op.regions]
                out.append(op)
                pending = frozenset().union(*sides)
                continue
            mine = self.accesses(op)
            if any(a.conflicts(p) for a in mine for p in pending):
                out.append(ir.Barrier(span=op.span))
                pending = frozenset()
            out.append(op)
            pending = pending | frozenset(mine)
        block.ops = out
        return pending

    def loop(self, op: ir.Op, pending: frozenset[_Access], out: list[ir.Op]) -> frozenset[_Access]:
        """The body sees what is pending before the loop and what its own end leaves."""
        entry = pending
        for _ in range(8):
            ends = [self.block(region, entry) for region in op.regions]
            leaves = frozenset().union(*ends)
            again = entry | leaves
            if again == entry:
                break
            entry = again
        out.append(op)
        return pending | entry


def _writes(op: ir.Op, index: int) -> bool:
    """Whether ``op`` writes the buffer it takes as operand ``index``."""
    if isinstance(op, (ir.SharedStore, ir.CopyAsync)):
        return index == 0
    if isinstance(op, ir.Atomic):
        return True
    return False
