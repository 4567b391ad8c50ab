"""Tiles loaded where a loop reads them, instead of held in registers across it.

A tile loaded before a loop from a tensor the kernel never writes, at starts fixed
before the loop, and read only inside the loop, reads the same lanes in every
iteration.  Held, it takes its registers for the whole loop (layer norm's backward
holds its weights beside two running sums: over 8192 columns that no longer fits);
loaded again in each iteration, it costs an L1 or L2 hit, as Triton's tutorial
reloads ``w`` per row.  So the load, and the elementwise ops that make the tile
from it and from values fixed before the loop (``f32(w[...])``), move to the top of
the loop's body.  A tile a ``dot`` reads stays where it is: instruction selection
stages it in shared memory once, before the loop.
"""

from __future__ import annotations

from phobos.compile.gpu import ir

_PURE = (*ir.ELEMENTWISE, ir.Splat, ir.Coord, ir.ExpandDims, ir.Broadcast)


def sink_loads(kernel: ir.Kernel) -> None:
    written = {
        op.tensor for op in kernel.walk() if isinstance(op, (ir.Store, ir.StoreUniform, ir.Atomic))
    }
    users = ir.users(kernel)
    _sink(kernel, kernel.body, written, users)


def _sink(kernel: ir.Kernel, block: ir.Block, written: set[str], users: dict) -> None:
    for op in list(block.ops):
        for region in op.regions:
            _sink(kernel, region, written, users)
    defined_here = {v: op for op in block.ops for v in op.results}
    for loop in [op for op in block.ops if isinstance(op, (ir.For, ir.While))]:
        body = loop.regions[-1]
        inside = {inner for inner in body.walk()}
        for op in list(block.ops):
            if op is loop or not isinstance(op, ir.Load) or op.tensor in written:
                continue
            if not isinstance(op.result.type, ir.Tile) or block.ops.index(op) > block.ops.index(
                loop
            ):
                continue
            chain = _chain(op, users, defined_here, inside)
            if chain is None:
                continue
            clones: dict[ir.Value, ir.Value] = {}
            copied: list[ir.Op] = []
            for member in chain:
                clone = type(member)(
                    **{k: getattr(member, k) for k in member.attributes()},
                    operands=[clones.get(v, v) for v in member.operands],
                    span=member.span,
                )
                clone.results = [ir.Value(v.type, v.name) for v in member.results]
                if isinstance(clone, ir.Load):
                    clone.reloaded = True
                clones.update(zip(member.results, clone.results))
                copied.append(clone)
            body.ops[0:0] = copied
            for old, new in clones.items():
                ir.replace_uses(body, old, new)
            users.clear()
            users.update(ir.users(kernel))


def _chain(load: ir.Load, users: dict, defined_here: dict, inside: set) -> list[ir.Op] | None:
    """The load and the pure ops made from it that the loop reads, if every use of each is
    inside the loop (or another member of the chain) and none feeds a ``dot``."""
    chain: list[ir.Op] = [load]
    frontier = [load.result]
    while frontier:
        v = frontier.pop()
        for user in users.get(v, []):
            if user in inside:
                if isinstance(user, (ir.Dot, ir.Transpose)):
                    return None
                continue
            if (
                isinstance(user, _PURE)
                and user not in chain
                and all(
                    o in defined_here or o.is_uniform or any(o in c.results for c in chain)
                    for o in user.operands
                )
            ):
                chain.append(user)
                frontier.extend(user.results)
                continue
            return None
    if len(chain) == 1 and not any(u in inside for u in users.get(load.result, [])):
        return None
    order = list(defined_here.values())
    return sorted(chain, key=lambda op: order.index(op) if op in order else -1)
