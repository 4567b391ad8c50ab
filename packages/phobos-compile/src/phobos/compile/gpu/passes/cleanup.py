"""Dead code: ops whose results nothing needs, and loop-carried values nothing reads.

Lowering carries every variable a loop assigns and every presence flag it might
need; most flags end up unused (a store's own bounds make them redundant).  A value
is live when a side effect (a store, an atomic, a trace, control flow's condition)
uses it, or a live op does; a loop's carried value is live when its result is, or
when the body reads it.  Dead carried values are removed from the loop's operands,
arguments, yields and results together.
"""

from __future__ import annotations

from phobos.compile.gpu import ir

_EFFECTS = (
    ir.Store,
    ir.StoreUniform,
    ir.Atomic,
    ir.Trace,
    ir.Assert,
    ir.Return,
    ir.Barrier,
    ir.SharedStore,
    ir.CopyAsync,
    ir.CopyTma,
    ir.MbarrierInit,
    ir.MbarrierWait,
    ir.MbarrierArrive,
    ir.AsyncCommit,
    ir.AsyncWait,
    ir.FenceAsync,
    ir.Condition,
)


def eliminate_dead_code(kernel: ir.Kernel) -> None:
    while True:
        live = _live(kernel)
        changed = _prune(kernel.body, live)
        if not changed:
            return


def _live(kernel: ir.Kernel) -> set[ir.Value]:
    live: set[ir.Value] = set()
    changed = True

    def mark(values: list[ir.Value]) -> None:
        nonlocal changed
        for v in values:
            if v not in live:
                live.add(v)
                changed = True

    while changed:
        changed = False
        for op in kernel.walk():
            if isinstance(op, (ir.For, ir.While, ir.If)):
                positions = _positions(op, live)
                if positions or _has_effects(op):
                    mark(_controls(op))
                for i in positions:
                    mark(_feeding(op, i))
            elif isinstance(op, ir.Yield):
                continue  # its owner marks the positions that are live
            elif _is_effect(op) or any(v in live for v in op.results):
                mark(op.operands)
    return live


def _controls(op: ir.Op) -> list[ir.Value]:
    """What decides whether (or how often) a loop or branch runs."""
    if isinstance(op, ir.For):
        return op.operands[:3]
    if isinstance(op, ir.If):
        return op.operands[:1]
    return []


def _is_effect(op: ir.Op) -> bool:
    """A wgmma wait without a result releases shared memory: an effect of its own."""
    return isinstance(op, _EFFECTS) or (isinstance(op, ir.WgmmaWait) and not op.results)


def _has_effects(op: ir.Op) -> bool:
    return any(_is_effect(inner) for region in op.regions for inner in region.walk())


def _positions(op: ir.Op, live: set[ir.Value]) -> list[int]:
    """The carried positions that are live: their result, or their body argument, is."""
    out = []
    for i, result in enumerate(op.results):
        args = _args(op, i)
        if result in live or any(a in live for a in args):
            out.append(i)
    return out


def _args(op: ir.Op, i: int) -> list[ir.Value]:
    if isinstance(op, ir.For):
        return [op.body.args[i + 1]]
    if isinstance(op, ir.While):
        return [op.regions[0].args[i], op.regions[1].args[i]]
    return []


def _feeding(op: ir.Op, i: int) -> list[ir.Value]:
    """The values that position ``i`` takes: its init and what each region yields."""
    out: list[ir.Value] = []
    if isinstance(op, ir.For):
        out.append(op.operands[3 + i])
    elif isinstance(op, ir.While):
        out.append(op.operands[i])
    for region in op.regions:
        last = region.ops[-1] if region.ops else None
        if isinstance(last, ir.Yield):
            out.append(last.operands[i])
    return out


def _prune(block: ir.Block, live: set[ir.Value]) -> bool:
    changed = False
    kept: list[ir.Op] = []
    for op in block.ops:
        if isinstance(op, (ir.For, ir.While, ir.If)):
            positions = _positions(op, live)
            if not positions and not _has_effects(op):
                changed = True
                continue
            if len(positions) < len(op.results):
                _drop_positions(op, positions)
                changed = True
            for region in op.regions:
                changed |= _prune(region, live)
            kept.append(op)
            continue
        if _is_effect(op) or isinstance(op, ir.Yield) or any(v in live for v in op.results):
            for region in op.regions:
                changed |= _prune(region, live)
            kept.append(op)
        else:
            changed = True
    block.ops = kept
    return changed


def _drop_positions(op: ir.Op, positions: list[int]) -> None:
    keep = set(positions)
    count = len(op.results)

    def filtered(values: list[ir.Value]) -> list[ir.Value]:
        return [v for i, v in enumerate(values) if i in keep]

    op.results = filtered(op.results)
    if isinstance(op, ir.For):
        op.operands = op.operands[:3] + filtered(op.operands[3:])
        op.body.args = op.body.args[:1] + filtered(op.body.args[1:])
    elif isinstance(op, ir.While):
        op.operands = filtered(op.operands)
        for region in op.regions:
            region.args = filtered(region.args)
    for region in op.regions:
        last = region.ops[-1] if region.ops else None
        if isinstance(last, ir.Yield) and len(last.operands) == count:
            last.operands = filtered(last.operands)
