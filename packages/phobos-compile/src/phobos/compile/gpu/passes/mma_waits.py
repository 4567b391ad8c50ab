"""Asynchronous MMA: each wgmma stays in flight until its result is needed.

Instruction selection waits for every ``wgmma`` right after issuing it, so the
tensor cores idle while the threads wait, pass the loop's barrier and issue the
next copies.  This pass moves each wait to where the product is first needed:

* In a loop that carries a product's result, the loop carries the product *in
  flight* instead, and the wait moves to its first use in the next iteration (and
  after the loop).  Where that use is the next product on the same accumulator
  (matmul's k-loop: ``acc = dot(a, b, acc)``) there is no wait at all: the next
  ``wgmma`` is ``chained`` onto the one in flight, which the hardware orders; a wait
  without a result at the end of the iteration then releases the stage the older
  product read (``wgmma.wait_group 1``: all but the newest product complete), before
  the iteration hands that stage back to the ring's refill (``passes/pipeline.py``).  Matmul keeps one
  k-step in flight behind the issue of the next.
* After a loop that carries a product, a wait for it comes first.  ptxas serializes
  every wgmma of the kernel (C7514) where other instructions come before that wait,
  and the compiler sinks into that block whatever only the code after the loop uses:
  the thread's coordinates in the epilogue's layout.  So a kernel with products
  computes the thread's values once, at the start, and holds them
  (``thread_values_pinned``).  A wait inside the last iteration instead (under an
  ``if``) would join the path that keeps the product in flight, and ptxas would add
  a wait of its own to every iteration (C7517).
* In a block, a wait moves down to just before the first op that uses its result,
  never past an op that writes shared memory or synchronises.

A product stays as it is where the loop writes one of its shared operands, unless that
operand is a ring with a stage to spare (``SharedAlloc.lag``: the pipeline, which runs
first, refills a stage an iteration after the one that read it, so a product may stay
in flight that long); anything else would race with the product in flight.
Each wait's ``pending`` counts the products issued after the one it waits for, so a
wait never holds up a younger product (``wgmma.wait_group`` completes in order).
Other kernels keep ``threadIdx.x`` and unpinned coordinates, which the compiler may
compute again where they are used instead of holding registers.
"""

from __future__ import annotations

from phobos.compile.gpu import ir
from phobos.compile.gpu.passes.carried import carried_products

# Ops a wait may not move past: they write shared memory or order the threads.
_FENCES = (
    ir.SharedStore,
    ir.CopyAsync,
    ir.AsyncWait,
    ir.Barrier,
    ir.FenceAsync,
    ir.Store,
    ir.Atomic,
    ir.Return,
    ir.MbarrierArrive,
)


def schedule_mma_waits(kernel: ir.Kernel) -> None:
    kernel.thread_values_pinned = any(isinstance(op, ir.Wgmma) for op in kernel.walk())
    for outer, loop in _loops(kernel.body):
        _carry_products(kernel, outer, loop)
    for block in _blocks(kernel.body):
        _sink_waits(block)
    _count_pending(kernel.body)


def _blocks(block: ir.Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)


def _loops(block: ir.Block):
    """Every ``for`` with the block it sits in, innermost first."""
    for op in list(block.ops):
        for region in op.regions:
            yield from _loops(region)
        if isinstance(op, ir.For):
            yield block, op


def _uses(block: ir.Block, v: ir.Value) -> list[ir.Op]:
    return [op for op in block.walk() if v in op.operands]


def _top_level_user(block: ir.Block, v: ir.Value) -> int | None:
    """The index of the first op of ``block`` that uses ``v``, itself or in its regions."""
    for i, op in enumerate(block.ops):
        if v in op.operands or any(v in inner.operands for r in op.regions for inner in r.walk()):
            return i
    return None


def _carry_products(kernel: ir.Kernel, outer: ir.Block, loop: ir.For) -> None:
    body = loop.body
    final = body.ops[-1]
    written = _written_buffers(body)
    spare = {op.result for op in kernel.walk() if isinstance(op, ir.SharedAlloc) and op.lag}
    for carried in carried_products(loop):
        if any(b in written and b not in spare for b in carried.shared_operands()):
            continue
        j, wait, product = carried.yielded, carried.wait, carried.product
        arg = body.args[1 + j]
        result = loop.results[j]
        body.ops.remove(wait)
        final.operands[j] = product.result
        uses = _uses(body, arg)
        if _converted_only_into(body, uses, product):  # a layout change the loop makes moot
            body.ops.remove(uses[0])
            product.operands[2] = arg
            uses = [product]
        if uses == [product] and product.operands[2] is arg:
            product.chained = True
            release = ir.WgmmaWait(operands=[arg], span=product.span)
            body.ops.insert(_hand_back_point(body), release)
        elif uses:
            first = _top_level_user(body, arg)
            assert first is not None
            ready = ir.WgmmaWait(operands=[arg], span=wait.span)
            ready.results = [ir.Value(product.result.type, arg.name)]
            ir.replace_uses(body, arg, ready.result)
            body.ops.insert(first, ready)
        after = ir.WgmmaWait(operands=[result], span=wait.span)
        after.results = [ir.Value(product.result.type, wait.result.name)]
        ir.replace_uses(kernel.body, result, after.result)
        outer.ops.insert(outer.ops.index(loop) + 1, after)


def _hand_back_point(body: ir.Block) -> int:
    """Where a wait that releases a ring's stage goes: before the iteration hands the stage
    back to its refill (the pipeline's ``mbarrier_arrive`` at the end), else before the
    yield."""
    for i, op in enumerate(body.ops):
        inner = [op, *(o for r in op.regions for o in r.walk())]
        if any(isinstance(o, ir.MbarrierArrive) for o in inner):
            return i
    return len(body.ops) - 1


def _converted_only_into(body: ir.Block, uses: list[ir.Op], product: ir.Wgmma) -> bool:
    """The carried value's one use is a ``convert`` to the accumulator's layout that only
    ``product`` reads: once the loop carries the product, the value is in that layout."""
    if len(uses) != 1 or not isinstance(uses[0], ir.Convert):
        return False
    converted = uses[0].result
    return product.operands[2] is converted and _uses(body, converted) == [product]


def _written_buffers(block: ir.Block) -> set[ir.Value]:
    """The buffers ``block`` writes: by the threads, by ``cp.async`` or by TMA."""
    writes = (ir.SharedStore, ir.CopyAsync, ir.CopyTma)
    return {op.operands[0] for op in block.walk() if isinstance(op, writes)}


def _sink_waits(block: ir.Block) -> None:
    for wait in [op for op in block.ops if isinstance(op, ir.WgmmaWait) and op.results]:
        i = block.ops.index(wait)
        j = i + 1
        while j < len(block.ops) and _may_pass(block.ops[j], wait.result):
            j += 1
        block.ops.insert(j - 1, block.ops.pop(i))


def _may_pass(op: ir.Op, waited: ir.Value) -> bool:
    """A wait for ``waited`` may move below ``op``."""
    if isinstance(op, (ir.Yield, *_FENCES)) or waited in op.operands:
        return False
    inner = [o for r in op.regions for o in r.walk()]
    return not any(
        waited in o.operands or isinstance(o, (*_FENCES, ir.Wgmma, ir.WgmmaWait)) for o in inner
    )


def _count_pending(block: ir.Block, owner: ir.Op | None = None) -> None:
    """Each wait's ``pending``: the products issued after the one it waits for and
    before it, in straight-line code (0 where a branch or an inner loop issues some in
    between); a wait for a product the loop carries counts the rest of the previous
    iteration too.  A wait whose product an earlier wait of the block already
    completed issues nothing: without a result it goes, with one it is ``drained``
    (ptxas serializes a pipeline whose waits leave more in flight than it follows)."""
    for op in block.ops:
        for region in op.regions:
            _count_pending(region, op)
    where = {v: i for i, op in enumerate(block.ops) if isinstance(op, ir.Wgmma) for v in op.results}
    final = block.ops[-1] if block.ops else None
    carried = isinstance(owner, ir.For) and isinstance(final, ir.Yield)

    def younger(target: ir.Value, w: int) -> int | None:
        """Products issued after ``target`` and before op ``w``, or None if unknown."""
        if target in where and where[target] < w:
            return _products(block.ops[where[target] + 1 : w])
        if carried and target in block.args[1:]:
            yielded = final.operands[block.args.index(target) - 1]  # type: ignore[union-attr]
            if yielded in where:
                rest, before = _products(block.ops[where[yielded] + 1 :]), _products(block.ops[:w])
                return None if rest is None or before is None else rest + before
        return None

    redundant: list[ir.Op] = []
    for w, op in enumerate(block.ops):
        if not isinstance(op, ir.WgmmaWait) or op.drained:
            continue
        target = op.operands[0]
        op.pending = younger(target, w) or 0
        done = any(
            isinstance(o, ir.WgmmaWait)
            and not o.drained
            and o not in redundant
            and (n := younger(target, i)) is not None
            and n >= o.pending
            for i, o in enumerate(block.ops[:w])
        )
        if done and op.results:
            op.drained = True
        elif done:
            redundant.append(op)
    block.ops = [op for op in block.ops if op not in redundant]


def _products(ops: list[ir.Op]) -> int | None:
    """How many products ``ops`` issue, or None where a region may issue some."""
    count = 0
    for op in ops:
        if any(isinstance(inner, ir.Wgmma) for r in op.regions for inner in r.walk()):
            return None
        count += isinstance(op, ir.Wgmma)
    return count
