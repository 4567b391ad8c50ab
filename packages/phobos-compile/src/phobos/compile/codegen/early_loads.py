"""Windows loaded before a block's first reduction, so their latency hides behind it.

Layer norm's forward reduces its row twice (two barriers) before it reads the
weights and biases: loaded where they are used, their memory latency comes after
the row's, and with one 1024-thread CTA an SM nothing else hides it.  A window
of a tensor the kernel never writes, at a start fixed when the block begins
(constants, scalar arguments, extents, ``ctx`` values), reads the same lanes
wherever it is loaded, so a block loads such windows of its later statements
just before its first reduction (after the loads that feed it), and the
statements read those registers.  The CTA size already counts a straight run's
windows as held together (``occupancy.loaded_together``).
"""

from __future__ import annotations

from phobos.compile.codegen.walk import walk
from phobos.compile.ir import nodes as ir

_FIXED = (ir.Const, ir.ScalarArg, ir.Extent, ir.CtxValue)
_ARITHMETIC = (ir.Unary, ir.Binary, ir.Cast)
# A CTA of 1024 threads is alone on its SM once a thread needs more than 32
# registers, so nothing hides a late load's latency.  Smaller CTAs keep their loads
# where they are: the early windows' registers would cost a CTA an SM (layer norm
# over 4096 columns: 256 threads 63 -> 73 registers, four CTAs an SM -> three; 512
# threads 39 -> 47, three -> two), and the other CTAs hide the latency.
EARLY_THREADS = 1024


def early_loads(
    body: tuple[ir.Stmt, ...], written: frozenset[str], reloads: frozenset[str], threads: int
) -> tuple[int, list[tuple[ir.Load, ir.Stmt]]]:
    """Where to load early (the block's first reducing statement) and what.

    Each window comes with the statement that reads it first.  Only statements
    after the first reduction and before any later ``if``, loop or ``return``
    count (no load moves above a guard that may prove it in bounds); a block
    with ``dot`` keeps its loads where they are (its operands take their
    own paths), and a ``let`` that loops reload (``reload.py``) is not held.
    Only CTAs of ``EARLY_THREADS`` or more load early.
    """
    straight = [s for s in body if isinstance(s, (ir.Define, ir.Assign, ir.Store))]
    if threads < EARLY_THREADS or any(isinstance(n, ir.Dot) for n in walk(tuple(straight))):
        return 0, []
    position = None
    seen: set[ir.Load] = set()
    early: list[tuple[ir.Load, ir.Stmt]] = []
    for index, stmt in enumerate(body):
        if not isinstance(stmt, (ir.Define, ir.Assign, ir.Store)):
            if position is not None:  # no load moves above a branch, loop or return
                break
            continue
        if isinstance(stmt, ir.Define) and stmt.var.name in reloads:
            continue
        for load in (n for n in walk((stmt,)) if isinstance(n, ir.Load)):
            if position is not None and load not in seen and _early(load, written):
                early.append((load, stmt))
            seen.add(load)
        if position is None and any(isinstance(n, ir.Reduce) for n in walk((stmt,))):
            position = index
    return (position or 0), early


def _early(load: ir.Load, written: frozenset[str]) -> bool:
    if not isinstance(load.type, ir.TileT) or load.tensor.name in written:
        return False
    starts = [i.start if isinstance(i, ir.WindowIndex) else i.index for i in load.indices]
    return all(_fixed(s) for s in starts)


def _fixed(e: object) -> bool:
    """An expression with the same value anywhere in the kernel: no variable in it."""
    if isinstance(e, _FIXED):
        return True
    if isinstance(e, _ARITHMETIC):
        fields = ("operand", "left", "right")
        return all(_fixed(getattr(e, name)) for name in fields if hasattr(e, name))
    return False
