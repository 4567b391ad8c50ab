"""Software pipelining: a loop's copies to shared memory issued iterations ahead, in a ring.

Instruction selection copies every window a product reads to shared memory right
where it is loaded, and waits for it at once.  In a loop that leaves the tensor
cores idle while the copy is in flight.  This pass takes every ``cp.async`` in a
loop's body whose window moves with the loop variable alone (its starts are made of
the loop variable and values fixed before the loop: matmul's ``a`` and ``b``,
attention's ``k`` and ``v``, not ``q``) and

* makes its buffer a ring of ``S`` stages, allocated before the loop;
* issues, before the loop, the copies of the first ``D`` iterations, one commit
  group each (empty past the loop's end, so the group count stays the same);
* at the top of each iteration's first use of a ring, waits until only the newest
  ``D - 1`` groups are in flight (this iteration's has landed), fences them for the
  asynchronous proxy where a ``wgmma`` reads them, passes one barrier (every thread's
  copies are visible, and every thread is done with the stage it frees), and then
  issues iteration ``i + D``'s copies into that freed stage;
* gives each reader of a ring the stage it reads, a value the loop carries.

Where every ring of the loop may go by TMA (``gpu/tma.py``) no barrier is needed: each
stage has a *full* mbarrier (the copies into it arrive, owing their bytes) and an
*empty* one (every thread arrives when done with the stage: at the end of the
iteration that read it, or of the next where a product in flight reads it).  One
thread issues each refill after waiting for the stage's empty phase, and each
iteration waits for its own stage's full phase; the loop carries both parities.  So
no thread waits for another but the one that refills a stage, and it only for the
threads still reading that stage.

``D = S - 1 - L``: a stage read in iteration ``i`` is free once every thread passed
the next barrier after the read completed.  A load from shared memory completes at
once (``L = 0``: the stage read last iteration is refilled).  A ``wgmma`` the loop
could carry in flight to the next iteration (``passes/carried.py``) completes only
there, so a loop with one reading a ring takes ``L = 1`` (refilled an iteration
later) and marks its rings so (``SharedAlloc.lag``); ``passes/mma_waits.py``, which
runs next, keeps a product in flight only over such a ring.  So ``D`` iterations of
copies are in flight behind each one's work, at the cost of one wait and one barrier
(or, by TMA, two mbarrier waits and an arrival) an iteration.  ``S`` is the variant's
``NUM_STAGES`` when it has one, else as many as the shared-memory budget holds,
``2 + L`` to ``MAX_STAGES``.  Where the budget holds fewer than ``2 + L`` stages,
``L = 0`` (every product completes within its iteration); where it holds fewer than
two, the loop is not pipelined.  The ring's own
accesses are ordered here; the barrier pass leaves them alone inside the loop.
"""

from __future__ import annotations

from dataclasses import replace

from phobos.compile.gpu import ir
from phobos.compile.gpu.arch import shared_bytes_per_sm
from phobos.compile.gpu.builder import Builder
from phobos.compile.gpu.layouts import shared_bytes
from phobos.compile.gpu.passes.carried import carried_products
from phobos.compile.gpu.tma import tma_box

MAX_STAGES = 4
NUM_STAGES = "NUM_STAGES"
_RESERVED = 8 * 1024  # what a CTA keeps besides: the system's 1 KiB and the small buffers

_PURE = (ir.Constant, ir.Param, ir.Extent, ir.Stride, ir.BlockIndex, *ir.ELEMENTWISE)


def pipeline_copies(kernel: ir.Kernel) -> None:
    for block in _blocks(kernel.body):
        for op in list(block.ops):
            if isinstance(op, ir.For):
                _Pipeliner(kernel, op).run(block)


def _blocks(block: ir.Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)


class _Pipeliner:
    def __init__(self, kernel: ir.Kernel, loop: ir.For) -> None:
        self.kernel = kernel
        self.loop = loop
        self.body = loop.body
        self.defs = {v: op for op in self.body.ops for v in op.results}

    # ------------------------------------------------------------------ what moves

    def affine(self, v: ir.Value) -> bool:
        """``v`` is made of the loop variable and values from before the loop alone."""
        if v is self.body.args[0]:
            return True
        op = self.defs.get(v)
        if op is None:
            return v not in self.body.args
        return isinstance(op, _PURE) and all(self.affine(o) for o in op.operands)

    def candidates(self) -> list[tuple[ir.SharedAlloc, ir.CopyAsync, list[ir.Op]]]:
        """Each copy the ring takes: its buffer, itself and its commit, wait and fence."""
        out = []
        ops = self.body.ops
        for i, op in enumerate(ops):
            if not isinstance(op, ir.CopyAsync):
                continue
            alloc = self.defs.get(op.operands[0])
            if not isinstance(alloc, ir.SharedAlloc) or len(op.operands) != 1 + len(op.lengths):
                continue
            if not all(self.affine(s) for s in op.operands[1:]):
                continue
            follow = ops[i + 1 : i + 4]
            if len(follow) < 2 or not isinstance(follow[0], ir.AsyncCommit):
                continue
            if not (isinstance(follow[1], ir.AsyncWait) and follow[1].pending == 0):
                continue
            tail = follow[:2] + (
                [follow[2]] if len(follow) > 2 and isinstance(follow[2], ir.FenceAsync) else []
            )
            if not self.readers_take_stages(alloc.result):
                continue
            out.append((alloc, op, tail))
        return out

    def readers_take_stages(self, buffer: ir.Value) -> bool:
        for op in self.body.walk():
            if buffer in op.operands and not isinstance(
                op, (ir.CopyAsync, ir.Wgmma, ir.SharedLoad)
            ):
                return False
        return True

    def stages(self, step_bytes: int, lag: int) -> int:
        least = 2 + lag
        values = dict(self.kernel.values)
        if NUM_STAGES in values:
            return max(least, values[NUM_STAGES])
        return max(least, min(MAX_STAGES, self.room(step_bytes)))

    def room(self, step_bytes: int) -> int:
        """How many stages of ``step_bytes`` the shared-memory budget holds."""
        if NUM_STAGES in dict(self.kernel.values):
            return MAX_STAGES
        per_sm = shared_bytes_per_sm(self.kernel.arch)
        budget = per_sm // (self.kernel.min_ctas or 1) - _RESERVED - self.outside_bytes()
        return budget // max(step_bytes, 1)

    def lag(self, rings: set[ir.Value]) -> int:
        """``L``: 1 where a product the loop may carry in flight reads a ring
        (``passes/carried.py``; ``passes/mma_waits.py``, next, carries it), else 0."""
        return int(
            any(rings.intersection(c.shared_operands()) for c in carried_products(self.loop))
        )

    def outside_bytes(self) -> int:
        """Shared memory live beside the ring: the buffers made before the loop."""
        total = 0
        for op in self.kernel.walk():
            if isinstance(op, ir.SharedAlloc) and op not in self.body.ops:
                t = op.result.type
                assert isinstance(t, ir.Shared)
                total += shared_bytes(t.layout, t.stages)
        return total

    # ------------------------------------------------------------------ the rewrite

    def run(self, outer: ir.Block) -> None:
        found = self.candidates()
        if not found:
            return
        step_bytes = 0
        for alloc, _, _ in found:
            t = alloc.result.type
            assert isinstance(t, ir.Shared)
            step_bytes += shared_bytes(t.layout)
        first = min(self.body.ops.index(copy) for _, copy, _ in found)
        lag = self.lag({alloc.result for alloc, _, _ in found})
        if self.room(step_bytes) < 2 + lag:  # no room for a stage behind the products
            lag = 0
        if self.room(step_bytes) < 2:
            return  # not even two stages: the copies stay where they are
        stages = self.stages(step_bytes, lag)
        ahead_by = stages - 1 - lag  # D: the iterations whose copies are in flight
        fence = any(isinstance(o, ir.FenceAsync) for _, _, tail in found for o in tail)
        boxes = [tma_box(self.kernel, copy, alloc.result.type) for alloc, copy, _ in found]
        self.boxes = boxes if all(box is not None for box in boxes) else None
        b = Builder(outer)
        b.span = self.loop.span
        start, stop, step = self.loop.operands[:3]
        index = start.dtype
        at = outer.ops.index(self.loop)
        before: list[ir.Op] = []
        # The rings, before the loop.
        rings: dict[ir.Value, ir.Value] = {}
        for alloc, _, _ in found:
            t = alloc.result.type
            assert isinstance(t, ir.Shared)
            ring = ir.SharedAlloc(span=alloc.span, lag=lag)
            ring.results = [ir.Value(replace(t, stages=stages), alloc.result.name)]
            before.append(ring)
            rings[alloc.result] = ring.result
        prologue = ir.Block()
        self.bars = self.empty = None
        if self.boxes is not None:  # by TMA: two mbarriers a stage, ready before any copy
            full = ir.MbarrierAlloc(span=self.loop.span)
            full.results = [ir.Value(ir.Mbarriers(stages), "full")]
            empty = ir.MbarrierAlloc(span=self.loop.span)
            empty.results = [ir.Value(ir.Mbarriers(stages), "empty")]
            self.bars, self.empty = full.result, empty.result
            before += [
                full,
                empty,
                ir.MbarrierInit(arrivals=len(found), operands=[self.bars], span=self.loop.span),
                ir.MbarrierInit(
                    arrivals=self.kernel.threads, operands=[self.empty], span=self.loop.span
                ),
                ir.Barrier(span=self.loop.span),
            ]
        # The first D iterations' copies.
        with b.inside(prologue):
            for s in range(ahead_by):
                offset = b.binary("mul", b.constant(s, index), step)
                at_iv = b.binary("add", start, offset)
                self.issue(
                    b,
                    found,
                    rings,
                    at_iv,
                    b.binary("lt", at_iv, stop, "bool"),
                    b.constant(s, "i32"),
                )
                if self.bars is None:
                    b.add(ir.AsyncCommit())
        before += prologue.ops
        outer.ops[at:at] = before
        # The stage this iteration reads, carried by the loop.
        stage = ir.Value(ir.Uniform("i32"), "stage")
        self.body.args.append(stage)
        self.loop.operands.append(b.constant(0, "i32"))
        outer.ops.insert(outer.ops.index(self.loop), b.block.ops.pop())  # the constant
        result = ir.Value(ir.Uniform("i32"), "stage")
        self.loop.results.append(result)
        phase = refill_phase = None
        if self.bars is not None:
            # The parity of the phase the stage's full mbarrier completes next, and of the
            # phase of the refilled stage's empty mbarrier its refill waits for: the one
            # before the first (1), which counts as complete, until the refills wrap.
            phase = self.carry("phase", self.loop.operands[-1])  # 0, as the stage starts
            one = b.constant(1, "i32")
            outer.ops.insert(outer.ops.index(self.loop), b.block.ops.pop())
            refill_phase = self.carry("refill_phase", one)
        # In the body: the copies go; the wait, fence, barrier and next issue take the place
        # of the first; readers take the stage.
        gone = {id(op) for alloc, copy, tail in found for op in (alloc, copy, *tail)}
        head = ir.Block()
        with b.inside(head):
            b.span = found[0][1].span
            if self.bars is None:  # every thread's copies landed, every thread done with
                b.add(ir.AsyncWait(pending=ahead_by - 1))  # the stage refilled next
                if fence:
                    b.add(ir.FenceAsync())
                b.add(ir.Barrier())
            count = b.constant(stages, "i32")
            later = b.binary("add", stage, b.constant(ahead_by, "i32"))
            wraps = b.binary("ge", later, count, "bool")
            write = b.select(wraps, b.binary("sub", later, count), later)
            ahead = b.binary(
                "add", self.body.args[0], b.binary("mul", b.constant(ahead_by, index), step)
            )
            self.issue(
                b,
                found,
                rings,
                ahead,
                b.binary("lt", ahead, stop, "bool"),
                write,
                refill_phase,
            )
            if self.bars is None:
                b.add(ir.AsyncCommit())
            else:  # the copies into the freed stage are on their way: wait for this one's
                b.add(ir.MbarrierWait(operands=[self.bars, stage, phase]))
        kept = [op for op in self.body.ops[:first] if id(op) not in gone]
        rest = [op for op in self.body.ops[first:] if id(op) not in gone]
        yield_op = rest.pop()
        assert isinstance(yield_op, ir.Yield)
        tail = ir.Block()
        with b.inside(tail):
            is_last = b.binary("eq", stage, b.constant(stages - 1, "i32"), "bool")
            following = b.select(
                is_last, b.constant(0, "i32"), b.binary("add", stage, b.constant(1, "i32"))
            )
            if phase is not None and refill_phase is not None:
                one = b.constant(1, "i32")
                next_phase = b.select(is_last, b.binary("xor", phase, one), phase)
                refill_wraps = b.binary("eq", write, b.constant(stages - 1, "i32"), "bool")
                next_refill_phase = b.select(
                    refill_wraps, b.binary("xor", refill_phase, one), refill_phase
                )
                self.hand_back(b, stage, stages, lag, start)
        yield_op.operands.append(following)
        if phase is not None:
            yield_op.operands += [next_phase, next_refill_phase]
        self.body.ops = kept + head.ops + rest + tail.ops + [yield_op]
        for old, ring in rings.items():
            ir.replace_uses(self.body, old, ring)
        for op in self.body.walk():
            if isinstance(op, ir.Wgmma):
                if op.operands[0] in rings.values():
                    op.a_stage = True
                if op.operands[1] in rings.values():
                    op.b_stage = True
                extra = [stage] * (
                    int(op.operands[0] in rings.values()) + int(op.operands[1] in rings.values())
                )
                op.operands = op.operands[:3] + extra
            elif isinstance(op, ir.SharedLoad) and op.operands[0] in rings.values():
                op.operands = [op.operands[0], stage]

    def carry(self, name: str, init: ir.Value) -> ir.Value:
        """A new value the loop carries, from ``init``: its argument in the body."""
        arg = ir.Value(ir.Uniform("i32"), name)
        self.body.args.append(arg)
        self.loop.operands.append(init)
        self.loop.results.append(ir.Value(ir.Uniform("i32"), name))
        return arg

    def hand_back(self, b: Builder, stage: ir.Value, stages: int, lag: int, start) -> None:
        """The end of an iteration: every thread arrives on the empty mbarrier of the stage
        it is done with, this iteration's, or with a product in flight the previous one's
        (none in the first iteration)."""
        if lag == 0:
            b.add(ir.MbarrierArrive(operands=[self.empty, stage]))
            return
        is_first = b.binary("eq", stage, b.constant(0, "i32"), "bool")
        previous = b.select(
            is_first,
            b.constant(stages - 1, "i32"),
            b.binary("sub", stage, b.constant(1, "i32")),
        )
        region = ir.Block()
        with b.inside(region):
            b.add(ir.MbarrierArrive(operands=[self.empty, previous]))
            b.add(ir.Yield())
        later = b.binary("ne", self.body.args[0], start, "bool")
        b.add(ir.If(operands=[later], regions=[region, ir.Block(ops=[ir.Yield()])]))

    def issue(
        self,
        b: Builder,
        found,
        rings,
        at_iv: ir.Value,
        cond: ir.Value,
        stage: ir.Value,
        refill_phase: ir.Value | None = None,
    ) -> None:
        """The copies of the iteration whose loop variable is ``at_iv``, into ``stage``, where
        ``cond`` holds (past the loop's end there is none).  A refill by TMA first waits
        (one thread) until every thread handed the stage back: its empty mbarrier completed
        the phase of parity ``refill_phase``."""
        region = ir.Block()
        with b.inside(region):
            if refill_phase is not None and self.boxes is not None:
                b.add(ir.MbarrierWait(operands=[self.empty, stage, refill_phase], single=True))
            for i, (_, copy, _) in enumerate(found):
                starts = [self.clone(b, s, at_iv, {}) for s in copy.operands[1:]]
                if self.boxes is not None:
                    b.add(
                        ir.CopyTma(
                            tensor=copy.tensor,
                            lengths=copy.lengths,
                            box=self.boxes[i],
                            operands=[rings[copy.operands[0]], self.bars, *starts, stage],
                            span=copy.span,
                        )
                    )
                    continue
                b.add(
                    ir.CopyAsync(
                        tensor=copy.tensor,
                        lengths=copy.lengths,
                        layout=copy.layout,
                        checked=copy.checked,
                        aligned=copy.aligned,
                        operands=[rings[copy.operands[0]], *starts, stage],
                        span=copy.span,
                    )
                )
            b.add(ir.Yield())
        b.add(ir.If(operands=[cond], regions=[region, ir.Block(ops=[ir.Yield()])]))

    def clone(self, b: Builder, v: ir.Value, iv: ir.Value, done: dict) -> ir.Value:
        """``v`` computed again with the loop variable replaced by ``iv``."""
        if v is self.body.args[0]:
            return iv
        op = self.defs.get(v)
        if op is None:
            return v
        if v in done:
            return done[v]
        operands = [self.clone(b, o, iv, done) for o in op.operands]
        copy = type(op)(
            **{k: getattr(op, k) for k in op.attributes()}, operands=operands, span=op.span
        )
        done[v] = b.value(copy, v.type, v.name)
        return done[v]
