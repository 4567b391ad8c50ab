"""Barriers: exactly where two threads' shared-memory accesses would otherwise race.

After allocation every shared access is a range of the CTA's bytes.  Walking the
program in order, the pass keeps the accesses made since the last barrier; an
access that overlaps one of them, one of the two a write, gets a ``Barrier``
just before it, which clears the set.  Two reads never need one.

A loop's body is walked with what is pending before the loop and what its own
end leaves pending (the next iteration), until no barrier is added; a branch's
sides each start from what is pending before it, and after it both sides' accesses
are pending.

What the asynchronous units touch counts as well: a ``cp.async`` or TMA copy writes
its bytes (they land at the wait, before the barrier put before their first reader), and a
``wgmma`` reads its operands (the whole CTA, from the barrier before it until
the next one).  Stage rings that the pipelining pass made synchronise themselves
(``stages`` > 1) and are left alone here.

A tensor the kernel both reads and writes orders its accesses the same way: a
thread may read an element another thread of the block wrote.

``aliasing_barriers`` runs the same walk without changing anything and reports the
barriers that only two buffers sharing bytes make necessary, for allocation to
place those buffers apart.
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
    buffer: ir.Value | str
    ring: bool = False

    def conflicts(self, other: _Access) -> bool:
        if self.ring and self.buffer is other.buffer:
            return False  # one ring's stages: the pipeline orders them
        return (self.write or other.write) and self.start < other.end and other.start < self.end


def insert_barriers(kernel: ir.Kernel) -> None:
    _Inserter(kernel, dry=False).block(kernel.body, frozenset())


def aliasing_barriers(kernel: ir.Kernel) -> list[frozenset[frozenset[ir.Value]]]:
    """The barriers the current placement needs only because two buffers share bytes: for
    each, the pairs of buffers whose accesses meet there (allocation keeps them apart)."""
    inserter = _Inserter(kernel, dry=True)
    inserter.block(kernel.body, frozenset())
    return inserter.aliasing


class _Inserter:
    def __init__(self, kernel: ir.Kernel, dry: bool) -> None:
        self.dry = dry
        self.owned: list[set[ir.Value]] = []  # the rings of each loop being walked
        self.aliasing: list[frozenset[frozenset[ir.Value]]] = []
        self.buffers: dict[ir.Value, tuple[int, int, bool]] = {}
        for op in kernel.walk():
            if isinstance(op, ir.SharedAlloc):
                t = op.result.type
                assert isinstance(t, ir.Shared) and op.offset is not None
                end = op.offset + shared_bytes(t.layout, t.stages)
                self.buffers[op.result] = (op.offset, end, t.stages > 1)
        # A tensor the kernel both reads and writes: the block's threads' accesses to it
        # are ordered by barriers too (a thread may read what another wrote).
        stores = (ir.Store, ir.StoreUniform, ir.Atomic)
        loads = (ir.Load, ir.LoadUniform, ir.CopyAsync)
        writes = {op.tensor for op in kernel.walk() if isinstance(op, stores)}
        reads = {op.tensor for op in kernel.walk() if isinstance(op, loads)}
        self.both = writes & reads

    def accesses(self, op: ir.Op) -> list[_Access]:
        out: list[_Access] = []
        for i, v in enumerate(op.operands):
            if v not in self.buffers:
                continue
            start, end, ring = self.buffers[v]
            if ring and any(v in rings for rings in self.owned):
                continue  # inside the loop that pipelines it: it orders itself
            out.append(_Access(start, end, _writes(op, i), v, ring))
        tensor = getattr(op, "tensor", None)
        if tensor in self.both:
            write = isinstance(op, (ir.Store, ir.StoreUniform, ir.Atomic))
            out.append(_Access(-2, -1, write, tensor))  # type: ignore[arg-type]
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
            met = [(a, p) for a in mine for p in pending if a.conflicts(p)]
            if met:
                if all(a.buffer is not p.buffer and not isinstance(a.buffer, str) for a, p in met):
                    self.aliasing.append(frozenset(frozenset((a.buffer, p.buffer)) for a, p in met))
                out.append(ir.Barrier(span=op.span))
                pending = frozenset()
            out.append(op)
            pending = pending | frozenset(mine)
            if isinstance(op, ir.Atomic) and op.results:  # it ends with its own barrier
                pending = frozenset()
        if not self.dry:
            block.ops = out
        return pending

    def loop(self, op: ir.Op, pending: frozenset[_Access], out: list[ir.Op]) -> frozenset[_Access]:
        """The body sees what is pending before the loop and what its own end leaves.

        A ring the loop pipelines is ordered by the loop itself; after it, its bytes
        count as written, so whatever uses them next waits for the last iteration."""
        rings = {
            inner.operands[0]
            for region in op.regions
            for inner in region.walk()
            if isinstance(inner, (ir.CopyAsync, ir.CopyTma))
            and self.buffers.get(inner.operands[0], (0, 0, False))[2]
        }
        self.owned.append(rings)
        entry = pending
        for _ in range(8):
            ends = [self.block(region, entry) for region in op.regions]
            leaves = frozenset().union(*ends)
            again = entry | leaves
            if again == entry:
                break
            entry = again
        self.owned.pop()
        out.append(op)
        used = frozenset(_Access(self.buffers[v][0], self.buffers[v][1], True, v) for v in rings)
        return pending | entry | used


def _writes(op: ir.Op, index: int) -> bool:
    """Whether ``op`` writes the buffer it takes as operand ``index``."""
    if isinstance(op, (ir.SharedStore, ir.CopyAsync, ir.CopyTma)):
        return index == 0
    return bool(isinstance(op, ir.Atomic))
