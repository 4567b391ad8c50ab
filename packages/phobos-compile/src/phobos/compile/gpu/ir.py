"""The GPU IR: what one CTA of a kernel variant does, with registers, shared memory and barriers explicit.

The tile IR says *what* a block computes; this IR says *how* a CTA of ``threads``
threads does it, and every performance decision of the back end is a pass over it
(``passes/``).  It is SSA with structured control flow:

* a ``Value`` is defined once, by an op or as a block argument, and has a type:
  ``Uniform`` (a scalar every thread holds, block-uniform), ``Tile`` (a register tile
  distributed by a ``Layout``; None until layout assignment), ``Shared`` (a buffer of
  shared memory, possibly with several stages), or ``Token`` (completion of
  asynchronous work);
* an ``Op`` has operands (values), results (values), attributes (its dataclass
  fields) and regions (``Block``s, for ``For``, ``If`` and ``While``); a region ends
  with a ``Yield`` (or ``Condition``) whose operands become the op's results (or the
  next iteration's block arguments).

Absent lanes do not exist here: lowering (``lower.py``) makes presence explicit as
bool tiles and masked memory accesses, so every pass sees plain values.

Elementwise ops (``Unary``, ``Binary``, ``MathFn``, ``Cast``, ``Select``) take
uniform or tile operands alike: on uniforms they give a uniform, on tiles of one
layout a tile of it.

The IR is mutable (passes rewrite it in place), printable (``printer.py``,
``phobos-compile --emit gpuir``) and checked after every pass (``verify.py``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar, Union

from phobos.compile.gpu.layouts import Layout, SharedLayout
from phobos.compile.ir import nodes as tir
from phobos.compile.span import NO_SPAN, Span

# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class Uniform:
    """A block-uniform scalar of ``dtype``."""

    dtype: str

    def __str__(self) -> str:
        return self.dtype


@dataclass(frozen=True)
class Tile:
    """A register tile of ``shape``, distributed over the CTA's threads by ``layout``."""

    dtype: str
    shape: tuple[int, ...]
    layout: Layout | None = None

    def __str__(self) -> str:
        return f"tile<{self.dtype}>[{', '.join(map(str, self.shape))}]"

    def with_layout(self, layout: Layout | None) -> Tile:
        return Tile(self.dtype, self.shape, layout)


@dataclass(frozen=True)
class Shared:
    """A shared-memory buffer holding ``stages`` tiles of ``shape`` placed by ``layout``."""

    dtype: str
    shape: tuple[int, ...]
    layout: SharedLayout
    stages: int = 1

    def __str__(self) -> str:
        stages = f" x{self.stages}" if self.stages > 1 else ""
        return f"smem<{self.dtype}>[{', '.join(map(str, self.shape))}]{stages} {self.layout}"


@dataclass(frozen=True)
class Token:
    """The completion of asynchronous work (a wgmma group in flight)."""

    def __str__(self) -> str:
        return "token"


@dataclass(frozen=True)
class Mbarriers:
    """``count`` mbarriers in shared memory, one a stage of a ring: each counts its phase's
    arrivals and the bytes asynchronous copies (TMA) still owe it."""

    count: int

    def __str__(self) -> str:
        return f"mbarrier x{self.count}"


Type = Union[Uniform, Tile, Shared, Token, Mbarriers]

_ids = itertools.count()


class Value:
    """An SSA value; compared by identity."""

    __slots__ = ("id", "name", "type")

    def __init__(self, type: Type, name: str = "") -> None:
        self.type = type
        self.name = name
        self.id = next(_ids)

    @property
    def tile(self) -> Tile:
        assert isinstance(self.type, Tile), f"{self} is not a tile"
        return self.type

    @property
    def dtype(self) -> str:
        assert not isinstance(self.type, (Token, Mbarriers))
        return self.type.dtype

    @property
    def is_uniform(self) -> bool:
        return isinstance(self.type, Uniform)

    def __repr__(self) -> str:
        return f"%{self.name or self.id}: {self.type}"


# --------------------------------------------------------------------------- ops and blocks


@dataclass(eq=False)
class Block:
    """A region's body: arguments (loop variables, carried values) and ops in order."""

    args: list[Value] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)

    def walk(self) -> Iterator[Op]:
        """Every op of the block and of the regions nested in it, in order."""
        for op in self.ops:
            yield op
            for region in op.regions:
                yield from region.walk()


@dataclass(eq=False, kw_only=True)
class Op:
    """An operation: ``results = NAME(operands) {attributes} [regions]``."""

    NAME: ClassVar[str] = "op"
    operands: list[Value] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    regions: list[Block] = field(default_factory=list)
    span: Span = field(default=NO_SPAN, repr=False)

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.NAME} has {len(self.results)} results"
        return self.results[0]

    def attributes(self) -> dict[str, object]:
        """The op's attributes, for printing: every dataclass field of the subclass."""
        skip = {"operands", "results", "regions", "span"}
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in skip and getattr(self, f.name) is not None
        }


# ------------------------------------------------------------- uniform sources


@dataclass(eq=False, kw_only=True)
class Constant(Op):
    NAME = "constant"
    value: int | float | bool


@dataclass(eq=False, kw_only=True)
class Param(Op):
    """A scalar kernel parameter's value."""

    NAME = "param"
    param: str


@dataclass(eq=False, kw_only=True)
class Extent(Op):
    """A named extent's run-time value (index)."""

    NAME = "extent"
    extent: str


@dataclass(eq=False, kw_only=True)
class Stride(Op):
    """A tensor's stride along ``axis`` in elements (1 where the specialisation fixes it)."""

    NAME = "stride"
    tensor: str
    axis: int


@dataclass(eq=False, kw_only=True)
class BlockIndex(Op):
    """``ctx.block.x`` (``group`` "block") or ``ctx.grid.x`` (``group`` "grid")."""

    NAME = "block_index"
    group: str
    axis: str


# ------------------------------------------------------------- elementwise


@dataclass(eq=False, kw_only=True)
class Unary(Op):
    """``op``: "neg", "not" (logical), "bitnot"."""

    NAME = "unary"
    op: str


@dataclass(eq=False, kw_only=True)
class Binary(Op):
    """The tile IR's binary ops (``tir.Binary``), on operands of one type and layout."""

    NAME = "binary"
    op: str


@dataclass(eq=False, kw_only=True)
class MathFn(Op):
    NAME = "math"
    fn: str


@dataclass(eq=False, kw_only=True)
class Cast(Op):
    NAME = "cast"


@dataclass(eq=False, kw_only=True)
class Select(Op):
    """``cond ? if_true : if_false``, lane by lane."""

    NAME = "select"


ELEMENTWISE = (Unary, Binary, MathFn, Cast, Select)

# ------------------------------------------------------------- tile sources and shapes


@dataclass(eq=False, kw_only=True)
class Splat(Op):
    """A uniform made a tile (every lane the value)."""

    NAME = "splat"


@dataclass(eq=False, kw_only=True)
class Coord(Op):
    """A tile (i32) whose every lane is its own coordinate along ``axis``."""

    NAME = "coord"
    axis: int


@dataclass(eq=False, kw_only=True)
class ExpandDims(Op):
    """A new axis of extent 1 (free: the layout gains a zero axis)."""

    NAME = "expand_dims"
    axis: int


@dataclass(eq=False, kw_only=True)
class Broadcast(Op):
    """Extent-1 axes repeated to the result's shape; the operand's layout is the result's
    ``collapsed`` along them, so no data moves."""

    NAME = "broadcast"


@dataclass(eq=False, kw_only=True)
class Transpose(Op):
    """A 2-D tile's axes swapped (free: the layout's bases swap)."""

    NAME = "transpose"


@dataclass(eq=False, kw_only=True)
class Squeeze(Op):
    """An axis of extent 1 removed (free)."""

    NAME = "squeeze"
    axis: int


@dataclass(eq=False, kw_only=True)
class ToUniform(Op):
    """A 1-element tile that every thread holds, as a uniform (free)."""

    NAME = "to_uniform"


@dataclass(eq=False, kw_only=True)
class Convert(Op):
    """The same tile in another layout (expanded by ``passes/conversions.py``)."""

    NAME = "convert"


@dataclass(eq=False, kw_only=True)
class Permute(Op):
    """A conversion between layouts with the same threads per element: registers renamed."""

    NAME = "permute"


# ------------------------------------------------------------- reductions


@dataclass(eq=False, kw_only=True)
class Reduce(Op):
    """``op`` (``ir/reduction_ops.py``) along ``axis``; expanded by ``passes/reductions.py``.

    Operands: the tile, and with ``masked`` a bool tile of its shape: lanes where it is
    false count as the identity (absent lanes), each as it is combined."""

    NAME = "reduce"
    op: str
    axis: int
    masked: bool = False


@dataclass(eq=False, kw_only=True)
class ReduceRegisters(Op):
    """Combine a thread's registers along ``axis`` (padding skipped, and with ``masked``
    the registers whose mask, operand 1, is false): the axis keeps only its lane and warp
    bits, renumbered."""

    NAME = "reduce_registers"
    op: str
    axis: int
    masked: bool = False


@dataclass(eq=False, kw_only=True)
class ShuffleReduce(Op):
    """Combine across the lanes whose index differs in the axis's lane bits (``shfl.xor``)."""

    NAME = "shuffle_reduce"
    op: str
    axis: int


# ------------------------------------------------------------- global memory


@dataclass(eq=False, kw_only=True)
class Load(Op):
    """A window of ``tensor`` into registers.  Operands: one start per tensor axis, then
    the optional ``mask`` (bool tile; lanes where it is false are not read).

    ``lengths[axis]`` is the window's length along a tensor axis (None: a point).
    Lanes outside the tensor are never read (``checked``: the bounds may fail; the
    checker proved them otherwise); unread lanes hold zero.  ``vector`` (elements per
    access) and ``aligned`` (the accesses provably on their vector size) are set by
    ``passes/vectorize.py``.
    """

    NAME = "load"
    tensor: str
    lengths: tuple[int | None, ...]
    checked: bool = True
    masked: bool = False
    vector: int = 1
    aligned: bool = False
    reloaded: bool = False  # read again in each iteration of a loop (passes/sink_loads.py)

    @property
    def starts(self) -> list[Value]:
        return self.operands[: len(self.lengths)]

    @property
    def mask(self) -> Value | None:
        return self.operands[len(self.lengths)] if self.masked else None


@dataclass(eq=False, kw_only=True)
class Store(Op):
    """A tile into a window of ``tensor``: operands starts..., value, optional mask (a bool
    tile), optional predicate (a uniform bool: nothing is written where it is false).

    Lanes outside the tensor, where the mask is false, or that are padding are not
    written; of replicated copies only one is.
    """

    NAME = "store"
    tensor: str
    lengths: tuple[int | None, ...]
    checked: bool = True
    masked: bool = False
    predicated: bool = False
    vector: int = 1
    aligned: bool = False

    @property
    def starts(self) -> list[Value]:
        return self.operands[: len(self.lengths)]

    @property
    def value(self) -> Value:
        return self.operands[len(self.lengths)]

    @property
    def mask(self) -> Value | None:
        return self.operands[len(self.lengths) + 1] if self.masked else None

    @property
    def predicate(self) -> Value | None:
        return self.operands[-1] if self.predicated else None


@dataclass(eq=False, kw_only=True)
class LoadUniform(Op):
    """One element (every index a point) read by every thread; 0 outside the tensor."""

    NAME = "load_uniform"
    tensor: str


@dataclass(eq=False, kw_only=True)
class StoreUniform(Op):
    """One element written (by thread 0) where it lies inside the tensor: indices..., value."""

    NAME = "store_uniform"
    tensor: str


@dataclass(eq=False, kw_only=True)
class Atomic(Op):
    """``kind`` ("add", "max", "xchg", "cas") on a window (tile value) or one element.

    Operands: starts..., [compare (cas)], value, [mask], [buffer].  On one element,
    thread 0 updates it and, with a result, the old value reaches every thread through
    the one-element shared ``buffer`` (the op's own barriers around it included).
    """

    NAME = "atomic"
    kind: str
    tensor: str
    lengths: tuple[int | None, ...]
    masked: bool = False


# ------------------------------------------------------------- shared memory


@dataclass(eq=False, kw_only=True)
class SharedAlloc(Op):
    """A shared-memory buffer (its type says shape, layout and stages); ``offset`` is the
    byte offset ``passes/allocation.py`` gives it in the CTA's shared memory.  A loop's
    ring has a ``lag``: how many iterations after the one that reads a stage the loop
    leaves it unwritten (``passes/pipeline.py``), so a product reading it may stay in
    flight that long (``passes/mma_waits.py``)."""

    NAME = "smem_alloc"
    offset: int | None = None
    lag: int | None = None


@dataclass(eq=False, kw_only=True)
class SharedStore(Op):
    """A tile's elements into a buffer (operands: buffer, value, optional stage): each
    element written once, by its first holder."""

    NAME = "smem_store"
    vector: int = 1


@dataclass(eq=False, kw_only=True)
class SharedLoad(Op):
    """A buffer into registers in the result's layout (operands: buffer, optional stage).
    ``transposed``: the buffer holds the result's transpose (``trans(t)`` staged as ``t``
    lies).  ``via``: "vector" (each thread its own elements) or "ldmatrix" (a warp loads
    8x8 matrices into mma fragments), set by ``passes/select_mma.py``."""

    NAME = "smem_load"
    via: str = "vector"
    transposed: bool = False
    fragment: str | None = None  # "a" or "b": which mma.sync operand ``ldmatrix`` loads
    warps: tuple[int, int] | None = None  # the mma.sync warp grid (down, across)
    vector: int = 1


@dataclass(eq=False, kw_only=True)
class CopyAsync(Op):
    """A window of ``tensor`` into a buffer with ``cp.async`` (16 bytes a copy, absent bytes
    zero-filled).  Operands: buffer, starts..., optional stage.  ``layout`` says which
    thread copies which 16-byte group (a blocked layout of the window); of replicated
    copies only the first holder's is made."""

    NAME = "copy_async"
    tensor: str
    lengths: tuple[int | None, ...]
    layout: Layout
    checked: bool = True
    aligned: bool = False


@dataclass(eq=False, kw_only=True)
class CopyTma(Op):
    """A window of ``tensor`` into a buffer by the tensor memory accelerator: one thread
    (the CTA's first, or the producer's where the CTA is warp-specialised) arrives on the
    stage's mbarrier, owing it the window's bytes, and issues one copy of
    a ``box`` (an extent an axis of the tensor: 1 where the window takes an index, then
    rows and columns) per swizzle atom of the buffer's layout; bytes outside the tensor
    arrive as zeros.  Operands: buffer, mbarriers, starts..., stage.  The launch passes a
    descriptor of the tensor for the box (``signature.py``)."""

    NAME = "copy_tma"
    tensor: str
    lengths: tuple[int | None, ...]
    box: tuple[int, ...]
    single: bool = True  # the CTA's first thread issues it (False: the op's one thread does)


@dataclass(eq=False, kw_only=True)
class MbarrierAlloc(Op):
    """The mbarriers of a ring (its result's type says how many); ``offset`` as for buffers."""

    NAME = "mbarrier_alloc"
    offset: int | None = None


@dataclass(eq=False, kw_only=True)
class MbarrierInit(Op):
    """One thread readies every mbarrier for ``arrivals`` arrivals a phase (operand: the
    mbarriers); a barrier must follow before another thread uses them."""

    NAME = "mbarrier_init"
    arrivals: int = 1


@dataclass(eq=False, kw_only=True)
class MbarrierWait(Op):
    """Every thread waits until the phase of parity ``phase`` of the stage's mbarrier has
    completed: what the copies it counted wrote is then visible, and what the threads that
    arrived read before arriving is done (operands: mbarriers, stage, phase).  ``single``:
    only the CTA's first thread waits (before it refills the stage)."""

    NAME = "mbarrier_wait"
    single: bool = False


@dataclass(eq=False, kw_only=True)
class MbarrierArrive(Op):
    """Every thread running it arrives once on the stage's mbarrier (operands: mbarriers,
    stage): the consumers of a ring hand a stage back to whoever refills it, once the
    reads of it they made are complete."""

    NAME = "mbarrier_arrive"


@dataclass(eq=False, kw_only=True)
class AsyncCommit(Op):
    """Close this thread's ``cp.async`` issued since the last commit into a group."""

    NAME = "async_commit"


@dataclass(eq=False, kw_only=True)
class AsyncWait(Op):
    """Wait until at most ``pending`` of this thread's newest commit groups are in flight."""

    NAME = "async_wait"
    pending: int = 0


@dataclass(eq=False, kw_only=True)
class Barrier(Op):
    """Every thread of the CTA arrives before any goes on (``__syncthreads``)."""

    NAME = "barrier"


@dataclass(eq=False, kw_only=True)
class FenceAsync(Op):
    """Shared memory this thread wrote is visible to the async proxy (wgmma, TMA)."""

    NAME = "fence_async"


# ------------------------------------------------------------- matrix products


@dataclass(eq=False, kw_only=True)
class Dot(Op):
    """``acc + a @ b`` (operands a, b, acc); chosen an instruction by ``passes/select_mma.py``."""

    NAME = "dot"


@dataclass(eq=False, kw_only=True)
class MmaSync(Op):
    """``mma.sync.m16n8k16`` over the tiles: a, b in their fragment layouts, acc in place."""

    NAME = "mma_sync"


@dataclass(eq=False, kw_only=True)
class Wgmma(Op):
    """``wgmma.mma_async`` (operands a: buffer or tile, b: buffer, acc, [a stage], [b stage]):
    its result is the accumulator in flight (registers written asynchronously), which
    only a ``WgmmaWait`` may read.  ``b_major``: "k" (b's rows in the buffer are its
    columns, ``trans(t)`` staged as it lies) or "mn".  ``chained``: ``acc`` may itself be
    in flight (the previous k-step's product); the hardware orders products on the same
    accumulator, so this one accumulates onto it in its registers without a wait."""

    NAME = "wgmma"
    warpgroups: tuple[int, int] = (1, 1)  # (down the rows, across the columns)
    a_major: str = "k"
    b_major: str = "mn"
    a_stage: bool = False
    b_stage: bool = False
    chained: bool = False


@dataclass(eq=False, kw_only=True)
class WgmmaWait(Op):
    """Wait until at most the ``pending`` newest wgmma groups are in flight
    (``wgmma.wait_group``); its operand, a product then complete, is its result.  Without
    a result it only releases what the product read (a ring stage the next copy reuses).
    ``drained``: an earlier wait completed the product on every path here, so nothing is
    issued; the op only makes the value readable."""

    NAME = "wgmma_wait"
    pending: int = 0
    drained: bool = False


@dataclass(eq=False, kw_only=True)
class DotShared(Op):
    """``acc + a @ b`` on the CUDA cores, operands read from buffers (a, b, acc)."""

    NAME = "dot_shared"


# ------------------------------------------------------------- control flow


@dataclass(eq=False, kw_only=True)
class For(Op):
    """``for iv = start; iv < stop; iv += step`` (operands start, stop, step, inits...);
    the body's arguments are the loop variable and the carried values, its ``Yield``
    gives the next iteration's, and the op's results are the last."""

    NAME = "for"

    @property
    def body(self) -> Block:
        return self.regions[0]

    @property
    def inits(self) -> list[Value]:
        return self.operands[3:]


@dataclass(eq=False, kw_only=True)
class If(Op):
    """Operands: cond (uniform bool); regions then, else, each ending in a ``Yield``."""

    NAME = "if"


@dataclass(eq=False, kw_only=True)
class While(Op):
    """Operands: the carried values' inits.  Region 0 computes the condition from the
    carried values (ends in ``Condition``), region 1 the next values (ends in ``Yield``)."""

    NAME = "while"


@dataclass(eq=False, kw_only=True)
class Yield(Op):
    NAME = "yield"


@dataclass(eq=False, kw_only=True)
class Condition(Op):
    NAME = "condition"


@dataclass(eq=False, kw_only=True)
class Return(Op):
    """A block-uniform early exit."""

    NAME = "return"


# ------------------------------------------------------------- debugging


@dataclass(eq=False, kw_only=True)
class Trace(Op):
    """Print a value (operands: value, [mask], [when]) as the interpreter does."""

    NAME = "trace"
    label: str
    masked: bool = False
    conditional: bool = False


@dataclass(eq=False, kw_only=True)
class Assert(Op):
    """Stop the launch where the condition is false (operands: cond, [mask])."""

    NAME = "assert"
    message: str
    masked: bool = False


# --------------------------------------------------------------------------- the kernel


@dataclass(eq=False)
class Kernel:
    """One variant of one kernel for a CTA of ``threads`` threads.

    ``params`` and ``values`` are the tile IR's; ``index_width`` the contract's;
    ``arch`` the target; ``tensors`` the tensor parameters by name, with what the
    specialisation assumes (``unit_stride``, ``align``, ``row_align``: bytes the strides of
    every axis but the last are multiples of).
    """

    name: str
    params: tuple[tir.Param, ...]
    values: tuple[tuple[str, int], ...]
    body: Block
    threads: int
    arch: str
    index_width: int
    unit_stride: dict[str, bool]
    align: dict[str, int]
    row_align: dict[str, int] = field(default_factory=dict)
    span: Span = NO_SPAN
    # CTAs an SM must hold: ``__launch_bounds__``' second number; None leaves it to ptxas
    min_ctas: int | None = None
    shared_bytes: int = 0  # the CTA's shared memory, set by allocation
    shared_align: int = 16  # what its base is aligned to at run time (passes/allocation.py)
    # The thread index and the layouts' coordinates of each thread are computed once, at
    # the start, and held (passes/mma_waits.py says why).
    thread_values_pinned: bool = False

    @property
    def tensors(self) -> dict[str, tir.TensorParam]:
        return {p.name: p for p in self.params if isinstance(p, tir.TensorParam)}

    @property
    def extents(self) -> tuple[str, ...]:
        seen: list[str] = []
        for t in self.tensors.values():
            for d in t.dims:
                if isinstance(d, str) and d not in seen:
                    seen.append(d)
        return tuple(seen)

    def walk(self) -> Iterator[Op]:
        return self.body.walk()


# --------------------------------------------------------------------------- helpers


def users(kernel: Kernel) -> dict[Value, list[Op]]:
    """Each value's users, in program order."""
    out: dict[Value, list[Op]] = {}
    for op in kernel.walk():
        for v in op.operands:
            out.setdefault(v, []).append(op)
    return out


def replace_uses(block: Block, old: Value, new: Value) -> None:
    """Every use of ``old`` in ``block`` (nested regions included) becomes ``new``."""
    for op in block.walk():
        op.operands = [new if v is old else v for v in op.operands]


def definitions(kernel: Kernel) -> dict[Value, Op]:
    """The op that defines each op result."""
    return {v: op for op in kernel.walk() for v in op.results}


def rematerialisable(v: Value, defs: dict[Value, Op]) -> bool:
    """``v`` is made of coordinates, splats and uniforms alone: free to make again in any
    layout, and holding it costs no registers worth counting."""
    op = defs.get(v)
    if isinstance(op, (Coord, Splat)):
        return True
    if isinstance(op, (*ELEMENTWISE, Broadcast, ExpandDims, Transpose)):
        return all(not isinstance(o.type, Tile) or rematerialisable(o, defs) for o in op.operands)
    return False
