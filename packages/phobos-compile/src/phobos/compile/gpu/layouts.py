"""Layouts as maps: which thread, and which of its registers, holds each element of a tile.

A distributed layout maps a thread's hardware indices (register ``r``, lane, warp)
to tile coordinates, the way Triton's linear layouts do, restricted to what
register tiles need:

* every hardware *bit* (each bit of the register index, the 5 bits of the lane,
  the bits of the warp) has a *basis*: a coordinate vector that is either zero (the
  bit does not move the element: the value is replicated across it) or a power of
  two along exactly one axis;
* the coordinate of ``(r, lane, warp)`` is the sum of the bases of its set bits,
  plus ``(r // 2**len(registers)) * 2**k`` along ``repeat_axis`` when the layout has
  an outer *repeat* that need not be a power of two (a row of 12288 is 3 repeats of
  4096 lanes, not a 16384-wide tile a quarter padding);
* along each axis the nonzero bases are exactly ``1, 2, 4, ..., 2**(k-1)`` (in any
  bit order), so the bits span ``[0, 2**k)`` once; coordinates at or past the tile's
  extent are *padding*: registers that hold no element, which memory accesses and
  reductions skip.

Register bases are never zero (a thread does not hold one element twice).  Because
bases are disjoint powers of two, the sum is also the XOR, and a coordinate is a
per-thread base (lane and warp bits, computed once) plus a per-register offset
(register bits, a compile-time constant once loops are unrolled): this is what the
emitter prints and what the executor evaluates.

Every layout of the back end is an instance: the blocked layouts that loads and row
kernels use (``blocked``), the ``mma.sync`` accumulator and operand fragments, and
``wgmma``'s accumulator and register A operand (``mma_sync_*``, ``wgmma_*``, with
their register bit orders chosen so that an f32 accumulator packed to 16 bits *is*
the A operand of the next product), and the results of reductions (``sliced``).
Reductions, broadcasts and conversions are derived from the maps: which bits of an
axis are registers (combined in the thread), lanes (shuffles) or warps (shared
memory).

``SharedLayout`` places a tile in shared memory: row-major with padded rows, or the
swizzled atoms that ``wgmma`` descriptors and 128-byte accesses read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

WARP = 32
LANE_BITS = 5
WARPGROUP_WARPS = 4

Coord = tuple[int, ...]


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _log2(n: int) -> int:
    assert _is_pow2(n), n
    return n.bit_length() - 1


def _basis(rank: int, axis: int, value: int) -> Coord:
    return tuple(value if a == axis else 0 for a in range(rank))


def _axis_of(basis: Coord) -> int | None:
    """The axis a basis moves along, or None for a zero basis."""
    nonzero = [a for a, v in enumerate(basis) if v]
    return nonzero[0] if nonzero else None


@dataclass(frozen=True)
class Layout:
    """A distributed layout of a tile of ``shape`` (see the module docstring)."""

    shape: tuple[int, ...]
    registers: tuple[Coord, ...]
    lanes: tuple[Coord, ...]
    warps: tuple[Coord, ...]
    repeat: int = 1
    repeat_axis: int | None = None

    def __post_init__(self) -> None:
        rank = len(self.shape)
        if len(self.lanes) != LANE_BITS:
            raise ValueError(f"a layout has {LANE_BITS} lane bases, not {len(self.lanes)}")
        spans: dict[int, list[int]] = {a: [] for a in range(rank)}
        for kind, bases in (
            ("register", self.registers),
            ("lane", self.lanes),
            ("warp", self.warps),
        ):
            for basis in bases:
                if len(basis) != rank:
                    raise ValueError(f"{kind} basis {basis} has the wrong rank for {self.shape}")
                axis = _axis_of(basis)
                if axis is None:
                    if kind == "register":
                        raise ValueError("a register basis is never zero")
                    continue
                if sum(1 for v in basis if v) != 1 or not _is_pow2(basis[axis]):
                    raise ValueError(f"{kind} basis {basis} is not a power of two on one axis")
                spans[axis].append(basis[axis])
        for axis, values in spans.items():
            if sorted(values) != [1 << i for i in range(len(values))]:
                raise ValueError(f"axis {axis}'s bases {sorted(values)} are not 1, 2, 4, ...")
        if self.repeat < 1 or (self.repeat > 1) != (self.repeat_axis is not None):
            raise ValueError("a repeat of more than 1 needs its axis, and only then")
        for axis in range(rank):
            if self.covered(axis) < self.shape[axis]:
                raise ValueError(f"axis {axis} covers {self.covered(axis)} of {self.shape[axis]}")

    # ------------------------------------------------------------------ sizes

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_warps(self) -> int:
        return 1 << len(self.warps)

    @property
    def threads(self) -> int:
        return WARP * self.num_warps

    @property
    def register_bits(self) -> int:
        return len(self.registers)

    @property
    def num_registers(self) -> int:
        """Registers a thread holds (padding included)."""
        return self.repeat << self.register_bits

    def span(self, axis: int) -> int:
        """What the bits of ``axis`` cover: ``2**k``."""
        bases = (*self.registers, *self.lanes, *self.warps)
        return 1 << sum(1 for b in bases if _axis_of(b) == axis)

    def covered(self, axis: int) -> int:
        """The extent the layout covers along ``axis`` (at least the tile's)."""
        return self.span(axis) * (self.repeat if self.repeat_axis == axis else 1)

    def padded(self, axis: int) -> bool:
        """Some registers hold coordinates past the tile's extent along ``axis``."""
        return self.covered(axis) > self.shape[axis]

    @property
    def has_padding(self) -> bool:
        return any(self.padded(axis) for axis in range(self.rank))

    @property
    def replicated(self) -> bool:
        """Some element is held by more than one thread (a zero lane or warp basis)."""
        return any(_axis_of(b) is None for b in (*self.lanes, *self.warps))

    # ------------------------------------------------------------------ the map

    def register_offset(self, r: int) -> Coord:
        """The coordinate register ``r`` adds to its thread's base."""
        out = [0] * self.rank
        bits, outer = r & ((1 << self.register_bits) - 1), r >> self.register_bits
        for i, basis in enumerate(self.registers):
            if bits >> i & 1:
                out = [o + b for o, b in zip(out, basis)]
        if outer:
            assert self.repeat_axis is not None
            out[self.repeat_axis] += outer * self.span(self.repeat_axis)
        return tuple(out)

    def thread_base(self, thread: int) -> Coord:
        """The coordinate of register 0 of ``thread`` (lane and warp bits)."""
        lane, warp = thread % WARP, thread // WARP
        out = [0] * self.rank
        for i, basis in enumerate(self.lanes):
            if lane >> i & 1:
                out = [o + b for o, b in zip(out, basis)]
        for i, basis in enumerate(self.warps):
            if warp >> i & 1:
                out = [o + b for o, b in zip(out, basis)]
        return tuple(out)

    def coords(self) -> np.ndarray:
        """Every (thread, register)'s coordinate: an int64 array ``[threads, registers, rank]``."""
        bases = np.array([self.thread_base(t) for t in range(self.threads)], np.int64)
        offsets = np.array([self.register_offset(r) for r in range(self.num_registers)], np.int64)
        return bases.reshape(self.threads, 1, self.rank) + offsets.reshape(
            1, self.num_registers, self.rank
        )

    def valid(self) -> np.ndarray:
        """Which (thread, register) slots hold an element (not padding): bool ``[threads, regs]``."""
        coords = self.coords()
        return np.all(coords < np.array(self.shape, np.int64), axis=-1)

    def register_valid(self, r: int, axis: int) -> bool | None:
        """Whether register ``r`` is inside the tile along ``axis`` for every thread (True),
        for none (False), or only for some (None: a per-thread test)."""
        offset = self.register_offset(r)[axis]
        top = offset + sum(b[axis] for b in (*self.lanes, *self.warps) if _axis_of(b) == axis)
        if top < self.shape[axis]:
            return True
        if offset >= self.shape[axis]:
            return False
        return None

    # ------------------------------------------------------------------ derived layouts

    def sliced(self, axis: int) -> Layout:
        """The layout of the tile with ``axis`` removed (a reduction's result).

        The axis's register bits disappear (a thread keeps one value per remaining
        register), its lane and warp bits become replication.
        """
        keep = [a for a in range(self.rank) if a != axis]

        def drop(basis: Coord) -> Coord:
            return tuple(basis[a] for a in keep)

        registers = tuple(drop(b) for b in self.registers if _axis_of(b) != axis)
        lanes = tuple(drop(b) for b in self.lanes)
        warps = tuple(drop(b) for b in self.warps)
        repeat, repeat_axis = self.repeat, self.repeat_axis
        if repeat_axis == axis:
            repeat, repeat_axis = 1, None
        elif repeat_axis is not None and repeat_axis > axis:
            repeat_axis -= 1
        return Layout(
            tuple(self.shape[a] for a in keep), registers, lanes, warps, repeat, repeat_axis
        )

    def expanded(self, axis: int) -> Layout:
        """The layout with a new axis of extent 1 at ``axis`` (``t[:, newaxis]``)."""

        def insert(basis: Coord) -> Coord:
            return (*basis[:axis], 0, *basis[axis:])

        repeat_axis = self.repeat_axis
        if repeat_axis is not None and repeat_axis >= axis:
            repeat_axis += 1
        return Layout(
            (*self.shape[:axis], 1, *self.shape[axis:]),
            tuple(insert(b) for b in self.registers),
            tuple(insert(b) for b in self.lanes),
            tuple(insert(b) for b in self.warps),
            self.repeat,
            repeat_axis,
        )

    def transposed(self, order: Sequence[int] = (1, 0)) -> Layout:
        """The layout of the tile with its axes permuted (result axis ``i`` is ``order[i]``)."""

        def permute(basis: Coord) -> Coord:
            return tuple(basis[a] for a in order)

        repeat_axis = None if self.repeat_axis is None else list(order).index(self.repeat_axis)
        return Layout(
            tuple(self.shape[a] for a in order),
            tuple(permute(b) for b in self.registers),
            tuple(permute(b) for b in self.lanes),
            tuple(permute(b) for b in self.warps),
            self.repeat,
            repeat_axis,
        )

    def collapsed(self, axis: int) -> Layout:
        """This layout with ``axis`` of extent 1: what a broadcast along ``axis`` reads from.

        A broadcast from the collapsed layout to this one moves no data: register ``r``
        of the result is register ``broadcast_source(r)`` of the operand.
        """
        return self.sliced(axis).expanded(axis)

    def broadcast_source(self, axis: int, r: int) -> int:
        """The register of the ``collapsed(axis)`` layout that register ``r`` repeats."""
        out, bit = 0, 0
        for i, basis in enumerate(self.registers):
            if _axis_of(basis) != axis:
                out |= (r >> i & 1) << bit
                bit += 1
        outer = r >> self.register_bits
        if self.repeat_axis != axis:
            out |= outer << bit
        return out

    def with_shape(self, shape: tuple[int, ...]) -> Layout:
        """The same bases over another tile shape (the coverage must still hold)."""
        return Layout(shape, self.registers, self.lanes, self.warps, self.repeat, self.repeat_axis)

    # ------------------------------------------------------------------ reduction steps

    def _renumbered(self, axis: int, keep: set[str]) -> Layout:
        """This layout with only the ``keep`` kinds of bits left along ``axis`` ("lane",
        "warp"), renumbered 1, 2, 4, ... in order of value; the axis's extent becomes
        what they span.  Dropped register bits disappear, dropped lane and warp bits
        become replication."""
        kinds = {"register": self.registers, "lane": self.lanes, "warp": self.warps}
        survivors = sorted(
            b[axis]
            for kind, bases in kinds.items()
            if kind in keep
            for b in bases
            if _axis_of(b) == axis
        )
        rank = {value: 1 << i for i, value in enumerate(survivors)}

        def remap(basis: Coord, kind: str) -> Coord | None:
            if _axis_of(basis) != axis:
                return basis
            if kind not in keep:
                return None if kind == "register" else tuple(0 for _ in basis)
            return tuple(rank[v] if a == axis else v for a, v in enumerate(basis))

        registers = tuple(
            r for r in (remap(b, "register") for b in self.registers) if r is not None
        )
        lanes = tuple(remap(b, "lane") for b in self.lanes)
        warps = tuple(remap(b, "warp") for b in self.warps)
        shape = list(self.shape)
        shape[axis] = 1 << len(survivors)
        repeat, repeat_axis = self.repeat, self.repeat_axis
        if repeat_axis == axis:
            repeat, repeat_axis = 1, None
        return Layout(tuple(shape), registers, lanes, warps, repeat, repeat_axis)  # type: ignore[arg-type]

    def thread_partials(self, axis: int) -> Layout:
        """After each thread combined its registers along ``axis``: its lane and warp bits."""
        return self._renumbered(axis, {"lane", "warp"})

    def warp_partials(self, axis: int) -> Layout:
        """After the lanes combined too (shuffles): the warp bits along ``axis`` alone."""
        return self._renumbered(axis, {"warp"})

    def gathered(self, axis: int) -> Layout:
        """The warps' partials along ``axis`` held by every thread in registers (what it
        reads back from shared memory to combine them)."""
        rank = len(self.shape)
        warp_bits = [i for i, b in enumerate(self.warps) if _axis_of(b) == axis]
        registers = [*self.registers]
        registers += [
            tuple((1 << j) if a == axis else 0 for a in range(rank)) for j in range(len(warp_bits))
        ]
        warps = tuple(
            tuple(0 for _ in b) if i in warp_bits else b for i, b in enumerate(self.warps)
        )
        return Layout(
            self.shape, tuple(registers), self.lanes, warps, self.repeat, self.repeat_axis
        )

    # ------------------------------------------------------------------ queries for passes

    def axis_bits(self, axis: int) -> tuple[list[int], list[int], list[int]]:
        """The register, lane and warp bit positions whose bases move along ``axis``."""
        return (
            [i for i, b in enumerate(self.registers) if _axis_of(b) == axis],
            [i for i, b in enumerate(self.lanes) if _axis_of(b) == axis],
            [i for i, b in enumerate(self.warps) if _axis_of(b) == axis],
        )

    def contiguous_registers(self, axis: int) -> int:
        """How many consecutive registers hold consecutive elements along ``axis`` (a power
        of two): the low register bits whose bases are 1, 2, 4, ... along it."""
        run = 1
        for basis in self.registers:
            if basis != _basis(self.rank, axis, run):
                break
            run *= 2
        return run

    def __str__(self) -> str:
        def fmt(bases: tuple[Coord, ...]) -> str:
            return "[" + ", ".join("(" + ",".join(map(str, b)) + ")" for b in bases) + "]"

        dims = "x".join(map(str, self.shape))
        text = f"#layout<{dims} reg={fmt(self.registers)} lane={fmt(self.lanes)} warp={fmt(self.warps)}"
        if self.repeat > 1:
            text += f" repeat={self.repeat}@{self.repeat_axis}"
        return text + ">"


# --------------------------------------------------------------------------- constructors


def _ceil_log2(n: int) -> int:
    return max(0, (n - 1).bit_length())


def blocked(shape: tuple[int, ...], threads: int, vec: int = 1) -> Layout:
    """Groups of ``vec`` elements along the last axis, consecutive threads on consecutive groups.

    The lanes, then the warps, take the group index's bits along the last axis first,
    then the earlier axes (row-major), so a warp's accesses are contiguous in memory;
    a thread's further registers repeat the pattern ``threads * vec`` elements apart,
    so each thread has several independent vector accesses in flight.  An axis whose
    groups are no power of two (a 12288-wide row) is covered by as many threads as
    leave little padding and an outer repeat of them (3 x 4096); threads left over
    once every axis is covered hold copies (replication).
    """
    rank = len(shape)
    if rank == 0:
        raise ValueError("a tile has at least one axis")
    if not _is_pow2(threads) or threads < WARP:
        raise ValueError(f"{threads} threads: a power of two from {WARP}")
    if not _is_pow2(vec) or shape[-1] % vec:
        raise ValueError(f"vector of {vec} does not divide the last extent {shape[-1]}")
    units = list(shape)
    units[-1] //= vec
    next_value = [1] * rank
    next_value[-1] = vec
    registers: list[Coord] = [_basis(rank, rank - 1, 1 << i) for i in range(_log2(vec))]
    thread_bits: list[Coord] = []
    free = _log2(threads)
    repeat, repeat_axis = 1, None
    register_bits: dict[int, int] = {}
    for axis in reversed(range(rank)):
        need = units[axis]
        if need <= 1:
            continue
        if _is_pow2(need) or repeat_axis is not None:
            bits = min(free, _ceil_log2(need))
        else:
            bits = _repeat_thread_bits(need, free)
        for _ in range(bits):
            thread_bits.append(_basis(rank, axis, next_value[axis]))
            next_value[axis] *= 2
        free -= bits
        remaining = -(-need // (1 << bits))
        if remaining > 1 and not _is_pow2(remaining) and repeat_axis is None:
            repeat, repeat_axis = remaining, axis
        elif remaining > 1:
            register_bits[axis] = _ceil_log2(remaining)
    thread_bits += [(0,) * rank] * free
    for axis in reversed(range(rank)):
        for _ in range(register_bits.get(axis, 0)):
            registers.append(_basis(rank, axis, next_value[axis]))
            next_value[axis] *= 2
    lanes = tuple(thread_bits[:LANE_BITS])
    warps = tuple(thread_bits[LANE_BITS:])
    return Layout(tuple(shape), tuple(registers), lanes, warps, repeat, repeat_axis)


def _repeat_thread_bits(need: int, free: int) -> int:
    """Thread bits along an axis of ``need`` groups (no power of two) covered with a repeat:
    the most whose padding (groups past ``need``) stays within 1/16 of it."""
    most = min(free, need.bit_length() - 1)
    for bits in range(most, -1, -1):
        padding = -(-need // (1 << bits)) * (1 << bits) - need
        if padding * 16 <= need:
            return bits
    return most


def mma_sync_accumulator(shape: tuple[int, int], warps_down: int, warps_across: int) -> Layout:
    """``mma.sync.m16n8k16``'s accumulators of an ``[M, N]`` product over a warp grid.

    Per the PTX ISA a lane holds, of each 16x8 tile, rows ``lane / 4`` and ``+ 8`` at
    columns ``(lane % 4) * 2`` and ``+ 1``.  Register bits: column 1, row 8, then the
    warp's tiles along its columns (column 8, 16, ...), then along its rows (16, 32,
    ...); warp bits: down the rows first (16, 32, ...), then across.  With this order
    the accumulator packed to 16 bits is the A operand of the next product over those
    columns (``mma_sync_a``).
    """
    m, n = shape
    if m % (16 * warps_down) or n % (8 * warps_across):
        raise ValueError(f"[{m}, {n}] does not tile over {warps_down}x{warps_across} warps")
    lanes = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
    cols_per_warp, rows_per_warp = n // warps_across, m // warps_down
    registers: list[Coord] = [(0, 1), (8, 0)]
    registers += [(0, 8 << i) for i in range(_log2(cols_per_warp // 8))]
    warps: list[Coord] = [(16 << i, 0) for i in range(_log2(warps_down))]
    warps += [(0, cols_per_warp << i) for i in range(_log2(warps_across))]
    registers += [(16 * warps_down << i, 0) for i in range(_log2(rows_per_warp // 16))]
    return Layout(shape, tuple(registers), lanes, tuple(warps))


def mma_sync_a(shape: tuple[int, int], warps_down: int, warps_across: int) -> Layout:
    """The ``a`` operand fragments (``[M, K]``) of ``mma.sync.m16n8k16`` for every k-step.

    Per the PTX ISA ``a0..a7`` of a 16x16 step are rows ``lane / 4`` (``+ 8`` for
    ``a2, a3, a6, a7``) at columns ``(lane % 4) * 2 + {0, 1}`` (``+ 8`` for ``a4..a7``):
    register bits column 1, row 8, column 8, then the k-steps (16, 32, ...), then the
    warp's rows.  Every warp of a column of the grid holds the same rows' ``a``.
    """
    m, k = shape
    if m % (16 * warps_down) or k % 16:
        raise ValueError(f"a operand [{m}, {k}] does not tile over {warps_down} warps")
    lanes = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
    registers: list[Coord] = [(0, 1), (8, 0)]
    registers += [(0, 8 << i) for i in range(_log2(k // 8))]
    warps: list[Coord] = [(16 << i, 0) for i in range(_log2(warps_down))]
    warps += [(0, 0)] * _log2(warps_across)
    registers += [(16 * warps_down << i, 0) for i in range(_log2(m // (16 * warps_down)))]
    return Layout(shape, tuple(registers), lanes, tuple(warps))


def mma_sync_b(shape: tuple[int, int], warps_down: int, warps_across: int) -> Layout:
    """The ``b`` operand fragments (``[K, N]``) of ``mma.sync.m16n8k16``.

    Per the PTX ISA ``b0, b1`` are rows (k) ``(lane % 4) * 2 + {0, 1}`` (``+ 8`` for
    ``b2, b3``) at column ``lane / 4``: register bits k 1, k 8, then the warp's
    columns (8, 16, ...), then the k-steps (16, 32, ...).
    """
    k, n = shape
    if n % (8 * warps_across) or k % 16:
        raise ValueError(f"b operand [{k}, {n}] does not tile over {warps_across} warps")
    lanes = ((2, 0), (4, 0), (0, 1), (0, 2), (0, 4))
    cols_per_warp = n // warps_across
    registers: list[Coord] = [(1, 0), (8, 0)]
    registers += [(0, 8 << i) for i in range(_log2(cols_per_warp // 8))]
    registers += [(16 << i, 0) for i in range(_log2(k // 16))]
    warps: list[Coord] = [(0, 0)] * _log2(warps_down)
    warps += [(0, cols_per_warp << i) for i in range(_log2(warps_across))]
    return Layout(shape, tuple(registers), lanes, tuple(warps))


def wgmma_accumulator(shape: tuple[int, int], warpgroups: int, across: int = 1) -> Layout:
    """``wgmma.mma_async.m64nNk16``'s accumulators of an ``[M, N]`` product.

    Per the PTX ISA, in a warpgroup warp ``w`` holds rows ``16 w + lane / 4`` (``+ 8``
    for the odd register pairs) at columns ``(lane % 4) * 2 + {0, 1} + 8 j`` for
    register pair ``2 j``: register bits column 1, row 8, column 8, 16, ..., N/2;
    lane bits column 2, 4, row 1, 2, 4; warp bits row 16, 32.  Warpgroups take 64-row
    slabs (and, with ``across`` > 1, split the columns); a warpgroup's further slabs
    are the highest register bits.
    """
    m, n = shape
    down = warpgroups // across
    if m % (64 * down) or n % (8 * across):
        raise ValueError(f"[{m}, {n}] does not tile over {down}x{across} warpgroups")
    cols = n // across
    lanes = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
    registers: list[Coord] = [(0, 1), (8, 0)]
    registers += [(0, 8 << i) for i in range(_log2(cols // 8))]
    warps: list[Coord] = [(16, 0), (32, 0)]
    warps += [(64 << i, 0) for i in range(_log2(down))]
    warps += [(0, cols << i) for i in range(_log2(across))]
    registers += [(64 * down << i, 0) for i in range(_log2(m // (64 * down)))]
    return Layout(shape, tuple(registers), lanes, tuple(warps))


def wgmma_a(shape: tuple[int, int], warpgroups: int, across: int = 1) -> Layout:
    """``wgmma``'s A operand in registers (``[M, K]``), for every k-step of 16.

    Per the PTX ISA the fragment of a 64x16 step is the m64n16 accumulator's, so an
    f32 accumulator over ``K`` columns packed to 16 bits is this layout register for
    register: bits k 1, row 8, k 8, 16, ...; warpgroups split the columns of their
    product (``across``) hold the same rows' A.
    """
    m, k = shape
    down = warpgroups // across
    if m % (64 * down) or k % 16:
        raise ValueError(f"A operand [{m}, {k}] does not tile over {down} warpgroups")
    lanes = ((0, 2), (0, 4), (1, 0), (2, 0), (4, 0))
    registers: list[Coord] = [(0, 1), (8, 0)]
    registers += [(0, 8 << i) for i in range(_log2(k // 8))]
    warps: list[Coord] = [(16, 0), (32, 0)]
    warps += [(64 << i, 0) for i in range(_log2(down))]
    warps += [(0, 0)] * _log2(across)
    registers += [(64 * down << i, 0) for i in range(_log2(m // (64 * down)))]
    return Layout(shape, tuple(registers), lanes, tuple(warps))


def iter_bits(value: int, count: int) -> Iterator[int]:
    """The positions of the set bits of ``value`` below ``count``."""
    return (i for i in range(count) if value >> i & 1)


# --------------------------------------------------------------------------- shared memory


@dataclass(frozen=True)
class SharedLayout:
    """Where each element of a 2-D ``[rows, cols]`` tile lies in a shared-memory buffer.

    ``kind``:

    * ``"rows"``: row-major, each row ``cols + pad`` elements (a pad of 16 bytes
      spreads a warp's column accesses over the banks);
    * ``"swizzled"``: the canonical layout ``wgmma`` descriptors name, for 16-bit
      elements: atoms of ``width`` bytes (the swizzle width, at most 128) by
      ``rows`` rows side by side along the columns, each row's 16-byte chunks
      permuted by ``chunk ^ (row % (width / 16))`` (the hardware's XOR of address bits
      7.. into bits 4..); the buffer starts on 1024 bytes.  The same bytes serve as a
      K-major operand (rows are M or N, columns K) and as an MN-major one (rows K,
      columns M or N).
    """

    kind: str
    rows: int
    cols: int
    element_bytes: int
    pad: int = 0
    width: int = 0

    @property
    def size_bytes(self) -> int:
        if self.kind == "rows":
            return self.rows * (self.cols + self.pad) * self.element_bytes
        return self.rows * self.cols * self.element_bytes

    @property
    def alignment(self) -> int:
        return 1024 if self.kind == "swizzled" else 16

    def offsets(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Element offsets of (``rows``, ``cols``) (numpy, any shape)."""
        if self.kind == "rows":
            return rows * (self.cols + self.pad) + cols
        byte_col = cols * self.element_bytes
        linear = (byte_col // self.width) * self.rows * self.width + rows * self.width
        linear = linear + byte_col % self.width
        chunks = self.width // 16
        swizzled = linear ^ (((linear >> 7) & (chunks - 1)) << 4)
        return swizzled // self.element_bytes

    def __str__(self) -> str:
        if self.kind == "rows":
            return f"#smem<rows {self.rows}x{self.cols} pad={self.pad}>"
        return f"#smem<swizzle{self.width} {self.rows}x{self.cols}>"


def padded_rows(rows: int, cols: int, element_bytes: int) -> SharedLayout:
    """Row-major with 16 bytes of padding a row."""
    return SharedLayout("rows", rows, cols, element_bytes, pad=max(1, 16 // element_bytes))


def plain_rows(rows: int, cols: int, element_bytes: int) -> SharedLayout:
    return SharedLayout("rows", rows, cols, element_bytes)


def swizzle_width(cols: int, element_bytes: int) -> int:
    """The swizzle width of rows of ``cols`` elements: the row's bytes, at most 128."""
    return min(cols * element_bytes, 128)


def swizzled(
    rows: int, cols: int, element_bytes: int, width: int | None = None
) -> SharedLayout | None:
    """The wgmma canonical layout of ``[rows, cols]`` in atoms of ``width`` bytes (the
    widest the row allows, at most 128, by default), or None where no mode fits."""
    width = width or swizzle_width(cols, element_bytes)
    if width not in (32, 64, 128) or (cols * element_bytes) % width or rows % 8:
        return None
    return SharedLayout("swizzled", rows, cols, element_bytes, width=width)


def shared_bytes(layout: SharedLayout, stages: int = 1) -> int:
    step = -(-layout.size_bytes // layout.alignment) * layout.alignment
    return step * stages


def layout_bytes(layout: Layout, element_bytes: int) -> int:
    """Bytes of the tile's elements (not its padding) held once."""
    return math.prod(layout.shape) * element_bytes


def register_permutation(source: Layout, target: Layout) -> np.ndarray | None:
    """For each register of ``target``, the register of ``source`` that holds the same
    element in thread 0 (the last one, where several do), or None if one is missing:
    the renaming a ``Permute`` applies in every thread."""
    held = {tuple(c): r for r, c in enumerate(source.coords()[0].tolist())}
    wanted = target.coords()[0].tolist()
    if any(tuple(c) not in held for c in wanted):
        return None
    return np.array([held[tuple(c)] for c in wanted], dtype=np.int64)
