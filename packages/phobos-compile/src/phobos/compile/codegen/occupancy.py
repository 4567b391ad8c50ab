"""How many CTAs of a kernel must fit on one SM: the second number of ``__launch_bounds__``.

A memory-bound kernel is as fast as the bytes it has in flight per SM.  One CTA
of 8 warps that loads a row, reduces it and stores it keeps memory busy only
while it loads; a second CTA on the SM loads while the first reduces and
stores.  Left alone, ptxas spends registers on scheduling freedom (a 16384-wide
softmax row on 256 threads took 139 registers, one CTA per SM); asking for two
CTAs caps it at 128 registers a thread.

The cap is asked only where the lanes fit it: a CTA of at most
``MAX_PAIRED_THREADS`` threads, in a kernel without ``dot`` (whose fragments are
sized by ``choose_fragment_threads``), whose thread holds at most
``MAX_PAIRED_WORDS`` lanes at once, counting the largest tile and every tile a
loop carries (a ``var`` it updates, a ``let`` from before the loop it reads):
those stay live across the loop, where a spill would be reloaded every
iteration.
"""

from __future__ import annotations

import math

from phobos.compile.codegen.walk import walk
from phobos.compile.ir import nodes as ir

REGISTERS_PER_SM = 65536
PAIRED_CTAS = 2
MAX_PAIRED_THREADS = 256  # two CTAs of 256 threads: 128 registers a thread
MAX_PAIRED_WORDS = 64  # half the 128 registers: the rest for addresses, masks, temporaries
MAX_REGISTERS = 255  # a thread's most: a CTA of 128 threads or fewer pairs without a cap


def min_ctas_per_sm(threads: int, has_dot: bool, lanes: int) -> int:
    """``PAIRED_CTAS`` where two CTAs' registers fit the SM without spilling, else 1.

    ``lanes``: the largest tile's lanes plus those of the tiles loops carry.

    1 also where asking would change nothing (a small CTA pairs anyway).
    """
    cap = REGISTERS_PER_SM // (PAIRED_CTAS * threads)
    if has_dot or threads > MAX_PAIRED_THREADS or cap >= MAX_REGISTERS:
        return 1
    words = -(-lanes // threads)
    return PAIRED_CTAS if words <= MAX_PAIRED_WORDS else 1


def loaded_together(body: tuple[ir.Stmt, ...]) -> int:
    """The most lanes one straight run of statements loads: ptxas issues its loads early.

    Loads need no result of the statements before them, so ptxas hoists them to
    have them in flight together: ``out[w] = x[w] + y[w]`` holds both windows at
    once, layer norm's forward its row, weights and biases.  A loop body is its own
    run (its loads cannot move out of it).
    """
    most = _loaded(body)
    for loop in (n for n in walk(body) if isinstance(n, (ir.For, ir.While))):
        most = max(most, _loaded(loop.body))
    return most


def _loaded(run: tuple[ir.Stmt, ...]) -> int:
    """The lanes the tile loads of ``run``'s statements (not of its loops) bring in."""
    straight = tuple(s for s in run if isinstance(s, (ir.Define, ir.Assign, ir.Store)))
    return sum(
        math.prod(n.type.shape)
        for n in walk(straight)
        if isinstance(n, ir.Load) and isinstance(n.type, ir.TileT)
    )


def carried_tile_sizes(body: tuple[ir.Stmt, ...]) -> dict[str, int]:
    """The lanes of each tile variable some loop reads but did not define."""
    carried: dict[str, int] = {}
    for loop in (n for n in walk(body) if isinstance(n, (ir.For, ir.While))):
        nodes = list(walk(loop.body))
        defined = {n.var.name for n in nodes if isinstance(n, ir.Define)}
        for n in nodes:
            tile = isinstance(n, ir.Read) and isinstance(n.type, ir.TileT)
            if tile and n.var.name not in defined:
                carried[n.var.name] = math.prod(n.type.shape)
    return carried
