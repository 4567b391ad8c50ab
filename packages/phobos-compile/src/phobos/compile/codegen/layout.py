"""Layouts: which thread of the CTA holds which lanes of a tile.

A ``Layout`` distributes a tile of ``shape`` over ``threads`` threads.  The tile
is cut, in row-major order, into *groups* of ``vec`` contiguous elements along
its last axis (``vec`` divides the last extent, so a group never straddles a
row).  Group ``g`` belongs to thread ``g % threads``, as its repeat
``g // threads``: a thread holds ``repeats`` groups, ``threads * vec`` elements
apart, so consecutive threads touch consecutive memory (coalesced across the
warp) and one thread has ``repeats`` independent vector accesses in flight.
When the tile has fewer groups than ``threads * repeats``, the last repeat of
some threads is padding: it holds no element and every memory access and
reduction skips it (``guarded``).

In generated code a thread's lanes are the register array ``T v[repeats][vec]``
walked by two fully unrolled loops, ``r`` over repeats and ``i`` over the
group; ``g = r * threads + tid``.  ``coords`` gives each lane's tile
coordinates as C expressions of ``g`` and ``i``, with constant divisors.
Loops (not one statement per lane) keep the source a few KiB whatever the
lanes a thread holds; unrolling makes every index a constant, so the arrays
live in registers.

How a row tile lands (the memory-bound kernels: softmax, layer norm).  A
``[ROWS, N]`` f32 tile with 16-byte groups has ``N / 4`` groups a row; the CTA
(``choose_threads``) has 16 lanes a thread up to 256 threads, then up to 64.
So a 4096-wide row is 1024 groups on 256 threads: thread ``t`` holds groups
``t, t + 256, t + 512, t + 768`` of the row (four 16-byte loads, each warp
reading 512 contiguous bytes per load), and the row spans all 8 warps.  A
16384-wide row gives each of the 256 threads 16 groups.  A 1024-wide row gets
64 threads of 4 groups.  Rows shorter than a warp's groups share warps (8
groups a row: four rows a warp).  f16 rows have 8 lanes a group, so 16 lanes a
thread is two groups.

The layout is a value so that other distributions are new layouts with
conversions between them.  ``RowLayout`` holds the result of a reduction along
the last axis, replicated over the threads of each row; ``MmaLayout`` holds
``dot``'s accumulators as ``mma.sync`` fragments.  All three share the
``[repeats][vec]`` register shape, ``g`` and ``coords``, so loops, elementwise
code and stores work on any of them.  ``conversions.py`` moves lanes between
any two layouts through shared memory, and skips the move where the slots
already agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

WARP = 32
MAX_THREADS = 1024
VECTOR_BYTES = 16
# The CTA size rule for tiles without dot (see ``choose_threads``).
ELEMENTS_PER_THREAD = 16  # four 16-byte f32 vectors in flight per tensor, or two of f16
PREFERRED_THREADS = 256  # 8 warps: the CTA grows to this first, then each thread's share
MOST_ELEMENTS_PER_THREAD = 64  # past this share, the CTA grows again (to 1024)
# The CTA size rule for kernels with a dot (see ``choose_fragment_threads``).
GROUPS_PER_THREAD = 4
MAX_FRAGMENT_THREADS = 512


@dataclass(frozen=True)
class Layout:
    shape: tuple[int, ...]
    vec: int
    threads: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def groups(self) -> int:
        return self.numel // self.vec

    @property
    def repeats(self) -> int:
        return -(-self.groups // self.threads)

    @property
    def guarded(self) -> bool:
        """Some (thread, repeat) slots hold no group: test ``g < groups``."""
        return self.groups % self.threads != 0

    @property
    def groups_per_row(self) -> int:
        return self.shape[-1] // self.vec

    replicated = False  # each element is held by exactly one slot

    @property
    def runs(self) -> tuple[tuple[int, int], ...]:
        """(first lane, length) of each run of lanes contiguous along the last axis."""
        return ((0, self.vec),)

    def coords(self, lane: str = "i") -> tuple[str, ...]:
        """Each axis's coordinate of lane ``lane`` of group ``g``, as C ``int`` expressions."""
        if len(self.shape) == 1:
            return (self.flat(lane),)
        per_row = self.groups_per_row
        last = f"(g % {per_row}) * {self.vec} + {lane}" if per_row > 1 else lane
        if self.vec == 1:
            last = f"(g % {per_row})" if per_row > 1 else "0"
        out = [last]
        divisor = per_row
        for axis in range(len(self.shape) - 2, -1, -1):
            quotient = f"g / {divisor}" if divisor > 1 else "g"
            extent = self.shape[axis]
            if extent == 1:
                out.append("0")
            elif axis == 0:
                out.append(f"({quotient})")
            else:
                out.append(f"({quotient}) % {extent}")
            divisor *= extent
        return tuple(reversed(out))

    def flat(self, lane: str = "i") -> str:
        """The lane's row-major element index within the tile."""
        return f"g * {self.vec} + {lane}" if self.vec > 1 else "g"


def lanes_per_group(tile_shape: tuple[int, ...], kernel_vec: int) -> int:
    """The largest power of two dividing both the kernel's vector width and the last extent."""
    last = tile_shape[-1] if tile_shape else 1
    vec = kernel_vec
    while last % vec:
        vec //= 2
    return vec


def kernel_vector_lanes(memory_dtype_bytes: list[int]) -> int:
    """Lanes per group: one 16-byte vector of the narrowest element the kernel moves."""
    narrowest = min(memory_dtype_bytes, default=4)
    return max(VECTOR_BYTES // narrowest, 1)


def choose_threads(largest: int, held: int = 0) -> int:
    """The CTA size for a kernel without ``dot`` whose largest tile has ``largest`` lanes.

    A memory-bound kernel wants many bytes in flight per SM: several 16-byte loads
    per thread and several CTAs per SM.  So the CTA grows from one warp until each
    thread holds ``ELEMENTS_PER_THREAD`` lanes of the largest tile, up to
    ``PREFERRED_THREADS``; a larger tile then gives each thread more lanes (more
    loads in flight, still in registers) up to ``MOST_ELEMENTS_PER_THREAD`` of
    the lanes ``held`` at once (the largest tile or the windows a straight run
    of statements loads, plus the tiles a loop carries), and only past that more
    threads, up to 1024.  A 4096-wide f32 row gets 256 threads of 16 lanes, a
    16384-wide one 256 of 64; layer norm's backward over 8192 columns (the row
    and two running sums) 512, and so does ``x[w] + y[w]`` over 16384; layer
    norm's forward over 16384 (row, weights and biases loaded together) 1024.
    """
    held = max(held, largest)
    threads = WARP
    while threads < PREFERRED_THREADS and threads * ELEMENTS_PER_THREAD < largest:
        threads *= 2
    while threads < MAX_THREADS and threads * MOST_ELEMENTS_PER_THREAD < held:
        threads *= 2
    return threads


def choose_fragment_threads(groups: list[int]) -> int:
    """The CTA size of a kernel with ``dot``: about ``GROUPS_PER_THREAD`` groups per thread.

    The warps share the ``mma`` tiles of the accumulator, so more warps (up to 16)
    keep each thread's fragments small enough for registers.
    """
    most = max(groups, default=1)
    want = -(-most // GROUPS_PER_THREAD)
    threads = WARP
    while threads < want and threads < MAX_FRAGMENT_THREADS:
        threads *= 2
    return threads


@dataclass(frozen=True)
class RowLayout:
    """One value per row of ``parent``, held by every thread that holds a group of the row.

    A reduction along the last axis leaves its result here: after the warp
    shuffles every thread of a row has the row's total, so ``t - max(t,
    axis=1)[:, newaxis]`` broadcasts it back to ``parent`` without moving data.
    ``shape`` is ``parent.shape`` without its last axis, or with it as 1 when
    ``keep_axis`` (after ``[:, newaxis]``).  Slot ``r`` of a thread holds the row
    of its group ``g``; each row is replicated across ``groups_per_row`` threads.
    """

    parent: Layout
    keep_axis: bool = False

    replicated = True  # a row's value is held by every thread of the row
    runs = ((0, 1),)

    @property
    def shape(self) -> tuple[int, ...]:
        rows = self.parent.shape[:-1]
        return (*rows, 1) if self.keep_axis else rows

    vec = 1

    @property
    def threads(self) -> int:
        return self.parent.threads

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def groups(self) -> int:
        return self.parent.groups

    @property
    def repeats(self) -> int:
        return self.parent.repeats

    @property
    def guarded(self) -> bool:
        return self.parent.guarded

    def coords(self, lane: str = "i") -> tuple[str, ...]:
        rows = self.parent.coords("0")[:-1]
        return (*rows, "0") if self.keep_axis else rows

    def flat(self, lane: str = "i") -> str:
        per_row = self.parent.groups_per_row
        return f"g / {per_row}" if per_row > 1 else "g"


@dataclass(frozen=True)
class MmaLayout:
    """The accumulator fragments of ``mma.sync.m16n8k16``: what ``dot`` leaves in registers.

    The [M, N] tile is cut into 16x8 tiles.  With ``g = r * threads + tid`` as
    everywhere else, ``g % 32`` is the lane in the warp; the warps form a grid
    (``warp_grid``: ``down`` x ``across``) and warp ``w`` holds, as its repeats,
    the tiles at rows ``w / across`` + multiples of ``down`` and columns
    ``w % across`` + multiples of ``across``, so a warp's tiles share few rows
    and columns, and ``dot`` loads few ``a`` and ``b`` fragments per k-step.
    Without such a grid, tile ``t = g / 32`` (row-major) is warp ``t % warps``'s
    repeat ``t // warps``.  With ``warpgroups`` the grid is every warp down, one
    across: what ``wgmma`` leaves, four warps to a 64-row slab (wgmma.py).  Per the PTX ISA a lane holds 4 accumulators: rows ``lane / 4`` and
    ``lane / 4 + 8``, columns ``(lane % 4) * 2`` and ``+ 1``.  A whole warp
    skips a repeat with no tile (``guarded``), so ``mma.sync`` always runs on
    full warps.
    """

    shape: tuple[int, ...]
    threads: int
    warpgroups: bool = False

    vec = 4
    replicated = False
    runs = ((0, 2), (2, 2))  # two columns of row lane/4, then of row lane/4 + 8

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def tiles_per_row(self) -> int:
        return self.shape[1] // 8

    @property
    def groups(self) -> int:
        return self.shape[0] // 16 * self.tiles_per_row * WARP

    @property
    def repeats(self) -> int:
        return -(-self.groups // self.threads)

    @property
    def guarded(self) -> bool:
        return self.groups % self.threads != 0

    @property
    def warp_grid(self) -> tuple[int, int] | None:
        """``(down, across)`` warps, each warp's tiles ``rows / down`` by ``columns / across``.

        The grid that moves the fewest fragment bytes per k-step (an ``a``
        fragment is twice a ``b`` one), fewest warps down on a tie; None when
        no grid divides the tiles evenly (a warp then takes tiles row-major).
        """
        if self.guarded:
            return None
        warps, rows, columns = self.threads // WARP, self.shape[0] // 16, self.tiles_per_row
        if self.warpgroups:
            return (warps, 1)
        grids = [
            (down, warps // down)
            for down in range(1, warps + 1)
            if warps % down == 0 and rows % down == 0 and columns % (warps // down) == 0
        ]
        if not grids:
            return None
        return min(grids, key=lambda grid: (2 * rows // grid[0] + columns // grid[1], grid[0]))

    def tile(self, group: str = "g") -> tuple[str, str]:
        """The 16x8 tile (row, column, in tiles) that holds group ``group``'s lanes."""
        grid = self.warp_grid
        if grid is None:
            per_row = self.tiles_per_row
            return f"(({group} / 32) / {per_row})", f"(({group} / 32) % {per_row})"
        down, across = grid
        per_warp = self.tiles_per_row // across  # a warp's tiles in one row
        repeat, warp = f"({group} / {self.threads})", f"(({group} % {self.threads}) / 32)"
        row = f"(({repeat} / {per_warp}) * {down} + {warp} / {across})"
        col = f"(({repeat} % {per_warp}) * {across} + {warp} % {across})"
        return row, col

    def coords(self, lane: str = "i") -> tuple[str, ...]:
        tile_row, tile_col = self.tile()
        row = f"{tile_row} * 16 + (g % 32) / 4 + ({lane} / 2) * 8"
        col = f"{tile_col} * 8 + (g % 4) * 2 + {lane} % 2"
        return (row, col)

    def flat(self, lane: str = "i") -> str:
        row, col = self.coords(lane)
        return f"({row}) * {self.shape[1]} + {col}"


def mma_shape_ok(m: int, n: int, k: int) -> bool:
    """``mma.sync.m16n8k16`` tiles the product exactly."""
    return m % 16 == 0 and n % 8 == 0 and k % 16 == 0


AnyLayout = Union[Layout, RowLayout, MmaLayout]
