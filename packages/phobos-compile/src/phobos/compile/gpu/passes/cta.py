"""The CTA size (``threads``) and how many CTAs an SM must hold (``min_ctas``).

Both are kernel-wide and come first: every layout is a map over ``threads``.

* ``NUM_THREADS`` among the variant's values fixes the size.
* A kernel with a tensor-core ``dot`` gets about ``GROUPS_PER_THREAD`` 16-byte
  groups of its largest tile a thread, up to ``MAX_FRAGMENT_THREADS``: the warps
  share the accumulator fragments, so more warps keep each thread's share small.
* Any other kernel is memory-bound: the CTA grows from one warp until each thread
  holds ``ELEMENTS_PER_THREAD`` lanes of the largest tile, up to
  ``PREFERRED_THREADS``.  Where a loop carries tiles (layer norm backward's rows, one
  after another, summed into ``dw`` and ``db``), each iteration's reductions and
  arithmetic are on the CTA's critical path, so it grows until a thread holds one
  16-byte vector: measured on an H200 (the dx kernel, 4096 rows of 1024 f16, 8 rows a
  CTA), 19.0 µs on 128 threads, 23.7 on 64, 33.4 on 256; of 4096, 59.7 on 256 threads,
  66.3 on 128, 84.8 on 512.  A larger tile gives each thread more lanes (more loads in
  flight, still in registers) up to ``MOST_ELEMENTS_PER_THREAD`` of the lanes held
  at once (the largest tile or the tiles a straight run loads together, plus the
  tiles loops carry), and only past that more threads, up to ``MAX_MEMORY_THREADS``
  (512): a 1024-thread CTA leaves a thread 64 registers, too few for 64 lanes and
  their addresses.  Measured on an H200 (run 28's probe): layer norm's backward over
  a 12288-wide tile at 1,858 GB/s on 512 threads and 403 on 1024; its forward and
  softmax's 4-row tiles likewise (docs/benchmarks.md).  ``NUM_THREADS`` may still
  ask for 1024.
* Two CTAs an SM are asked for (``__launch_bounds__(threads, 2)``, which caps a
  thread's registers at half the SM's share) where a memory-bound kernel's lanes
  fit in it, so one CTA loads while the other reduces and stores.
* One CTA an SM is asked for where a memory-bound thread's lanes are more than two
  CTAs would leave it registers for: left alone, ptxas may plan for two and halve a
  thread's registers (a 1024-thread CTA got 32 and spilled the lanes; told one, it
  takes 64).  Otherwise the number is left to ptxas (``None``).

A ``dot`` result is held in registers for as long as it accumulates: a variant whose
result gives a thread more lanes than it has registers (128 x 256 f32 on 128 threads:
256) is refused here, at the ``dot``, as a limit, so the tuner prunes it uncompiled.
"""

from __future__ import annotations

import math

from phobos.compile.diagnostics import error
from phobos.compile.gpu import ir
from phobos.compile.limits import MAX_THREAD_REGISTERS, REGISTERS

WARP = 32
MAX_THREADS = 1024
MAX_MEMORY_THREADS = 512
VECTOR_BYTES = 16
ELEMENTS_PER_THREAD = 16
PREFERRED_THREADS = 256
MOST_ELEMENTS_PER_THREAD = 64
GROUPS_PER_THREAD = 4
MAX_FRAGMENT_THREADS = 512
REGISTERS_PER_SM = 65536
PAIRED_CTAS = 2
MAX_PAIRED_THREADS = 256
MAX_PAIRED_WORDS = 64
MAX_REGISTERS = MAX_THREAD_REGISTERS
NUM_THREADS = "NUM_THREADS"

_DTYPE_BYTES = {"bool": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "f16": 2, "bf16": 2}


def element_bytes(dtype: str) -> int:
    return _DTYPE_BYTES.get(dtype, 8 if dtype in ("i64", "u64", "f64") else 4)


def kernel_vector(kernel: ir.Kernel) -> int:
    """Lanes per 16-byte group of the narrowest element the kernel moves through memory."""
    sizes = [
        element_bytes(kernel.tensors[op.tensor].dtype)
        for op in kernel.walk()
        if isinstance(op, (ir.Load, ir.Store)) and any(n is not None for n in op.lengths)
    ]
    return max(VECTOR_BYTES // min(sizes, default=4), 1)


def lanes_per_group(shape: tuple[int, ...], vec: int) -> int:
    """The largest power of two dividing both ``vec`` and the last extent."""
    last = shape[-1] if shape else 1
    while last % vec:
        vec //= 2
    return vec


def choose_cta(kernel: ir.Kernel) -> None:
    """Set ``kernel.threads`` and ``kernel.min_ctas``."""
    values = dict(kernel.values)
    tiles = [v.tile for op in kernel.walk() for v in op.results if isinstance(v.type, ir.Tile)]
    shapes = {t.shape for t in tiles}
    largest = max((math.prod(s) for s in shapes), default=1)
    dots = [op for op in kernel.walk() if isinstance(op, ir.Dot)]
    tensor_cores = any(op.operands[0].dtype in ("f16", "bf16") for op in dots)
    if NUM_THREADS in values:
        threads = values[NUM_THREADS]
        if threads <= 0 or threads % WARP or threads > MAX_THREADS:
            raise error(
                kernel.span,
                f"NUM_THREADS is {threads}; it must be a multiple of {WARP} from {WARP} to {MAX_THREADS}",
                help="NUM_THREADS sets the CTA size; leave it out to let the compiler choose",
            )
    elif dots:
        vec = kernel_vector(kernel)
        groups = [math.prod(s) // lanes_per_group(s, vec) for s in shapes]
        threads = _fragment_threads(groups)
    else:
        held = max(largest, loaded_together(kernel.body)) + carried_lanes(kernel.body)
        lanes = kernel_vector(kernel) if carries_tiles(kernel.body) else ELEMENTS_PER_THREAD
        threads = _memory_threads(largest, held, lanes)
    kernel.threads = threads
    for op in dots:
        _check_result_fits(op, threads)
    held = largest + carried_lanes(kernel.body)
    kernel.min_ctas = _min_ctas(threads, (bool(dots) and tensor_cores) or bool(dots), held)


def _check_result_fits(op: ir.Dot, threads: int) -> None:
    shape = op.result.tile.shape
    words = -(-math.prod(shape) * element_bytes(op.result.tile.dtype) // (4 * threads))
    if words > MAX_THREAD_REGISTERS:
        shown = " x ".join(map(str, shape))
        raise error(
            op.span,
            f"this dot's {shown} result needs {words} registers a thread on {threads} threads; "
            f"a thread has {MAX_THREAD_REGISTERS}",
            help="use more threads (NUM_THREADS) or a smaller tile of the result",
            limit=REGISTERS,
        )


def _memory_threads(largest: int, held: int, lanes: int) -> int:
    held = max(held, largest)
    threads = WARP
    while threads < PREFERRED_THREADS and threads * lanes < largest:
        threads *= 2
    while threads < MAX_MEMORY_THREADS and threads * MOST_ELEMENTS_PER_THREAD < held:
        threads *= 2
    return threads


def _fragment_threads(groups: list[int]) -> int:
    want = -(-max(groups, default=1) // GROUPS_PER_THREAD)
    threads = WARP
    while threads < want and threads < MAX_FRAGMENT_THREADS:
        threads *= 2
    return threads


def _min_ctas(threads: int, has_dot: bool, lanes: int) -> int | None:
    cap = REGISTERS_PER_SM // (PAIRED_CTAS * threads)
    words = -(-lanes // threads)
    if has_dot or cap >= MAX_REGISTERS:
        return None
    if words > cap:
        return 1
    if threads <= MAX_PAIRED_THREADS and words <= MAX_PAIRED_WORDS:
        return PAIRED_CTAS
    return None


def loaded_together(block: ir.Block) -> int:
    """The most lanes one straight run of ops loads (ptxas has them in flight together).

    A tile a loop re-reads in each iteration (``sink_loads``) is an L1 hit next to its
    use and does not count."""
    here = sum(
        math.prod(op.result.tile.shape)
        for op in block.ops
        if isinstance(op, ir.Load) and isinstance(op.result.type, ir.Tile) and not op.reloaded
    )
    inner = [loaded_together(r) for op in block.ops for r in op.regions]
    return max([here, *inner])


def carries_tiles(block: ir.Block) -> bool:
    """A loop of ``block`` carries a tile from one iteration to the next."""
    return any(
        isinstance(a.type, ir.Tile)
        for op in block.walk()
        if isinstance(op, (ir.For, ir.While))
        for a in op.regions[-1].args
    )


def carried_lanes(block: ir.Block) -> int:
    """The lanes of the tiles loops carry or read from before them (not counting those
    made of coordinates and splats alone, which cost no registers to hold)."""
    total = 0
    defs = {v: op for op in block.walk() for v in op.results}
    for op in block.walk():
        if isinstance(op, (ir.For, ir.While)):
            body = op.regions[-1]
            defined = {v for inner in body.walk() for v in inner.results} | set(body.args)
            outside = {
                v
                for inner in body.walk()
                for v in inner.operands
                if v not in defined
                and isinstance(v.type, ir.Tile)
                and not ir.rematerialisable(v, defs)
            }
            carried = [a for a in body.args if isinstance(a.type, ir.Tile)]
            total += sum(math.prod(v.tile.shape) for v in [*outside, *carried])
    return total
