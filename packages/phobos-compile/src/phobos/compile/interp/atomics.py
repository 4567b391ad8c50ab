"""The atomics: read, combine and write each element as one step.

Blocks run one after another and a block's statements in order, so doing each
update at once is exactly the sequential meaning of an atomic.  Absent lanes and
lanes outside the tensor are skipped; an atomic on one element outside the
tensor writes nothing and gives 0 as the old value, as a point load does.  The
race check records atomics as updates, which race only with other blocks' plain
reads and writes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from phobos.compile.interp import elementwise
from phobos.compile.interp.binding import Launch
from phobos.compile.interp.frame import Code, Frame, Step
from phobos.compile.interp.memory import Combine, locate
from phobos.compile.interp.races import RaceTracker
from phobos.compile.interp.tiles import Tile
from phobos.compile.ir import nodes as ir

# Each atomic but compare-and-swap, as a function of (old element, new value).
_COMBINE: dict[type, Combine] = {
    ir.AtomicAdd: np.add,
    ir.AtomicMax: elementwise.BINARY["max"],
    ir.AtomicXchg: lambda old, new: new,
}


def compile_atomic(
    node: ir.Atomic,
    compile_expr: Callable[[ir.Expr], Code],
    launch: Launch,
    tracker: RaceTracker | None,
) -> Step:
    memory = launch.tensors[node.tensor.name]
    name = node.tensor.name
    starts = [
        compile_expr(i.start if isinstance(i, ir.WindowIndex) else i.index) for i in node.indices
    ]
    lengths = [i.length if isinstance(i, ir.WindowIndex) else None for i in node.indices]
    value_code = compile_expr(node.value)
    combiner = _combiner(node, compile_expr)
    result = getattr(node, "result", None)
    zero = memory.dtype.type(0)
    site = tracker.site(node.span, writes=True, atomic=True) if tracker is not None else -1

    def update(frame: Frame) -> bool:
        window = locate(memory.shape, [int(s(frame)) for s in starts], lengths)
        value = value_code(frame)
        combine = combiner(frame)
        if window.empty:
            if result is not None:
                frame.variables[result.name] = zero
            return False
        if isinstance(value, Tile):
            if tracker is not None:
                tracker.update(name, window, window.valid_part(value.valid), site)
            memory.update_tile(window, value, combine)
            return False
        if tracker is not None:
            tracker.update(name, window, None, site)
        old = memory.update_element(window.in_tensor, value, combine)
        if result is not None:
            frame.variables[result.name] = old
        return False

    return update


def _combiner(
    node: ir.Atomic, compile_expr: Callable[[ir.Expr], Code]
) -> Callable[[Frame], Combine]:
    """The combining function of one run of ``node`` (a CAS's depends on its compare value)."""
    if not isinstance(node, ir.AtomicCas):
        combine = _COMBINE[type(node)]
        return lambda frame: combine
    compare_code = compile_expr(node.compare)

    def compare_and_swap(frame: Frame) -> Combine:
        compare = compare_code(frame)
        return lambda old, new: np.where(old == compare, new, old)

    return compare_and_swap
