"""Run GPU IR on the CPU with numpy: every pass is tested against the interpreter here.

One CTA runs at a time, all of its threads in lockstep, each op vectorised over
them.  A tile with a layout is held as it is on the GPU: an array
``[threads, registers]`` (a ``Regs``), filled and read through the layout's map, so
a wrong layout, fragment, shuffle or conversion gives a wrong answer (and
replicated copies that disagree raise ``ExecutionError``).  A tile whose layout is
not assigned yet is held whole (a numpy array of its shape), so the IR can be run
after any pass, lowering included.

Shared memory is the CTA's bytes, as allocation places buffers in it (or one array
a buffer before allocation), and the executor checks what the hardware does not
forgive:

* between a write by one thread and a read or write of the same byte by another,
  a ``Barrier`` (each barrier starts an *epoch*; a conflict inside one epoch is a
  race);
* a ``cp.async`` lands only when an ``AsyncWait`` lets it, a TMA copy only when an
  ``MbarrierWait`` sees its stage's phase complete (every arrival the mbarrier was
  made for, every byte they owe): reading or overwriting its bytes before then is an
  error, and a wait for a phase that cannot complete is a deadlock;
* what ``wgmma`` reads was fenced (``FenceAsync``) by its writer and written
  before the last barrier, and is not overwritten while the product is in flight;
* products complete in issue order, only at a ``WgmmaWait`` whose ``pending``
  leaves them out of the newest: a wait that names a product it does not complete,
  or any other read of a product in flight, is an error (a ``chained`` product may
  take one in flight as its accumulator).

Arithmetic follows the interpreter (``interp/elementwise.py``, its dtypes): f16
rounds after every operation, bf16 is a float32 rounded to bf16, integers wrap.
Reductions and products accumulate in a different order than numpy's, so float
results agree to rounding, not bit for bit.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from phobos.compile.gpu import ir
from phobos.compile.gpu.layouts import WARP, Layout, register_permutation
from phobos.compile.interp import elementwise
from phobos.compile.interp.dtypes import (
    array_dtype,
    bf16_bits_to_f32,
    compute_dtype,
    f32_to_bf16_bits,
    round_to_bf16,
)
from phobos.compile.ir import nodes as tir
from phobos.compile.ir import reduction_ops


class ExecutionError(Exception):
    """The GPU IR did something the hardware would not (a race, a read of a copy in flight)."""


def _np(dtype: str) -> np.dtype:
    return compute_dtype(dtype)


def _round(values, dtype: str):
    return round_to_bf16(values) if dtype == "bf16" else values


@dataclass
class Regs:
    """A distributed tile: ``values[thread, register]`` in ``layout``."""

    values: np.ndarray
    layout: Layout


def _whole(regs: Regs, shape: tuple[int, ...]) -> np.ndarray:
    """A distributed tile as one array of ``shape``: each element from a thread that holds it
    (replicas hold the same value; ``_check_replicas`` checks that where it matters)."""
    valid = regs.layout.valid()
    coords = regs.layout.coords()[valid]
    whole = np.zeros(shape, regs.values.dtype)
    whole[tuple(coords[:, axis] for axis in range(coords.shape[-1]))] = regs.values[valid]
    return whole


@dataclass
class _Buffer:
    """A shared-memory buffer: where it starts in the CTA's bytes and how it is laid out."""

    type: ir.Shared
    offset: int

    @property
    def stage_bytes(self) -> int:
        layout = self.type.layout
        return -(-layout.size_bytes // layout.alignment) * layout.alignment

    def element_offsets(
        self, rows: np.ndarray, cols: np.ndarray, stage: np.ndarray | int
    ) -> np.ndarray:
        """Byte offsets of elements (``rows``, ``cols``) of stage ``stage``."""
        layout = self.type.layout
        return (
            self.offset
            + np.asarray(stage) * self.stage_bytes
            + layout.offsets(rows, cols) * layout.element_bytes
        )


@dataclass
class _Copy:
    """One thread's ``cp.async`` bytes, not landed yet."""

    offsets: np.ndarray
    data: np.ndarray


@dataclass
class _SharedMemory:
    """The CTA's shared memory and what the hazard checks need per byte."""

    size: int
    threads: int
    data: np.ndarray = field(init=False)
    epoch: int = 0
    clock: int = 0  # ops run so far: when each byte was last read
    # The clock of the latest hand-back the copy-issuing thread waited for: what any thread
    # read before then is done, so that thread's TMA copies may overwrite it.
    acquired: int = -1

    def __post_init__(self) -> None:
        n = self.size
        self.data = np.zeros(n, np.uint8)
        self.writer = np.full(n, -1, np.int64)
        self.write_epoch = np.full(n, -1, np.int64)
        self.reader = np.full(n, -1, np.int64)  # -2: several threads
        self.read_epoch = np.full(n, -1, np.int64)
        self.read_clock = np.full(n, -1, np.int64)
        self.pending = np.zeros(n, np.bool_)
        self.fenced = np.ones(n, np.bool_)
        self.in_flight = np.zeros(n, np.int64)  # wgmma operands not yet waited for
        self.groups: list[list[list[_Copy]]] = [[[]] for _ in range(self.threads)]
        self.products: list[_InFlight] = []  # wgmma groups in flight, oldest first

    def write(self, threads: np.ndarray, offsets: np.ndarray, data: np.ndarray, what: str) -> None:
        """``threads[i]`` writes ``data[i]`` (bytes) at ``offsets[i]``."""
        if offsets.size == 0:
            return
        self._check_write(threads, offsets, what)
        self.data[offsets] = data
        self.writer[offsets] = threads
        self.write_epoch[offsets] = self.epoch
        self.fenced[offsets] = False

    def _check_write(
        self, threads: np.ndarray, offsets: np.ndarray, what: str, released: int = -1
    ) -> None:
        """``released``: reads before that clock were handed back to the writer (an
        mbarrier it waited for), so they are ordered before this write."""
        if self.pending[offsets].any():
            raise ExecutionError(
                f"{what} writes shared memory that an asynchronous copy has not landed in yet"
            )
        if self.in_flight[offsets].any():
            raise ExecutionError(f"{what} writes shared memory that a wgmma in flight reads")
        same = self.write_epoch[offsets] == self.epoch
        other = same & (self.writer[offsets] != threads)
        if other.any():
            raise ExecutionError(
                f"{what}: two threads write one shared byte with no barrier between"
            )
        read = self.read_epoch[offsets] == self.epoch
        readers = self.reader[offsets]
        conflict = read & (readers != threads) & (readers != -1)
        conflict &= self.read_clock[offsets] >= released
        if conflict.any():
            raise ExecutionError(
                f"{what} overwrites shared memory another thread read with no barrier between"
            )
        # Writes by one thread to one byte twice in a launch of this op: the last wins.
        order = np.argsort(offsets, kind="stable")
        sorted_offsets = offsets[order]
        dup = sorted_offsets[1:] == sorted_offsets[:-1]
        if dup.any():
            t = threads[order]
            if (t[1:][dup] != t[:-1][dup]).any():
                raise ExecutionError(f"{what}: two threads write one shared byte at once")

    def read(self, threads: np.ndarray, offsets: np.ndarray, what: str) -> np.ndarray:
        if offsets.size == 0:
            return self.data[offsets]
        if self.pending[offsets].any():
            raise ExecutionError(
                f"{what} reads shared memory before its asynchronous copy landed (a missing wait)"
            )
        fresh = (self.write_epoch[offsets] == self.epoch) & (self.writer[offsets] != threads)
        fresh &= self.writer[offsets] >= 0
        if fresh.any():
            raise ExecutionError(f"{what} reads what another thread wrote with no barrier between")
        self._mark_read(threads, offsets)
        return self.data[offsets]

    def _mark_read(self, threads: np.ndarray, offsets: np.ndarray) -> None:
        prior = np.where(self.read_epoch[offsets] == self.epoch, self.reader[offsets], -1)
        combined = np.where((prior == -1) | (prior == threads), threads, -2)
        # Several threads reading one byte in this op: mark it as read by several.
        order = np.argsort(offsets, kind="stable")
        so, st = offsets[order], threads[order]
        many = np.zeros(offsets.size, np.bool_)
        if so.size > 1:
            dup = (so[1:] == so[:-1]) & (st[1:] != st[:-1])
            many[order[1:]] |= dup
            many[order[:-1]] |= dup
        combined = np.where(many, -2, combined)
        self.reader[offsets] = combined
        # A byte read by several threads, each alone here, stays "several".
        several = np.zeros(self.size, np.bool_)
        np.logical_or.at(several, offsets, combined == -2)
        self.reader[several] = -2
        self.read_epoch[offsets] = self.epoch
        self.read_clock[offsets] = self.clock

    def async_read(self, offsets: np.ndarray, what: str) -> np.ndarray:
        """What the async proxy (wgmma) reads: fenced, before the last barrier, landed."""
        if self.pending[offsets].any():
            raise ExecutionError(f"{what} reads shared memory before its asynchronous copy landed")
        if (self.write_epoch[offsets] == self.epoch).any():
            raise ExecutionError(f"{what} reads shared memory written after the last barrier")
        if not self.fenced[offsets].all():
            raise ExecutionError(f"{what} reads shared memory not fenced for the async proxy")
        return self.data[offsets]

    def barrier(self) -> None:
        self.epoch += 1

    def copy(self, thread: int, offsets: np.ndarray, data: np.ndarray, what: str) -> None:
        if offsets.size == 0:
            return
        self._check_write(np.full(offsets.size, thread), offsets, what)
        self.pending[offsets] = True
        self.groups[thread][-1].append(_Copy(offsets, data))

    def commit(self) -> None:
        for groups in self.groups:
            groups.append([])

    def wait(self, pending: int) -> None:
        for thread, groups in enumerate(self.groups):
            closed = groups[:-1]  # the open group (not committed) is not waited for
            landing = closed[: max(0, len(closed) - pending)]
            for group in landing:
                for c in group:
                    self.pending[c.offsets] = False
                    self.data[c.offsets] = c.data
                    self.writer[c.offsets] = thread
                    self.write_epoch[c.offsets] = self.epoch
                    self.fenced[c.offsets] = False
            del groups[: len(landing)]

    def fence(self, threads: np.ndarray) -> None:
        mine = np.isin(self.writer, threads)
        self.fenced |= mine


@dataclass
class _Phase:
    """The open phase of one mbarrier: its arrivals so far and the copies they owe."""

    arrivals: int = 0
    copies: list[_Copy] = field(default_factory=list)


@dataclass
class _Mbarriers:
    """A ring's mbarriers: each one's arrivals a phase, phases completed (and the clock
    the last one completed at), open phase."""

    count: int
    arrivals: int = 0  # 0: not initialised
    completed: list[int] = field(default_factory=list)
    completed_at: list[int] = field(default_factory=list)
    open: list[_Phase] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.completed = [0] * self.count
        self.completed_at = [-1] * self.count
        self.open = [_Phase() for _ in range(self.count)]


class _Return(Exception):
    """A block-uniform ``return``."""


class _Abandoned(Exception):
    """Another partition of the CTA failed: this one stops where it waits."""


class _Partitions:
    """A warp-specialised CTA's partitions, each on a Python thread, run one at a time: the
    one running goes on until it waits for an mbarrier phase that has not completed, then
    the next that can go on runs.  None can: a deadlock.  The producer starts, so it runs
    as far ahead as the stages handed back let it (what a refill that came too early
    would break shows at once)."""

    def __init__(self, roles: list[str]) -> None:
        self.roles = roles
        self.turn: int | None = 0
        self.waiting: dict[int, tuple[Callable[[], bool], str]] = {}
        self.done: set[int] = set()
        self.error: BaseException | None = None
        self.lock = threading.Condition()
        self.mine = threading.local()

    @property
    def role(self) -> str:
        return self.roles[self.mine.index]

    def run(self, bodies: list[Callable[[], None]]) -> None:
        threads = [
            threading.Thread(target=self._main, args=(i, body), daemon=True)
            for i, body in enumerate(bodies)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.error is not None:
            raise self.error

    def _main(self, index: int, body: Callable[[], None]) -> None:
        self.mine.index = index
        with self.lock:
            self.lock.wait_for(lambda: self.turn in (index, -1))
            if self.turn == -1:  # another partition failed before this one started
                self.done.add(index)
                return
        try:
            body()
        except _Abandoned:
            pass
        except BaseException as error:  # handed to the caller's thread
            with self.lock:
                if self.error is None:
                    self.error = error
        with self.lock:
            self.done.add(index)
            self.waiting.pop(index, None)
            following = self._next(index) if self.error is None else None
            if self.error is None and following is None and self.waiting:
                stuck = "; ".join(w for _, w in self.waiting.values())
                self.error = ExecutionError(
                    f"a deadlock: {stuck}, and the {self.roles[index]} has finished"
                )
            self.turn = -1 if self.error is not None else following
            self.lock.notify_all()

    def _next(self, index: int) -> int | None:
        count = len(self.roles)
        for step in range(1, count + 1):
            j = (index + step) % count
            if j in self.done:
                continue
            ready = self.waiting.get(j)
            if ready is None or ready[0]():
                return j
        return None

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        """The running partition waits until ``ready()``; the others run meanwhile."""
        index = self.mine.index
        with self.lock:
            while not ready():
                self.waiting[index] = (ready, what)
                following = self._next(index)
                if following is None:
                    stuck = "; ".join(w for _, (_, w) in sorted(self.waiting.items()))
                    self.waiting.pop(index, None)
                    raise ExecutionError(f"a deadlock: {stuck}, and no partition can go on")
                self.turn = following
                self.lock.notify_all()
                self.lock.wait_for(lambda: self.turn in (index, -1))
                if self.turn == -1:
                    raise _Abandoned
            self.waiting.pop(index, None)


class Executor:
    """Runs one kernel's GPU IR over a grid on numpy arguments (in parameter order)."""

    def __init__(self, kernel: ir.Kernel, args: Sequence[object]) -> None:
        self.kernel = kernel
        self.threads = kernel.threads or WARP  # a warp-specialised CTA's consumers
        self.partitions: _Partitions | None = None
        self.tensors: dict[str, np.ndarray] = {}
        self.storage: dict[str, np.ndarray] = {}
        self.scalars: dict[str, np.generic] = {}
        self.extents: dict[str, int] = {}
        self.traces: list[str] = []
        for param, arg in zip(kernel.params, args):
            if isinstance(param, tir.TensorParam):
                array = np.asarray(arg)
                expected = array_dtype(param.dtype)
                if expected is not None and array.dtype != expected:
                    raise TypeError(f"{param.name}: {array.dtype}, expected {expected}")
                self.storage[param.name] = array.view(np.uint16) if param.dtype == "bf16" else array
                row_align = kernel.row_align.get(param.name, 1)
                rows = [s for s, n in zip(array.strides[:-1], array.shape[:-1]) if n > 1]
                if any(s % row_align for s in rows):
                    raise ExecutionError(
                        f"{param.name}: strides {array.strides} (bytes) put rows off "
                        f"{row_align} bytes, which the variant assumes (a launch refuses them)"
                    )
                for dim, size in zip(param.dims, array.shape):
                    if isinstance(dim, str):
                        self.extents[dim] = size
            else:
                self.scalars[param.name] = _np(
                    param.dtype if param.dtype != "index" else self._index
                ).type(arg)  # type: ignore[arg-type]

    @property
    def _index(self) -> str:
        return f"i{self.kernel.index_width}"

    def run(self, grid: tuple[int, ...]) -> None:
        gx, gy, gz = (*grid, 1, 1)[:3]
        with np.errstate(all="ignore"):
            for z in range(gz):
                for y in range(gy):
                    for x in range(gx):
                        self._block = (x, y, z)
                        self._grid = (gx, gy, gz)
                        self.smem = _SharedMemory(max(self.kernel.shared_bytes, 0), self.threads)
                        self._own_buffers: dict[ir.Value, _Buffer] = {}
                        env: dict[ir.Value, object] = {}
                        with contextlib.suppress(_Return):
                            self.block(self.kernel.body, env)

    # ------------------------------------------------------------------ blocks and ops

    def block(self, block: ir.Block, env: dict[ir.Value, object]) -> list[object] | None:
        """Run ``block``'s ops; the values its ``Yield``/``Condition`` gives, if any."""
        for op in block.ops:
            if isinstance(op, (ir.Yield, ir.Condition)):
                return [env[v] for v in op.operands]
            self.op(op, env)
        return None

    def op(self, op: ir.Op, env: dict[ir.Value, object]) -> None:
        handler = getattr(self, "_" + type(op).__name__)
        self.smem.clock += 1
        args = [env[v] for v in op.operands]
        for i, x in enumerate(args):
            if isinstance(x, _InFlight) and not _may_take_in_flight(op, i):
                raise ExecutionError(
                    f"{op.NAME} at {op.span} reads a wgmma's accumulator before its wait"
                )
        out = handler(op, args, env)
        if len(op.results) == 1 and not isinstance(op, (ir.For, ir.If, ir.While)):
            env[op.result] = out
        elif op.results:
            for v, x in zip(op.results, out):
                env[v] = x

    # ------------------------------------------------------------------ values

    def dense(self, x: object, t: ir.Type) -> np.ndarray:
        """A tile value as a whole array of its shape (replicated copies must agree)."""
        if isinstance(x, Regs):
            return to_dense(x, t.dtype)  # type: ignore[union-attr]
        return np.asarray(x)

    def like(self, dense: np.ndarray, t: ir.Type) -> object:
        """A whole array in the representation of type ``t`` (distributed where it has a layout)."""
        if isinstance(t, ir.Tile) and t.layout is not None:
            return from_dense(dense, t.layout)
        return dense

    def values(self, x: object) -> np.ndarray:
        return x.values if isinstance(x, Regs) else np.asarray(x)

    def rebuild(self, like: object, values: np.ndarray) -> object:
        return Regs(values, like.layout) if isinstance(like, Regs) else values

    # ------------------------------------------------------------------ uniform sources

    def _Constant(self, op: ir.Constant, args, env):
        dtype = op.result.dtype
        if dtype == "bool":
            return np.bool_(op.value)
        return _round(_np(dtype).type(op.value), dtype)

    def _Param(self, op: ir.Param, args, env):
        return self.scalars[op.param]

    def _Extent(self, op: ir.Extent, args, env):
        return _np(op.result.dtype).type(self.extents[op.extent])

    def _Stride(self, op: ir.Stride, args, env):
        array = self.storage[op.tensor]
        return _np(op.result.dtype).type(array.strides[op.axis] // array.itemsize)

    def _BlockIndex(self, op: ir.BlockIndex, args, env):
        source = self._block if op.group == "block" else self._grid
        return _np(op.result.dtype).type(source["xyz".index(op.axis)])

    # ------------------------------------------------------------------ elementwise

    def _elementwise(self, op: ir.Op, args, fn) -> object:
        tiles = [a for a in args if isinstance(a, Regs)]
        values = [self.values(a) for a in args]
        result_type = op.result.type
        if tiles and isinstance(result_type, ir.Tile) and result_type.layout is None:
            # Between instruction selection and layout assignment a product's result (or a
            # conversion's) is distributed while the op using it is not laid out yet: the op
            # runs on whole tiles, as the IR's types say.
            values = [
                _whole(a, result_type.shape) if isinstance(a, Regs) else v
                for a, v in zip(args, values)
            ]
            tiles = []
        if tiles:
            layout = tiles[0].layout
            for a in tiles[1:]:
                if a.layout != layout:
                    raise ExecutionError(f"{op.NAME}: operands in different layouts")
        dtype = op.result.dtype
        result = np.asarray(fn(*values))
        result = _round(result.astype(_np(dtype), copy=False), dtype)
        if tiles:
            return Regs(np.asarray(result), tiles[0].layout)
        return (
            result
            if np.ndim(result)
            else _np(dtype).type(result)
            if dtype != "bool"
            else np.bool_(result)
        )

    def _Unary(self, op: ir.Unary, args, env):
        return self._elementwise(op, args, elementwise.UNARY[op.op])

    def _Binary(self, op: ir.Binary, args, env):
        fn = elementwise.binary(op.op, np.dtype(self.values(args[0]).dtype))
        return self._elementwise(op, args, fn)

    def _MathFn(self, op: ir.MathFn, args, env):
        return self._elementwise(op, args, elementwise.MATH[op.fn])

    def _Cast(self, op: ir.Cast, args, env):
        target = _np(op.result.dtype)
        return self._elementwise(op, args, lambda x: _cast(x, target))

    def _Select(self, op: ir.Select, args, env):
        return self._elementwise(op, args, np.where)

    # ------------------------------------------------------------------ tile sources and shapes

    def _Splat(self, op: ir.Splat, args, env):
        t = op.result.tile
        if t.layout is not None:
            return Regs(np.full((self.threads, t.layout.num_registers), args[0]), t.layout)
        return np.full(t.shape, args[0])

    def _Coord(self, op: ir.Coord, args, env):
        t = op.result.tile
        dtype = _np(t.dtype)
        if t.layout is not None:
            return Regs(t.layout.coords()[..., op.axis].astype(dtype), t.layout)
        return np.indices(t.shape)[op.axis].astype(dtype)

    def _ExpandDims(self, op: ir.ExpandDims, args, env):
        (x,) = args
        if isinstance(x, Regs):
            return Regs(x.values, op.result.tile.layout)  # type: ignore[arg-type]
        return np.expand_dims(x, op.axis)

    def _Squeeze(self, op: ir.Squeeze, args, env):
        (x,) = args
        if isinstance(x, Regs):
            return Regs(x.values, op.result.tile.layout)  # type: ignore[arg-type]
        return np.squeeze(x, op.axis)

    def _Broadcast(self, op: ir.Broadcast, args, env):
        (x,) = args
        t = op.result.tile
        if isinstance(x, Regs) and t.layout is not None:
            source = op.operands[0].tile.shape
            axes = [a for a, n in enumerate(source) if n == 1 and t.shape[a] != 1]
            expected = t.layout
            for axis in axes:
                expected = expected.collapsed(axis)
            if x.layout != expected.with_shape(source):
                raise ExecutionError("broadcast from a layout that is not the result's collapsed")
            registers = range(t.layout.num_registers)
            index = np.array([_collapse_register(t.layout, axes, r) for r in registers])
            return Regs(x.values[:, index], t.layout)
        return self.like(np.broadcast_to(self.dense(x, op.operands[0].type), t.shape).copy(), t)

    def _Transpose(self, op: ir.Transpose, args, env):
        (x,) = args
        if isinstance(x, Regs):
            return Regs(x.values, op.result.tile.layout)  # type: ignore[arg-type]
        return np.transpose(x)

    def _ToUniform(self, op: ir.ToUniform, args, env):
        dense = self.dense(args[0], op.operands[0].type).reshape(-1)
        return dense[0]

    def _Convert(self, op: ir.Convert, args, env):
        return self.like(self.dense(args[0], op.operands[0].type), op.result.type)

    def _Permute(self, op: ir.Permute, args, env):
        source, target = op.operands[0].tile.layout, op.result.tile.layout
        assert source is not None and target is not None
        return Regs(_permuted(args[0].values, source, target), target)

    # ------------------------------------------------------------------ reductions

    def _Reduce(self, op: ir.Reduce, args, env):
        dense = self.dense(args[0], op.operands[0].type)
        if op.masked:
            present = self.dense(args[1], op.operands[1].type)
            dense = np.where(present, dense, _identity(op.op, op.operands[0].dtype))
        reduced = _reduce(op.op, dense, op.axis, op.operands[0].dtype, op.result.dtype)
        if op.result.is_uniform:
            return reduced[()] if isinstance(reduced, np.ndarray) else reduced
        return self.like(reduced, op.result.type)

    def _ReduceRegisters(self, op: ir.ReduceRegisters, args, env):
        x = args[0]
        source, target = op.operands[0].tile.layout, op.result.tile.layout
        assert source is not None and target is not None
        valid = source.valid()
        _registers, _, _ = source.axis_bits(op.axis)
        identity = _identity(op.op, op.operands[0].dtype)
        if op.masked:
            valid = valid & self.values(args[1]).astype(bool)
        values = np.where(valid, x.values, identity)
        out = np.empty((self.threads, target.num_registers), values.dtype)
        groups: dict[int, list[int]] = {}
        for r in range(source.num_registers):
            groups.setdefault(_drop_axis_register(source, op.axis, r), []).append(r)
        acc_dtype = _accumulator(op.operands[0].dtype)
        for r_out, members in groups.items():
            part = values[:, members].astype(acc_dtype)
            out[:, r_out] = _combine_reduce(op.op, part, axis=1)
        return Regs(_round(out.astype(_np(op.result.dtype)), op.result.dtype), target)

    def _ShuffleReduce(self, op: ir.ShuffleReduce, args, env):
        (x,) = args
        source = op.operands[0].tile.layout
        assert source is not None
        _, lane_bits, _ = source.axis_bits(op.axis)
        values = x.values.astype(_accumulator(op.operands[0].dtype))
        thread = np.arange(self.threads)
        for bit in lane_bits:
            partner = thread ^ (1 << bit)
            values = _combine_pair(op.op, values, values[partner])
        return Regs(
            _round(values.astype(_np(op.result.dtype)), op.result.dtype), op.result.tile.layout
        )  # type: ignore[arg-type]

    # ------------------------------------------------------------------ global memory

    def _tensor_read(self, name: str, index: tuple[np.ndarray, ...]) -> np.ndarray:
        storage = self.storage[name]
        values = storage[index]
        if self.kernel.tensors[name].dtype == "bf16":
            return bf16_bits_to_f32(values)
        return values.astype(_np(self.kernel.tensors[name].dtype), copy=False)

    def _tensor_write(self, name: str, index: tuple[np.ndarray, ...], values: np.ndarray) -> None:
        storage = self.storage[name]
        if self.kernel.tensors[name].dtype == "bf16":
            storage[index] = f32_to_bf16_bits(values)
        else:
            storage[index] = values

    def _window(
        self, op, starts, lengths, coords: np.ndarray
    ) -> tuple[list[np.ndarray], np.ndarray]:
        """Tensor indices of every lane (``coords[..., axis]``) and whether each is inside."""
        tensor = self.kernel.tensors[op.tensor]
        shape = self.storage[op.tensor].shape
        indices: list[np.ndarray] = []
        inside = np.ones(coords.shape[:-1], np.bool_)
        tile_axis = 0
        for axis, (start, length) in enumerate(zip(starts, lengths)):
            if length is None:
                idx = np.full(coords.shape[:-1], int(start), np.int64)
            else:
                idx = int(start) + coords[..., tile_axis].astype(np.int64)
                tile_axis += 1
            inside &= (idx >= 0) & (idx < shape[axis])
            indices.append(idx)
        del tensor
        return indices, inside

    def _lane_coords(self, t: ir.Tile) -> tuple[np.ndarray, np.ndarray | None]:
        """Each lane's tile coordinates: ``[threads, regs, rank]`` (distributed) or the
        tile's own index grid; and which slots are not padding."""
        if t.layout is not None:
            return t.layout.coords(), t.layout.valid()
        grid = np.indices(t.shape)
        return np.moveaxis(grid, 0, -1), None

    def _Load(self, op: ir.Load, args, env):
        t = op.result.tile
        starts = args[: len(op.lengths)]
        mask = self.values(args[len(op.lengths)]) if op.masked else None
        coords, valid = self._lane_coords(t)
        indices, inside = self._window(op, starts, op.lengths, coords)
        take = inside if valid is None else inside & valid
        if mask is not None:
            take = take & mask
        if not op.checked and not inside[take if valid is None else valid].all():
            raise ExecutionError(
                f"load of {op.tensor}: an unchecked window reaches outside the tensor"
            )
        out = np.zeros(take.shape, _np(t.dtype))
        chosen = tuple(i[take] for i in indices)
        out[take] = self._tensor_read(op.tensor, chosen)
        return Regs(out, t.layout) if t.layout is not None else out

    def _Store(self, op: ir.Store, args, env):
        t = op.value.tile
        n = len(op.lengths)
        starts, value = args[:n], args[n]
        mask = self.values(args[n + 1]) if op.masked else None
        if op.predicated and not args[-1]:
            return None
        coords, valid = self._lane_coords(t)
        indices, inside = self._window(op, starts, op.lengths, coords)
        put = inside if valid is None else inside & valid
        if mask is not None:
            put = put & mask
        values = self.values(value)
        if t.layout is not None:
            put = put & _first_holder(t.layout)
            _check_replicas(value, t.layout)
        self._tensor_write(op.tensor, tuple(i[put] for i in indices), values[put])
        return None

    def _LoadUniform(self, op: ir.LoadUniform, args, env):
        shape = self.storage[op.tensor].shape
        index = tuple(int(a) for a in args)
        dtype = _np(op.result.dtype)
        if not all(0 <= i < n for i, n in zip(index, shape)):
            return dtype.type(0)
        return dtype.type(self._tensor_read(op.tensor, tuple(np.array([i]) for i in index))[0])

    def _StoreUniform(self, op: ir.StoreUniform, args, env):
        shape = self.storage[op.tensor].shape
        *indices, value = args
        index = tuple(int(a) for a in indices)
        if all(0 <= i < n for i, n in zip(index, shape)):
            self._tensor_write(op.tensor, tuple(np.array([i]) for i in index), np.array([value]))
        return None

    def _Atomic(self, op: ir.Atomic, args, env):
        n = len(op.lengths)
        starts = args[:n]
        rest = list(args[n:])
        compare = rest.pop(0) if op.kind == "cas" else None
        value = rest.pop(0)
        mask = self.values(rest.pop(0)) if op.masked else None
        dtype = self.kernel.tensors[op.tensor].dtype
        combine = _ATOMIC[op.kind]
        if all(length is None for length in op.lengths):
            shape = self.storage[op.tensor].shape
            index = tuple(int(a) for a in starts)
            if not all(0 <= i < s for i, s in zip(index, shape)):
                return _np(dtype).type(0)
            where = tuple(np.array([i]) for i in index)
            old = self._tensor_read(op.tensor, where)[0]
            new = combine(old, value, compare)
            self._tensor_write(op.tensor, where, _round(np.array([new], _np(dtype)), dtype))
            return old
        t = op.operands[n].tile
        coords, valid = self._lane_coords(t)
        indices, inside = self._window(op, starts, op.lengths, coords)
        put = inside if valid is None else inside & valid
        if mask is not None:
            put = put & mask
        values = self.values(value)
        if t.layout is not None:
            put = put & _first_holder(t.layout)
        chosen = tuple(i[put] for i in indices)
        for k, v in enumerate(values[put]):
            where = tuple(np.array([c[k]]) for c in chosen)
            old = self._tensor_read(op.tensor, where)[0]
            self._tensor_write(
                op.tensor, where, _round(np.array([combine(old, v, None)], _np(dtype)), dtype)
            )
        return None

    # ------------------------------------------------------------------ shared memory

    def buffer(self, value: ir.Value) -> _Buffer:
        return self._own_buffers[value]

    def _SharedAlloc(self, op: ir.SharedAlloc, args, env):
        t = op.result.type
        assert isinstance(t, ir.Shared)
        layout = t.layout
        step = -(-layout.size_bytes // layout.alignment) * layout.alignment
        if op.offset is None:  # before allocation: a region of its own past the CTA's bytes
            offset = -(-self.smem.size // 1024) * 1024
            grow = offset + step * t.stages - self.smem.size
            self._grow(grow)
        else:
            offset = op.offset
        buffer = _Buffer(t, offset)
        self._own_buffers[op.result] = buffer
        return buffer

    def _grow(self, extra: int) -> None:
        old = self.smem
        new = _SharedMemory(old.size + extra, self.threads)
        for name in (
            "data",
            "writer",
            "write_epoch",
            "reader",
            "read_epoch",
            "pending",
            "fenced",
            "in_flight",
        ):
            getattr(new, name)[: old.size] = getattr(old, name)
        new.epoch, new.groups, new.products = old.epoch, old.groups, old.products
        self.smem = new

    def _element_bytes(self, buffer: _Buffer, rows, cols, stage) -> np.ndarray:
        """Byte offsets ``[..., element_bytes]`` of the elements."""
        size = buffer.type.layout.element_bytes
        first = buffer.element_offsets(rows, cols, stage)
        return first[..., None] + np.arange(size)

    def _tile_rows_cols(
        self, coords: np.ndarray, shape: tuple[int, ...]
    ) -> tuple[np.ndarray, np.ndarray]:
        if len(shape) == 1:
            return np.zeros(coords.shape[:-1], np.int64), coords[..., 0]
        return coords[..., 0], coords[..., 1]

    def _SharedStore(self, op: ir.SharedStore, args, env):
        buffer, value = args[0], args[1]
        stage = int(args[2]) if len(args) > 2 else 0
        t = op.operands[1].tile
        assert t.layout is not None, "smem_store needs a distributed tile"
        coords, valid = t.layout.coords(), t.layout.valid() & _first_holder(t.layout)
        rows, cols = self._tile_rows_cols(coords, t.shape)
        offsets = self._element_bytes(buffer, rows, cols, stage)
        threads = np.broadcast_to(np.arange(self.threads)[:, None], valid.shape)
        data = _to_bytes(value.values, t.dtype)
        sel = valid
        self.smem.write(
            np.repeat(threads[sel], offsets.shape[-1]),
            offsets[sel].reshape(-1),
            data[sel].reshape(-1),
            "smem_store",
        )
        return None

    def _SharedLoad(self, op: ir.SharedLoad, args, env):
        buffer = args[0]
        stage = int(args[1]) if len(args) > 1 else 0
        t = op.result.tile
        assert t.layout is not None
        coords, valid = t.layout.coords(), t.layout.valid()
        if op.transposed:
            coords = coords[..., ::-1]
        rows, cols = self._tile_rows_cols(coords, t.shape[::-1] if op.transposed else t.shape)
        offsets = self._element_bytes(buffer, rows, cols, stage)
        threads = np.broadcast_to(np.arange(self.threads)[:, None], valid.shape)
        raw = np.zeros(offsets.shape, np.uint8)
        raw[valid] = self.smem.read(
            np.repeat(threads[valid], offsets.shape[-1]), offsets[valid].reshape(-1), "smem_load"
        ).reshape(-1, offsets.shape[-1])
        return Regs(_from_bytes(raw, t.dtype), t.layout)

    def _CopyAsync(self, op: ir.CopyAsync, args, env):
        buffer = args[0]
        n = len(op.lengths)
        starts = args[1 : 1 + n]
        stage = int(args[1 + n]) if len(args) > 1 + n else 0
        layout = op.layout
        coords, valid = layout.coords(), layout.valid() & _first_holder(layout)
        indices, inside = self._window(op, starts, op.lengths, coords)
        if not op.checked and not inside[valid].all():
            raise ExecutionError(
                f"the untested copy_async of {op.tensor!r} at {op.span} reads outside the tensor"
            )
        dtype = self.kernel.tensors[op.tensor].dtype
        values = np.zeros(inside.shape, _np(dtype))
        values[inside & valid] = self._tensor_read(
            op.tensor, tuple(i[inside & valid] for i in indices)
        )
        rows, cols = self._tile_rows_cols(coords, layout.shape)
        offsets = self._element_bytes(buffer, rows, cols, stage)
        data = _to_bytes(values, dtype)
        for thread in range(self.threads):
            sel = valid[thread]
            if sel.any():
                self.smem.copy(
                    thread,
                    offsets[thread][sel].reshape(-1),
                    data[thread][sel].reshape(-1),
                    "cp.async",
                )
        return None

    def _MbarrierAlloc(self, op: ir.MbarrierAlloc, args, env):
        t = op.result.type
        assert isinstance(t, ir.Mbarriers)
        return _Mbarriers(t.count)

    def _MbarrierInit(self, op: ir.MbarrierInit, args, env):
        args[0].arrivals = op.arrivals

    def _barrier_of(self, bars: _Mbarriers, stage: int, what: str) -> _Phase:
        if not bars.arrivals:
            raise ExecutionError(f"{what} uses an mbarrier before it is initialised")
        if not 0 <= stage < bars.count:
            raise ExecutionError(f"{what}: stage {stage} of {bars.count} mbarriers")
        return bars.open[stage]

    def _CopyTma(self, op: ir.CopyTma, args, env):
        buffer, bars = args[0], args[1]
        starts, stage = args[2:-1], int(args[-1])
        phase = self._barrier_of(bars, stage, f"copy_tma of {op.tensor!r} at {op.span}")
        rows, cols = np.indices(op.lengths[-2:]).reshape(2, -1)
        coords = np.stack([rows, cols], axis=-1)
        indices, inside = self._window(op, starts, op.lengths, coords)
        dtype = self.kernel.tensors[op.tensor].dtype
        values = np.zeros(inside.shape, _np(dtype))
        values[inside] = self._tensor_read(op.tensor, tuple(i[inside] for i in indices))
        offsets = self._element_bytes(buffer, rows, cols, stage).reshape(-1)
        issuer = self.kernel.threads if self._role == "producer" else 0
        self.smem._check_write(
            np.full(offsets.size, issuer, np.int64), offsets, "copy_tma", self.smem.acquired
        )
        self.smem.pending[offsets] = True
        phase.arrivals += 1
        if phase.arrivals > bars.arrivals:
            raise ExecutionError(
                f"copy_tma of {op.tensor!r} at {op.span} arrives on stage {stage} once more than "
                f"the {bars.arrivals} its mbarrier was made for"
            )
        phase.copies.append(_Copy(offsets, _to_bytes(values, dtype).reshape(-1)))

    def _MbarrierWait(self, op: ir.MbarrierWait, args, env):
        bars, stage, parity = args[0], int(args[1]), int(args[2])
        what = f"mbarrier_wait at {op.span}"
        self._barrier_of(bars, stage, what)
        if bars.completed[stage] % 2 == parity:  # the phase of that parity is still open
            if self.partitions is not None:  # the other partition may complete it meanwhile
                waited = bars.completed[stage]
                self.partitions.wait_until(
                    lambda: (
                        bars.completed[stage] > waited or bars.open[stage].arrivals == bars.arrivals
                    ),
                    f"the {self.partitions.role} at {op.span} waits for phase {waited} of stage "
                    f"{stage}",
                )
            phase = bars.open[stage]
            if bars.completed[stage] % 2 == parity:  # all its arrivals in: its copies land now
                if phase.arrivals < bars.arrivals:
                    raise ExecutionError(
                        f"{what} waits for phase {bars.completed[stage]} of stage {stage}, "
                        f"which has {phase.arrivals} of its {bars.arrivals} arrivals: a deadlock"
                    )
                self._complete_phase(bars, stage)
        if op.single or self._role == "producer":
            self.smem.acquired = max(self.smem.acquired, bars.completed_at[stage])

    def _complete_phase(self, bars: _Mbarriers, stage: int) -> None:
        """The stage's open phase completes: its copies land."""
        smem = self.smem
        for c in bars.open[stage].copies:
            smem.pending[c.offsets] = False
            smem.data[c.offsets] = c.data
            smem.writer[c.offsets] = -1  # the async proxy: visible to whoever waited
            smem.write_epoch[c.offsets] = -1
            smem.fenced[c.offsets] = True
        bars.completed[stage] += 1
        bars.completed_at[stage] = smem.clock
        bars.open[stage] = _Phase()

    def _MbarrierArrive(self, op: ir.MbarrierArrive, args, env):
        bars, stage = args[0], int(args[1])
        what = f"mbarrier_arrive at {op.span}"
        phase = self._barrier_of(bars, stage, what)
        phase.arrivals += -(-self.threads // WARP)  # a warp's threads meet, one arrives
        if phase.arrivals > bars.arrivals:
            raise ExecutionError(
                f"{what}: {phase.arrivals} arrivals on stage {stage}, whose mbarrier was made "
                f"for {bars.arrivals} a phase"
            )
        if phase.arrivals == bars.arrivals and not phase.copies:
            self._complete_phase(bars, stage)  # no bytes owed: the phase completes now

    def _AsyncCommit(self, op, args, env):
        self.smem.commit()

    def _AsyncWait(self, op: ir.AsyncWait, args, env):
        self.smem.wait(op.pending)

    def _Barrier(self, op, args, env):
        self.smem.barrier()

    def _Specialize(self, op: ir.Specialize, args, env):
        """Both partitions, at once: the producer on one thread, the consumers in lockstep."""
        self.partitions = _Partitions(["producer", "consumer"])
        try:
            self.partitions.run(
                [lambda: self.block(op.producer, env), lambda: self.block(op.consumer, env)]
            )
        finally:
            self.partitions = None

    @property
    def _role(self) -> str | None:
        return None if self.partitions is None else self.partitions.role

    def _FenceAsync(self, op, args, env):
        self.smem.fence(np.arange(self.threads))

    # ------------------------------------------------------------------ products

    def _Dot(self, op: ir.Dot, args, env):
        a = self.dense(args[0], op.operands[0].type)
        b = self.dense(args[1], op.operands[1].type)
        acc = self.dense(args[2], op.operands[2].type)
        return self.like(_product(a, b, acc, op.result.dtype), op.result.type)

    def _MmaSync(self, op: ir.MmaSync, args, env):
        return self._Dot(op, args, env)  # type: ignore[arg-type]

    def _read_operand(
        self, buffer: _Buffer, shape: tuple[int, int], major_rows: bool, stage: int
    ) -> np.ndarray:
        """A ``[rows, cols]`` operand as the async proxy reads it from its buffer.

        ``major_rows``: the buffer holds the operand transposed (its rows are the
        operand's columns), as a ``trans(t)`` operand is staged.
        """
        stored = (shape[1], shape[0]) if major_rows else shape
        rows, cols = np.indices(stored)
        offsets = self._element_bytes(buffer, rows, cols, stage)
        raw = self.smem.async_read(offsets.reshape(-1), "wgmma").reshape(offsets.shape)
        values = _from_bytes(raw, buffer.type.dtype)
        return values.T if major_rows else values

    def _Wgmma(self, op: ir.Wgmma, args, env):
        a_arg, b_arg, acc = args[0], args[1], args[2]
        extra = list(args[3:])
        a_stage = int(extra.pop(0)) if op.a_stage else 0
        b_stage = int(extra.pop(0)) if op.b_stage else 0
        (m, k), n = op.operands[0].type.shape, op.result.tile.shape[1]  # type: ignore[union-attr]
        if isinstance(op.operands[0].type, ir.Shared) and op.a_major == "mn":
            k, m = m, k  # an M-major buffer is stored [K, M]
        if isinstance(a_arg, _Buffer):
            a = self._read_operand(a_arg, (m, k), op.a_major == "mn", a_stage)
            a_bytes = self._operand_bytes(a_arg, (m, k), op.a_major == "mn", a_stage)
        else:
            a = self.dense(a_arg, op.operands[0].type)
            a_bytes = np.empty(0, np.int64)
        b = self._read_operand(b_arg, (k, n), op.b_major == "k", b_stage)
        b_bytes = self._operand_bytes(b_arg, (k, n), op.b_major == "k", b_stage)
        operand_bytes = np.concatenate([a_bytes, b_bytes])
        self.smem.in_flight[operand_bytes] += 1
        if isinstance(acc, _InFlight):
            acc = acc.result  # chained: the hardware orders products on one accumulator
        result = _product(a, b, self.dense(acc, op.operands[2].type), op.result.dtype)
        flight = _InFlight(self.like(result, op.result.type), operand_bytes)
        self.smem.products.append(flight)
        return flight

    def _operand_bytes(self, buffer: _Buffer, shape, major_rows: bool, stage: int) -> np.ndarray:
        stored = (shape[1], shape[0]) if major_rows else shape
        rows, cols = np.indices(stored)
        return self._element_bytes(buffer, rows, cols, stage).reshape(-1)

    def _WgmmaWait(self, op: ir.WgmmaWait, args, env):
        (waited,) = args
        products = self.smem.products
        if op.drained:
            if any(waited is p for p in products):
                raise ExecutionError(f"the product at {op.span} is read in flight (not drained)")
            return waited.result if isinstance(waited, _InFlight) else waited
        self._complete(max(0, len(products) - op.pending))
        if not isinstance(waited, _InFlight):
            return waited  # no product on this path (a loop that ran no iteration)
        if any(waited is p for p in products):
            raise ExecutionError(
                f"wgmma_wait{{pending={op.pending}}} at {op.span} leaves the product it waits for in flight"
            )
        return waited.result

    def _complete(self, count: int) -> None:
        """The ``count`` oldest products in flight complete (in order, as the hardware's)."""
        products = self.smem.products
        done = products[:count]
        del products[:count]
        for flight in done:
            self.smem.in_flight[flight.operand_bytes] -= 1
            # Every thread of the warpgroups read the operands: a later write needs a barrier.
            every = np.full(flight.operand_bytes.size, -2)
            self.smem.reader[flight.operand_bytes] = every
            self.smem.read_epoch[flight.operand_bytes] = self.smem.epoch
            self.smem.read_clock[flight.operand_bytes] = self.smem.clock

    def _DotShared(self, op: ir.DotShared, args, env):
        a_buf, b_buf, acc = args
        (m, k), n = op.operands[0].type.shape, op.result.tile.shape[1]  # type: ignore[union-attr]
        a_rows, a_cols = np.indices((m, k))
        b_rows, b_cols = np.indices((k, n))
        a_off = self._element_bytes(a_buf, a_rows, a_cols, 0)
        b_off = self._element_bytes(b_buf, b_rows, b_cols, 0)
        a_raw = self._shared_read_all(a_off)
        b_raw = self._shared_read_all(b_off)
        a = _from_bytes(a_raw, a_buf.type.dtype)
        b = _from_bytes(b_raw, b_buf.type.dtype)
        return self.like(
            _product(a, b, self.dense(acc, op.operands[2].type), op.result.dtype), op.result.type
        )

    def _shared_read_all(self, offsets: np.ndarray) -> np.ndarray:
        """Bytes every thread may read: written before the last barrier."""
        flat = offsets.reshape(-1)
        if self.smem.pending[flat].any():
            raise ExecutionError(
                "dot_shared reads shared memory before its asynchronous copy landed"
            )
        if (self.smem.write_epoch[flat] == self.smem.epoch).any():
            raise ExecutionError("dot_shared reads shared memory written after the last barrier")
        self.smem.reader[flat] = -2
        self.smem.read_epoch[flat] = self.smem.epoch
        return self.smem.data[flat].reshape(offsets.shape)

    # ------------------------------------------------------------------ control flow

    def _For(self, op: ir.For, args, env):
        start, stop, step, *carried = args
        iv_type = op.body.args[0].dtype
        iv = _np(iv_type).type(start)
        while iv < stop:
            inner = dict(env)
            inner[op.body.args[0]] = iv
            for a, v in zip(op.body.args[1:], carried):
                inner[a] = v
            carried = self.block(op.body, inner) or []
            iv = _np(iv_type).type(iv + step)
        return carried

    def _If(self, op: ir.If, args, env):
        region = op.regions[0] if args[0] else op.regions[1]
        return self.block(region, dict(env)) or []

    def _While(self, op: ir.While, args, env):
        carried = list(args)
        while True:
            inner = dict(env)
            for a, v in zip(op.regions[0].args, carried):
                inner[a] = v
            cond, *_ = self.block(op.regions[0], inner) or [False]
            if not cond:
                return carried
            inner = dict(env)
            for a, v in zip(op.regions[1].args, carried):
                inner[a] = v
            carried = self.block(op.regions[1], inner) or []

    def _Return(self, op, args, env):
        raise _Return()

    # ------------------------------------------------------------------ debugging

    def _Trace(self, op: ir.Trace, args, env):
        rest = list(args[1:])
        mask = self.dense(rest.pop(0), op.operands[1].type) if op.masked else None
        if op.conditional and not rest.pop(0):
            return None
        value = args[0]
        where = f"{op.span.file}:{op.span.line}: block {self._block}"
        if op.operands[0].is_uniform:
            self.traces.append(f"{where}: {op.label} = {value}")
            return None
        dense = self.dense(value, op.operands[0].type)
        for index in np.ndindex(dense.shape):
            if mask is None or mask[index]:
                self.traces.append(f"{where}: {op.label}{list(index)} = {dense[index]}")
        return None

    def _Assert(self, op: ir.Assert, args, env):
        cond = args[0]
        dense = (
            np.asarray(self.dense(cond, op.operands[0].type))
            if not op.operands[0].is_uniform
            else np.asarray(cond)
        )
        if op.masked:
            dense = dense | ~np.asarray(self.dense(args[1], op.operands[1].type))
        if not dense.all():
            raise ExecutionError(f"{op.span.file}:{op.span.line}: assertion failed: {op.message}")
        return None


def _may_take_in_flight(op: ir.Op, index: int) -> bool:
    """A product in flight may be waited for, carried, or accumulated onto by a chain."""
    if isinstance(op, (ir.WgmmaWait, ir.Yield, ir.For, ir.If, ir.While)):
        return True
    return isinstance(op, ir.Wgmma) and op.chained and index == 2


@dataclass
class _InFlight:
    """A wgmma's result before its wait, and the shared bytes it reads meanwhile."""

    result: object
    operand_bytes: np.ndarray


# --------------------------------------------------------------------------- helpers


def execute(kernel: ir.Kernel, grid: tuple[int, ...], args: Sequence[object]) -> Executor:
    """Run ``kernel`` over ``grid`` on numpy ``args``; the tensors are written in place."""
    executor = Executor(kernel, args)
    executor.run(grid)
    return executor


def to_dense(x: Regs, dtype: str) -> np.ndarray:
    """The tile a distributed value holds; its replicated copies must agree."""
    layout = x.layout
    coords = layout.coords()
    valid = layout.valid()
    out = np.zeros(layout.shape, x.values.dtype)
    seen = np.zeros(layout.shape, np.bool_)
    flat_coords = coords[valid]
    flat_values = x.values[valid]
    index = tuple(flat_coords[:, a] for a in range(layout.rank))
    out[index] = flat_values
    seen[index] = True
    if not seen.all():
        raise ExecutionError(f"layout {layout} does not cover its tile")
    again = out[index]
    differ = again != flat_values
    if np.issubdtype(flat_values.dtype, np.floating):
        differ &= ~(np.isnan(again) & np.isnan(flat_values))
    if differ.any():
        raise ExecutionError("replicated copies of a tile disagree")
    return out


def from_dense(dense: np.ndarray, layout: Layout) -> Regs:
    coords = layout.coords()
    valid = layout.valid()
    clipped = np.minimum(coords, np.array(layout.shape) - 1)
    values = dense[tuple(clipped[..., a] for a in range(layout.rank))]
    values = np.where(valid, values, np.zeros((), dense.dtype))
    return Regs(values, layout)


def _first_holder(layout: Layout) -> np.ndarray:
    """``[threads, 1]``: the threads that hold their elements' first copy."""
    zero_lanes = [i for i, b in enumerate(layout.lanes) if not any(b)]
    zero_warps = [i for i, b in enumerate(layout.warps) if not any(b)]
    thread = np.arange(layout.threads)
    lane, warp = thread % WARP, thread // WARP
    first = np.ones(layout.threads, np.bool_)
    for bit in zero_lanes:
        first &= (lane >> bit) & 1 == 0
    for bit in zero_warps:
        first &= (warp >> bit) & 1 == 0
    return first[:, None]


def _check_replicas(x: Regs, layout: Layout) -> None:
    if layout.replicated:
        to_dense(x, "")


def _drop_axis_register(layout: Layout, axis: int, r: int) -> int:
    """The register of ``layout`` with ``axis``'s register bits (and repeat) removed."""
    out, bit = 0, 0
    for i, basis in enumerate(layout.registers):
        if not basis[axis]:
            out |= (r >> i & 1) << bit
            bit += 1
    outer = r >> layout.register_bits
    if layout.repeat_axis != axis:
        out |= outer << bit
    return out


def _collapse_register(layout: Layout, axes: list[int], r: int) -> int:
    out = r
    current = layout
    for axis in axes:
        out = current.broadcast_source(axis, out)
        current = current.collapsed(axis)
    return out


def _permuted(values: np.ndarray, source: Layout, target: Layout) -> np.ndarray:
    """Registers of ``source`` renamed to ``target``'s (each thread holds the same elements)."""
    renaming = register_permutation(source, target)
    if renaming is None:
        raise ExecutionError("permute between layouts that hold different elements")
    moved = source.coords()[:, renaming] == target.coords()
    if not np.all(moved.all(axis=-1) | ~target.valid()):
        raise ExecutionError("a permute whose register renaming differs between threads")
    return values[:, renaming]


_WIDER = {
    "f16": np.float32,
    "bf16": np.float32,
    "bool": np.int32,
    "i8": np.int32,
    "i16": np.int32,
    "u8": np.uint32,
    "u16": np.uint32,
}


def _accumulator(dtype: str) -> np.dtype:
    return np.dtype(_WIDER.get(dtype, _np(dtype)))


def _identity(op: str, dtype: str):
    return _np(dtype).type(reduction_ops.identity(op, dtype))


def _ufunc(op: str) -> np.ufunc:
    return getattr(np, reduction_ops.REDUCTIONS[op].numpy)


def _combine_reduce(op: str, values: np.ndarray, axis: int) -> np.ndarray:
    return _ufunc(op).reduce(values, axis=axis).astype(values.dtype)


def _combine_pair(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return _ufunc(op)(a, b).astype(a.dtype)


def _reduce(op: str, dense: np.ndarray, axis: int, operand_dtype: str, result_dtype: str):
    acc = _np(reduction_ops.accumulator(op, operand_dtype))
    out = _ufunc(op).reduce(dense.astype(acc), axis=axis, dtype=acc)
    out = np.asarray(out).astype(_np(result_dtype))
    return _round(out, result_dtype)


def _product(a: np.ndarray, b: np.ndarray, acc: np.ndarray, result_dtype: str) -> np.ndarray:
    result = _np(result_dtype)
    if a.dtype.kind == "f":
        wide = np.float64 in (a.dtype, result)
        accumulate = np.dtype(np.float64 if wide else np.float32)
    else:
        accumulate = result
    values = acc.astype(accumulate) + a.astype(accumulate) @ b.astype(accumulate)
    return _round(values.astype(result), result_dtype)


def _cast(x, target: np.dtype):
    """A C-style conversion: floats to integers truncate toward zero."""
    x = np.asarray(x)
    if x.dtype.kind == "f" and target.kind in "iu":
        return np.trunc(x).astype(target)
    if target.kind == "b":
        return x != 0
    return x.astype(target)


def _to_bytes(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values[...]`` as ``[..., element_bytes]`` bytes of the stored dtype."""
    if dtype == "bf16":
        stored = f32_to_bf16_bits(values)
    else:
        stored = np.ascontiguousarray(values.astype(_storage(dtype)))
    return stored.view(np.uint8).reshape(*values.shape, -1)


def _from_bytes(raw: np.ndarray, dtype: str) -> np.ndarray:
    flat = np.ascontiguousarray(raw).reshape(*raw.shape[:-1], raw.shape[-1])
    if dtype == "bf16":
        return bf16_bits_to_f32(flat.view(np.uint16)[..., 0])
    return flat.view(_storage(dtype))[..., 0].astype(_np(dtype))


def _storage(dtype: str) -> np.dtype:
    return np.dtype(np.bool_) if dtype == "bool" else _np(dtype)


def _atomic_add(old, value, compare):
    return old + value


def _atomic_max(old, value, compare):
    return np.maximum(old, value)


def _atomic_xchg(old, value, compare):
    return value


def _atomic_cas(old, value, compare):
    return value if old == compare else old


_ATOMIC = {"add": _atomic_add, "max": _atomic_max, "xchg": _atomic_xchg, "cas": _atomic_cas}
