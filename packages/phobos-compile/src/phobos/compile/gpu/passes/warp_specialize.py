"""Warp specialisation: a producer warpgroup refills a TMA-pipelined loop's rings while the
kernel's threads compute.

After pipelining (``passes/pipeline.py``) one thread of the CTA refills each stage of a
ring that goes by TMA, between its own iteration's work: it waits there for the slowest
thread to hand the stage back, and its warpgroup's products wait for it.  This pass
gives that side of the schedule a warpgroup of its own:

* the kernel's threads become the *consumers*; a warpgroup more is launched after them
  (``Kernel.producer_threads``), and one of its threads runs the *producer* region;
* before the split, the buffers are declared, the uniform values the refills need are
  computed, one thread initialises the mbarriers and every thread passes one barrier;
* the producer runs the copies the pipeline issued before the loop, then a loop over the
  same iterations that computes only what the refills need (a slice of the loop: the
  stage, its parity, the windows' starts) and issues them, each after its stage's
  empty-mbarrier wait; its warpgroup gives its registers back (``setmaxnreg``) and the
  consumers take them, as many as the CTA's register pool holds;
* the consumers run the rest of the kernel: the loop without its refills, every barrier
  among them only (a named barrier; the producer never arrives).

The partitions meet only at the rings' mbarriers: the producer runs ahead as far as the
stages handed back let it, whatever the consumers' pace.  The pass applies on sm_90a
(``setmaxnreg``) to a kernel whose one TMA-pipelined loop sits at its top level, when the
refills' slice is uniform arithmetic, no thread returns early and no op synchronises the
whole CTA by itself (the producer would wait for a hand-back that never comes, or the
consumers for a producer that left), and the CTA's shared memory already keeps it alone
on its SM: the split CTA takes the SM's registers (``setmaxnreg`` needs ptxas to give it
all its launch bounds allow), so a kernel two of whose CTAs would share an SM loses half
its warps (attention at D 64: 222 TFLOP/s whole, 162 split; at D 128, alone on its SM
either way, 267 whole, 282 split; probe 34).  ``WARP_SPECIALIZE=0`` in a
variant's values keeps the single partition (the tuner may choose it).
"""

from __future__ import annotations

from phobos.compile.gpu import ir
from phobos.compile.gpu.arch import shared_bytes_per_sm

WARP_SPECIALIZE = "WARP_SPECIALIZE"
PRODUCER_THREADS = 128  # a warpgroup: setmaxnreg changes whole warpgroups
PRODUCER_REGISTERS = 40
REGISTER_FILE = 65536  # 32-bit registers an SM
MAX_REGISTERS = 240  # a thread, kept below the ISA's 255

_PURE = (ir.Constant, ir.Param, ir.Extent, ir.Stride, ir.BlockIndex, *ir.ELEMENTWISE)
_DECLARATIONS = (ir.SharedAlloc, ir.MbarrierAlloc)
_WHOLE_CTA = (ir.Return, ir.Atomic)  # an early exit; atomics' printed CTA barriers


def specialize_warps(kernel: ir.Kernel) -> None:
    if not _eligible(kernel):
        return
    body = kernel.body
    loops = [op for op in body.ops if isinstance(op, ir.For) and _refills(op.body)]
    nested = [op for op in kernel.walk() if isinstance(op, ir.For) and _refills(op.body)]
    if len(loops) != 1 or len(nested) != 1:
        return
    (loop,) = loops
    at = body.ops.index(loop)
    prologue = [op for op in body.ops[:at] if isinstance(op, ir.If) and _copies(op)]
    refills = _refills(loop.body)
    sliced = _loop_slice(loop, refills)
    if sliced is None:
        return
    inner, carried, outside = sliced
    needed = set(outside)
    needed |= {v for op in prologue for v in _used(op)}
    needed |= set(loop.operands[:3]) | {loop.inits[j] for j in carried}
    hoisted = _outer_slice(body.ops[:at], needed)
    if hoisted is None:
        return
    inits = [op for op in body.ops[:at] if isinstance(op, ir.MbarrierInit)]
    producer = _producer(loop, prologue, refills, inner, carried)
    moved = {id(op) for op in [*hoisted, *inits, *prologue]}
    consumer = ir.Block(ops=[op for op in body.ops if id(op) not in moved])
    loop.body.ops = [op for op in loop.body.ops if op not in refills]
    for op in consumer.walk():
        if isinstance(op, ir.Barrier):
            op.threads = kernel.threads
    consumer.ops.append(ir.Yield())
    producer.ops.append(ir.Yield())
    kernel.producer_threads = PRODUCER_THREADS
    kernel.min_ctas = 1  # without it ptxas cannot tell the register count setmaxnreg starts from
    split = ir.Specialize(
        producer_registers=PRODUCER_REGISTERS,
        consumer_registers=_consumer_registers(kernel),
        regions=[producer, consumer],
        span=loop.span,
    )
    body.ops = [*hoisted, *inits, ir.Barrier(span=loop.span), split]


def _eligible(kernel: ir.Kernel) -> bool:
    values = dict(kernel.values)
    return (
        kernel.arch == "sm_90a"
        and values.get(WARP_SPECIALIZE, 1) != 0
        and kernel.min_ctas in (None, 1)
        and 2 * kernel.shared_bytes > shared_bytes_per_sm(kernel.arch)
        and kernel.threads % PRODUCER_THREADS == 0
        and not any(isinstance(op, (*_WHOLE_CTA, ir.Specialize)) for op in kernel.walk())
    )


def _consumer_registers(kernel: ir.Kernel) -> int:
    """What each consumer may hold: the pool a launch of ``threads + 128`` threads gets (ptxas
    gives a kernel with ``setmaxnreg`` all its launch bounds allow), less the producer's."""
    total = kernel.threads + PRODUCER_THREADS
    launched = min(255, REGISTER_FILE // total) // 8 * 8
    spare = launched * total - PRODUCER_REGISTERS * PRODUCER_THREADS
    return min(MAX_REGISTERS, spare // kernel.threads // 8 * 8)


def _copies(op: ir.Op) -> bool:
    return any(isinstance(o, ir.CopyTma) for r in op.regions for o in r.walk())


def _refills(body: ir.Block) -> list[ir.Op]:
    """The ops of a pipelined loop that refill its TMA rings: branches holding the copies."""
    return [op for op in body.ops if isinstance(op, ir.If) and _copies(op)]


def _used(op: ir.Op) -> list[ir.Value]:
    """What ``op`` and the ops of its regions read from outside them."""
    inside = {v for r in op.regions for o in r.walk() for v in o.results}
    inside |= {a for r in op.regions for a in r.args}
    used = list(op.operands) + [v for r in op.regions for o in r.walk() for v in o.operands]
    return [v for v in used if v not in inside]


def _loop_slice(loop: ir.For, refills: list[ir.Op]):
    """What the refills need of the loop: its ops that compute it (uniform arithmetic
    alone, else None), the carried positions it reads, and the values from outside."""
    body = loop.body
    defs = {v: op for op in body.ops for v in op.results}
    final = body.ops[-1]
    assert isinstance(final, ir.Yield)
    inner: set[int] = set()
    carried: set[int] = set()
    outside: set[ir.Value] = set()
    stack = [v for op in refills for v in _used(op)]
    while stack:
        v = stack.pop()
        if v is body.args[0]:
            continue
        if v in body.args:
            j = body.args.index(v) - 1
            if j not in carried:
                carried.add(j)
                stack.append(final.operands[j])
            continue
        op = defs.get(v)
        if op is None:
            outside.add(v)
            continue
        if not (isinstance(op, _PURE) and isinstance(v.type, ir.Uniform)):
            return None
        if id(op) not in inner:
            inner.add(id(op))
            stack += op.operands
    return inner, sorted(carried), outside


def _outer_slice(ops: list[ir.Op], needed: set[ir.Value]) -> list[ir.Op] | None:
    """The ops before the loop that compute ``needed``, in order: declarations and
    uniform arithmetic alone, else None."""
    defs = {v: op for op in ops for v in op.results}
    chosen: set[int] = set()
    stack = list(needed)
    while stack:
        op = defs.get(stack.pop())
        if op is None or id(op) in chosen:
            continue
        pure = isinstance(op, _PURE) and all(isinstance(v.type, ir.Uniform) for v in op.results)
        if not (pure or isinstance(op, _DECLARATIONS)):
            return None
        chosen.add(id(op))
        stack += op.operands
    return [op for op in ops if id(op) in chosen]


def _producer(
    loop: ir.For, prologue: list[ir.Op], refills: list[ir.Op], inner: set[int], carried: list[int]
) -> ir.Block:
    """The producer's program: the prologue's copies, then the loop's slice and refills,
    every copy and wait its own (one thread runs them)."""
    body = loop.body
    mapping: dict[ir.Value, ir.Value] = {}
    iv = ir.Value(body.args[0].type, body.args[0].name)
    mapping[body.args[0]] = iv
    args = [iv]
    for j in carried:
        old = body.args[1 + j]
        mapping[old] = ir.Value(old.type, old.name)
        args.append(mapping[old])
    ops = [_clone(op, mapping) for op in body.ops if id(op) in inner or op in refills]
    final = body.ops[-1]
    ops.append(
        ir.Yield(operands=[mapping.get(final.operands[j], final.operands[j]) for j in carried])
    )
    refill_loop = ir.For(
        operands=[*loop.operands[:3], *(loop.inits[j] for j in carried)],
        regions=[ir.Block(args=args, ops=ops)],
        span=loop.span,
    )
    refill_loop.results = [ir.Value(loop.results[j].type, loop.results[j].name) for j in carried]
    producer = ir.Block(ops=[*prologue, refill_loop])
    for op in producer.walk():
        if isinstance(op, (ir.CopyTma, ir.MbarrierWait)):
            op.single = False
    return producer


def _clone(op: ir.Op, mapping: dict[ir.Value, ir.Value]) -> ir.Op:
    """``op`` (and its regions) again, reading ``mapping``'s values; new results are added
    to it."""
    regions = []
    for region in op.regions:
        args = []
        for a in region.args:
            mapping[a] = ir.Value(a.type, a.name)
            args.append(mapping[a])
        regions.append(ir.Block(args=args, ops=[_clone(o, mapping) for o in region.ops]))
    copy = type(op)(
        **{k: getattr(op, k) for k in op.attributes()},
        operands=[mapping.get(v, v) for v in op.operands],
        regions=regions,
        span=op.span,
    )
    for v in op.results:
        mapping[v] = ir.Value(v.type, v.name)
    copy.results = [mapping[v] for v in op.results]
    return copy
