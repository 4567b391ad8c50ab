"""Two blocks an SM for a kernel whose ``dot`` results fit in half the paired share.

A kernel like the attention tutorial's runs its dots one after another inside a
loop, with shared-memory round trips and barriers between them (operands
staged, scores moved to rows for the softmax).  A block alone on its SM leaves
the tensor cores and the memory idle at each of those waits; a second block's
warps fill them.  ``__launch_bounds__(256, 2)`` caps a thread at 128 registers,
which holds without spilling while the accumulator fragments of all the
kernel's dots take at most half of it (``RESULT_WORDS``, as the pipelined loop's
``blocks_pair`` asks of its one accumulator).  A kernel of more than two dots
also holds their register-staged operands (``p``, ``dp``, ``ds`` beside the
results), so it pairs under ``MANY_DOTS_RESULT_WORDS``.  Measured with ptxas
(``benchmarks.inspect_dot --attention``): the forward at D=64 (BLOCK_M 64 or
128) and at D=128 with BLOCK_M=64 fit 128 registers with no spill; dq and dk/dv
pair at their smaller tiles (dq at D=64 also at BLOCK_N=64, spilling 8 bytes), and
the autotuner keeps whichever variant runs fastest.

The decision is the kernel's, so each dot adds its result to a running total
kept in the emission context (``EmitContext.dot_tally``), and the request is
withdrawn when a later dot breaks the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.occupancy import MAX_REGISTERS, PAIRED_CTAS, REGISTERS_PER_SM

RESULT_WORDS = 64  # half of the 128 registers a thread of a paired 256-thread block has
MANY_DOTS_RESULT_WORDS = 48  # with three dots or more: their staged operands live too
_PAIRED_DOTS = 2


@dataclass
class _Dots:
    """The kernel's dots so far: how many, their results' words a thread, and the
    blocks-per-SM request before the first of them."""

    count: int
    words: int
    before: int


def count_dot(ctx: EmitContext, result_words: int) -> None:
    """Add a tensor-core dot whose result is ``result_words`` a thread; ask for two blocks
    an SM while the kernel's dots fit, and withdraw the request once they do not."""
    if REGISTERS_PER_SM // (PAIRED_CTAS * ctx.threads) >= MAX_REGISTERS:
        return  # a block this small pairs without asking
    if ctx.dot_tally is None:
        ctx.dot_tally = _Dots(0, 0, ctx.ctas_per_sm)
    dots: _Dots = ctx.dot_tally
    dots.count += 1
    dots.words += result_words
    budget = RESULT_WORDS if dots.count <= _PAIRED_DOTS else MANY_DOTS_RESULT_WORDS
    if dots.words <= budget:
        ctx.ctas_per_sm = max(dots.before, PAIRED_CTAS)
    else:
        ctx.ctas_per_sm = dots.before
