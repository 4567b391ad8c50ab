"""Prefetched products: a loop issues the next iteration's first ``wgmma`` as soon as it is
done with this iteration's, so the tensor cores run it while the threads work on this one.

Attention's KV loop computes ``s = q @ kᵀ`` (a product on a fresh accumulator, read from
the loop-invariant ``q`` buffer and the K ring's stage), then the softmax of ``s``, then
``acc += p @ v``.  Waited for where it is issued, the first product leaves the tensor
cores idle through the softmax: ``mma_waits`` keeps ``p @ v`` in flight into the next
iteration, but the next ``q @ kᵀ`` is issued after it and waited for at once, which
completes both.  This pass moves the first product of such a loop one iteration ahead:

* after the last use of its result, the iteration waits for the next stage to land (the ring's full
  mbarrier, moved from the top of the next iteration, under ``iv + step < stop``) and
  issues the product of the next iteration, which the loop carries in flight; on the last
  iteration it reads this iteration's stage again (still held: nothing refills it), so
  no product is issued under a branch (ptxas would serialize every wgmma of the kernel);
  (the registers of the one before are then free for it, and ptxas carries it without
  a copy);
* before the loop, the first iteration's stage wait (under ``start < stop``) and product.

``mma_waits`` then waits for the carried product with ``pending`` 0 at the top of each
iteration, which also completes the previous iteration's last product (``p @ v``):
counted over the steady state, one younger group would be left in flight, but the first
iteration has none, and ptxas serializes every wgmma of a kernel whose waits it cannot
prove (an empty ``wgmma.commit_group`` before the loop does not convince it).  So each
iteration overlaps its softmax with the next ``q @ kᵀ``, and its ``p @ v`` with the
loop's bookkeeping and the next stage's wait, as FlashAttention-3's intra-warpgroup
pipelining overlaps the softmax with the previous ``p @ v``: one product beside each
softmax either way.

The pass applies to a loop whose first product (at its top level) reads only buffers that the loop
leaves alone or ring stages guarded by a full-mbarrier wait before it, whose operands are
uniform arithmetic of the loop variable and the carried values (or a splat of one), and
which issues a later product; anything else (a ``cp.async`` ring, whose completion is a
thread barrier, or a product that accumulates onto a carried value) stays as it is.
"""

from __future__ import annotations

from phobos.compile.gpu import ir

_PURE = (
    ir.Constant,
    ir.Param,
    ir.Extent,
    ir.Stride,
    ir.BlockIndex,
    *ir.ELEMENTWISE,
    ir.Splat,
    ir.Convert,
)
# What may come before the first product in the body: the refills, their arithmetic and
# the stage waits; a barrier or a thread's write would be reordered by the move.
_BEFORE = (*_PURE, ir.If, ir.MbarrierWait)


def prefetch_products(kernel: ir.Kernel) -> None:
    for outer, loop in _loops(kernel.body):
        _prefetch(outer, loop)


def _loops(block: ir.Block):
    """Every ``for`` with the block it sits in, innermost first."""
    for op in list(block.ops):
        for region in op.regions:
            yield from _loops(region)
        if isinstance(op, ir.For):
            yield block, op


def _prefetch(outer: ir.Block, loop: ir.For) -> None:
    body = loop.body
    ops = body.ops
    at = next((i for i, op in enumerate(ops) if isinstance(op, ir.Wgmma)), None)
    if at is None:
        return
    product = ops[at]
    assert isinstance(product, ir.Wgmma)
    users = [op for op in body.walk() if product.result in op.operands]
    if len(users) != 1 or not isinstance(users[0], ir.WgmmaWait) or users[0] not in ops:
        return
    wait = users[0]
    if not any(isinstance(op, ir.Wgmma) for op in ops[ops.index(wait) + 1 :]):
        return  # nothing to run beside the prefetched product
    if not all(isinstance(op, _BEFORE) for op in ops[:at]):
        return
    stage_waits = [op for op in ops[:at] if isinstance(op, ir.MbarrierWait)]
    if not _reads_only_guarded(body, product, stage_waits):
        return
    defs = {v: op for op in ops for v in op.results}
    needed = [*product.operands, *(v for w in stage_waits for v in w.operands)]
    if not all(_computable_ahead(v, defs, body) for v in needed):
        return
    _rotate(outer, loop, product, wait, stage_waits, defs)


def _reads_only_guarded(body: ir.Block, product: ir.Wgmma, stage_waits: list) -> bool:
    """The product reads a TMA ring's stage, which one full-mbarrier wait before it
    guards, and buffers that no thread and no ``cp.async`` of the body writes."""
    buffers = [v for v in product.operands[:2] if isinstance(v.type, ir.Shared)]
    threads_write = any(
        isinstance(op, (ir.SharedStore, ir.CopyAsync)) and op.operands[0] in buffers
        for op in body.walk()
    )
    by_tma = any(isinstance(op, ir.CopyTma) and op.operands[0] in buffers for op in body.walk())
    return by_tma and not threads_write and len(stage_waits) == 1


def _computable_ahead(v: ir.Value, defs: dict, body: ir.Block) -> bool:
    """``v`` and its value in the next iteration can be computed anywhere in the body:
    uniform arithmetic (or a splat) of the loop variable, values from outside and carried
    values whose next value is such arithmetic of this iteration's."""
    if v is body.args[0] or (v not in defs and v not in body.args):
        return True
    if v in body.args:
        return _arithmetic(body.ops[-1].operands[body.args.index(v) - 1], defs, set())
    return _arithmetic(v, defs, set()) and all(
        _computable_ahead(o, defs, body) for o in defs[v].operands
    )


def _arithmetic(v: ir.Value, defs: dict, seen: set) -> bool:
    """``v`` is made in the body by uniform arithmetic or splats alone, from values that
    are not (arguments, values from outside)."""
    op = defs.get(v)
    if op is None or v in seen:
        return True
    seen.add(v)
    return isinstance(op, _PURE) and all(_arithmetic(o, defs, seen) for o in op.operands)


class _Values:
    """Values of the body computed again at an insertion point: this iteration's (``now``)
    or the next one's (``next``), by cloning the uniform arithmetic that defines them."""

    def __init__(self, loop: ir.For, defs: dict, placed: set[ir.Value], out: list[ir.Op]):
        self.loop = loop
        self.defs = defs
        self.placed = placed  # values already computed at the insertion point
        self.out = out
        self.memo_now: dict[ir.Value, ir.Value] = {}
        self.memo_next: dict[ir.Value, ir.Value] = {}

    def emit(self, op: ir.Op, result: ir.Value) -> ir.Value:
        op.results = [ir.Value(result.type, result.name)]
        self.out.append(op)
        return op.result

    def clone(self, op: ir.Op, operands: list[ir.Value]) -> ir.Value:
        copy = type(op)(
            **{k: getattr(op, k) for k in op.attributes()}, operands=operands, span=op.span
        )
        return self.emit(copy, op.result)

    def now(self, v: ir.Value) -> ir.Value:
        if v in self.placed or v not in self.defs:
            return v
        if v not in self.memo_now:
            op = self.defs[v]
            self.memo_now[v] = self.clone(op, [self.now(o) for o in op.operands])
        return self.memo_now[v]

    def next(self, v: ir.Value) -> ir.Value:
        body = self.loop.body
        if v in self.memo_next:
            return self.memo_next[v]
        if v is body.args[0]:
            step = self.loop.operands[2]
            found = self.emit(ir.Binary(op="add", operands=[v, step]), v)
        elif v in body.args:
            found = self.now(body.ops[-1].operands[body.args.index(v) - 1])
        elif v in self.defs:
            op = self.defs[v]
            found = self.clone(op, [self.next(o) for o in op.operands])
        else:
            found = v
        self.memo_next[v] = found
        return found


def _first(loop: ir.For, defs: dict, v: ir.Value, memo: dict, out: list[ir.Op]) -> ir.Value:
    """``v`` for the first iteration, computed before the loop."""
    body = loop.body
    if v is body.args[0]:
        return loop.operands[0]
    if v in body.args:
        return loop.inits[body.args.index(v) - 1]
    op = defs.get(v)
    if op is None:
        return v
    if v not in memo:
        operands = [_first(loop, defs, o, memo, out) for o in op.operands]
        copy = type(op)(
            **{k: getattr(op, k) for k in op.attributes()}, operands=operands, span=op.span
        )
        copy.results = [ir.Value(v.type, v.name)]
        out.append(copy)
        memo[v] = copy.result
    return memo[v]


def _guarded(cond: ir.Value, ops: list[ir.Op], span) -> ir.If:
    return ir.If(
        operands=[cond],
        regions=[ir.Block(ops=[*ops, ir.Yield()]), ir.Block(ops=[ir.Yield()])],
        span=span,
    )


def _rotate(
    outer: ir.Block,
    loop: ir.For,
    product: ir.Wgmma,
    wait: ir.WgmmaWait,
    stage_waits: list[ir.MbarrierWait],
    defs: dict,
) -> None:
    body = loop.body
    start, stop, _ = loop.operands[:3]
    bool_type = ir.Uniform("bool")
    span = product.span

    # Before the loop: the first iteration's stage wait and product.
    prologue: list[ir.Op] = []
    memo: dict[ir.Value, ir.Value] = {}
    runs = ir.Binary(op="lt", operands=[start, stop], span=span)
    runs.results = [ir.Value(bool_type)]
    prologue.append(runs)
    landed = []
    for w in stage_waits:
        operands = [_first(loop, defs, v, memo, prologue) for v in w.operands]
        landed.append(ir.MbarrierWait(operands=operands, single=w.single, span=w.span))
    prologue.append(_guarded(runs.result, landed, span))
    first = _clone_product(
        product, [_first(loop, defs, v, memo, prologue) for v in product.operands]
    )
    prologue.append(first)
    at = outer.ops.index(loop)
    outer.ops[at:at] = prologue

    # The carried product: the wait reads it, the next iteration's is issued after it.
    carried = ir.Value(product.result.type, product.result.name)
    body.args.append(carried)
    loop.operands.append(first.result)
    loop.results.append(ir.Value(product.result.type, product.result.name))
    wait.operands[0] = carried
    for w in stage_waits:
        body.ops.remove(w)
    body.ops.remove(product)

    # After the last use of the product: its registers are free again for the next one's.
    after = max(
        i
        for i, op in enumerate(body.ops)
        if op is wait or any(wait.result in o.operands for o in [op, *_nested(op)])
    )
    placed = {v for op in body.ops[: after + 1] for v in op.results} | set(body.args)
    issue: list[ir.Op] = []
    values = _Values(loop, defs, placed, issue)
    iv = body.args[0]
    more = ir.Binary(op="lt", operands=[values.next(iv), stop], span=span)
    more.results = [ir.Value(bool_type)]
    issue.append(more)
    landed = [
        ir.MbarrierWait(operands=[values.next(v) for v in w.operands], single=w.single, span=w.span)
        for w in stage_waits
    ]
    issue.append(_guarded(more.result, landed, span))
    operands = list(product.operands)
    prefetched = [values.next(v) for v in operands[:3]]
    for v in operands[3:]:  # the stages: on the last iteration, this iteration's again
        choice = ir.Select(operands=[more.result, values.next(v), values.now(v)], span=span)
        prefetched.append(values.emit(choice, v))
    issued = _clone_product(product, prefetched)
    issue.append(issued)
    body.ops[after + 1 : after + 1] = issue
    body.ops[-1].operands.append(issued.result)


def _nested(op: ir.Op) -> list[ir.Op]:
    return [inner for region in op.regions for inner in region.walk()]


def _clone_product(product: ir.Wgmma, operands: list[ir.Value]) -> ir.Wgmma:
    copy = ir.Wgmma(
        **{k: getattr(product, k) for k in product.attributes()},
        operands=operands,
        span=product.span,
    )
    copy.results = [ir.Value(product.result.type, product.result.name)]
    return copy
