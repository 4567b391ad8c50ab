"""Distributed layouts as maps: coverage, the derived layouts, and the PTX ISA's fragments.

* Every constructor's layout holds each element of its tile exactly once per replica
  set (the threads that differ only in zero lane and warp bits), and nothing but
  padding past the tile.
* ``sliced``, ``expanded``, ``transposed``, ``collapsed``/``broadcast_source`` and the
  reduction steps (``thread_partials``, ``warp_partials``, ``gathered``) say what
  ``coords()`` says: the same elements in the same threads, moved as documented.
* The ``mma.sync.m16n8k16`` and ``wgmma.m64nNk16`` fragments are the PTX ISA's, from
  its formulas written out here (PTX ISA 9.7.14.5.8 "Matrix Fragments for
  mma.m16n8k16 with floating point type" and 9.7.15.5.1.1.1 "Matrix Fragments for
  wgmma.mma_async.m64nNk16"), and over several instruction tiles they follow the
  register order the constructors' docstrings give.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phobos.compile.gpu import layouts
from phobos.compile.gpu.layouts import (
    Layout,
    blocked,
    mma_sync_a,
    mma_sync_accumulator,
    mma_sync_b,
    wgmma_a,
    wgmma_accumulator,
)

FAST = settings(max_examples=25, deadline=None, derandomize=True, database=None)


def pow2(low: int, high: int):
    return st.integers(low, high).map(lambda e: 1 << e)


# ---------------------------------------------------------------------------- strategies


@st.composite
def blocked_layouts(draw) -> Layout:
    rank = draw(st.integers(1, 3))
    vec = draw(pow2(0, 3))
    shape = [draw(st.integers(1, 70)) for _ in range(rank - 1)]
    last = draw(st.integers(1, 300 // vec)) * vec
    if draw(st.booleans()):  # powers of two, the common case
        shape = [1 << draw(st.integers(0, 6)) for _ in range(rank - 1)]
        last = max(vec, 1 << draw(st.integers(0, 9)))
    threads = draw(pow2(5, 10))
    return blocked((*shape, last), threads, vec)


@st.composite
def mma_layouts(draw) -> Layout:
    kind = draw(st.sampled_from(["acc", "a", "b"]))
    warps = draw(st.integers(0, 3))  # up to 8 warps
    down = draw(pow2(0, warps))
    across = (1 << warps) // down
    if kind == "acc":
        shape = (16 * down * draw(pow2(0, 2)), 8 * across * draw(pow2(0, 3)))
        return mma_sync_accumulator(shape, down, across)
    if kind == "a":
        return mma_sync_a((16 * down * draw(pow2(0, 2)), 16 * draw(pow2(0, 3))), down, across)
    return mma_sync_b((16 * draw(pow2(0, 3)), 8 * across * draw(pow2(0, 3))), down, across)


@st.composite
def wgmma_layouts(draw) -> Layout:
    across = draw(pow2(0, 1))
    down = draw(pow2(0, 2))
    groups = down * across
    if draw(st.booleans()):
        shape = (64 * down * draw(pow2(0, 1)), 8 * across * draw(pow2(0, 5)))
        return wgmma_accumulator(shape, groups, across)
    return wgmma_a((64 * down * draw(pow2(0, 1)), 16 * draw(pow2(0, 3))), groups, across)


any_layout = st.one_of(blocked_layouts(), mma_layouts(), wgmma_layouts())


# ---------------------------------------------------------------------------- coverage


def replica_bits(layout: Layout) -> list[int]:
    """Thread-index bits (lane bits 0-4, warp bits from 5) whose basis is zero."""
    bits = [i for i, b in enumerate(layout.lanes) if not any(b)]
    bits += [5 + i for i, b in enumerate(layout.warps) if not any(b)]
    return bits


def assert_covers_once_per_replica(layout: Layout) -> None:
    coords, valid = layout.coords(), layout.valid()
    shape = np.array(layout.shape)
    assert coords.shape == (layout.threads, layout.num_registers, layout.rank)
    assert (coords >= 0).all()
    # Padding is exactly what lies past the tile.
    np.testing.assert_array_equal(valid, np.all(coords < shape, axis=-1))
    bits = replica_bits(layout)
    thread = np.arange(layout.threads)
    replica = np.zeros(layout.threads, np.int64)
    for j, bit in enumerate(bits):
        replica |= ((thread >> bit) & 1) << j
    size = int(np.prod(layout.shape))
    for r in range(1 << len(bits)):
        mine = (replica == r)[:, None] & valid
        flat = np.ravel_multi_index(tuple(coords[mine].T), layout.shape)
        counts = np.bincount(flat, minlength=size)
        assert (counts == 1).all(), f"replica {r}: held {counts.min()}..{counts.max()} times"
    assert layout.replicated == bool(bits)


@FAST
@given(blocked_layouts())
def test_blocked_covers_its_tile_once_per_replica(layout):
    assert_covers_once_per_replica(layout)


@FAST
@given(mma_layouts())
def test_mma_sync_fragments_cover_their_tile_once_per_replica(layout):
    assert_covers_once_per_replica(layout)


@FAST
@given(wgmma_layouts())
def test_wgmma_fragments_cover_their_tile_once_per_replica(layout):
    assert_covers_once_per_replica(layout)


def test_threads_left_over_hold_copies():
    """16 elements over 64 threads: lane bit 4 and the warp bit are replication, 4 copies."""
    layout = blocked((16,), 64)
    assert replica_bits(layout) == [4, 5]
    assert_covers_once_per_replica(layout)
    counts = np.bincount(layout.coords()[layout.valid()][:, 0], minlength=16)
    assert (counts == 4).all()


def test_a_basis_repeated_is_refused():
    with pytest.raises(ValueError, match="not 1, 2, 4"):
        Layout((64,), ((1,),), ((1,), (4,), (8,), (16,), (32,)), ())
    with pytest.raises(ValueError, match="covers"):
        Layout((64,), (), ((1,), (2,), (4,), (8,), (16,)), ())


@FAST
@given(blocked_layouts())
def test_blocked_groups_vec_elements_per_thread_along_the_last_axis(layout):
    """The first register bits are the vector (consecutive elements), then lanes take the
    next groups along the last axis: a warp's accesses are contiguous."""
    vec = layout.contiguous_registers(layout.rank - 1)
    assert vec >= 1
    coords = layout.coords()
    last = layout.rank - 1
    for r in range(1, vec):
        np.testing.assert_array_equal(coords[:, r, last], coords[:, 0, last] + r)


def test_blocked_repeats_a_row_that_is_no_power_of_two():
    """12288 f32 over 1024 threads of 4: 3 repeats of 4096, no padding."""
    layout = blocked((12288,), 1024, 4)
    assert (layout.repeat, layout.repeat_axis) == (3, 0)
    assert not layout.has_padding
    assert_covers_once_per_replica(layout)


@FAST
@given(any_layout)
def test_register_valid_agrees_with_valid(layout):
    valid = layout.valid()
    coords = layout.coords()
    for axis in range(layout.rank):
        inside = coords[..., axis] < layout.shape[axis]
        for r in range(layout.num_registers):
            answer = layout.register_valid(r, axis)
            column = inside[:, r]
            expected = True if column.all() else False if not column.any() else None
            assert answer == expected, (r, axis)
    assert valid.any()


# ---------------------------------------------------------------------------- derived layouts


def holdings(layout: Layout) -> list[set[tuple[int, ...]]]:
    """What each thread holds (not padding)."""
    coords, valid = layout.coords(), layout.valid()
    return [{tuple(c) for c in coords[t][valid[t]].tolist()} for t in range(layout.threads)]


def drop(c: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return c[:axis] + c[axis + 1 :]


@FAST
@given(any_layout, st.data())
def test_sliced_keeps_each_threads_other_coordinates(layout, data):
    axis = data.draw(st.integers(0, layout.rank - 1))
    if layout.rank == 1:
        return
    sliced = layout.sliced(axis)
    assert sliced.shape == drop(layout.shape, axis)
    for before, after in zip(holdings(layout), holdings(sliced)):
        assert after == {drop(c, axis) for c in before}


@FAST
@given(any_layout, st.data())
def test_expanded_inserts_a_zero_coordinate(layout, data):
    axis = data.draw(st.integers(0, layout.rank))
    expanded = layout.expanded(axis)
    expected = np.insert(layout.coords(), axis, 0, axis=-1)
    np.testing.assert_array_equal(expanded.coords(), expected)


@FAST
@given(any_layout, st.data())
def test_transposed_permutes_the_coordinates(layout, data):
    order = data.draw(st.permutations(range(layout.rank)))
    moved = layout.transposed(order)
    np.testing.assert_array_equal(moved.coords(), layout.coords()[..., list(order)])
    assert moved.shape == tuple(layout.shape[a] for a in order)


@FAST
@given(any_layout, st.data())
def test_collapsed_is_what_a_broadcast_reads_from(layout, data):
    """Register r of the layout repeats register broadcast_source(r) of its collapse."""
    axis = data.draw(st.integers(0, layout.rank - 1))
    collapsed = layout.collapsed(axis)
    assert collapsed.shape[axis] == 1
    source, target = collapsed.coords(), layout.coords()
    valid = layout.valid()
    for r in range(layout.num_registers):
        s = layout.broadcast_source(axis, r)
        assert 0 <= s < collapsed.num_registers
        want = target[:, r].copy()
        want[:, axis] = 0
        np.testing.assert_array_equal(source[valid[:, r], s], want[valid[:, r]])


def axis_thread_bits(layout: Layout, axis: int, kinds: str) -> np.ndarray:
    """Each thread's lane (``l``) and/or warp (``w``) bits whose bases move along ``axis``."""
    thread = np.arange(layout.threads)
    lane, warp = thread % 32, thread // 32
    out = np.zeros(layout.threads, np.int64)
    j = 0
    _, lanes, warps = layout.axis_bits(axis)
    if "l" in kinds:
        for bit in lanes:
            out |= ((lane >> bit) & 1) << j
            j += 1
    if "w" in kinds:
        for bit in warps:
            out |= ((warp >> bit) & 1) << j
            j += 1
    return out


def assert_partials(before: Layout, after: Layout, axis: int, kinds: str) -> None:
    """``after`` holds, in the register each of ``before``'s registers combines into, the
    same other coordinates, and along ``axis`` an index that names the thread's ``kinds``
    bits along it, one to one."""
    _, lanes, warps = before.axis_bits(axis)
    assert after.shape[axis] == 1 << (len(warps) + (len(lanes) if "l" in kinds else 0))
    assert not after.axis_bits(axis)[0]  # no register bits left along the axis
    c_before, c_after = before.coords(), after.coords()
    valid = before.valid()
    bits = axis_thread_bits(before, axis, kinds)
    for r in range(before.num_registers):
        out = layouts_drop_register(before, axis, r)
        mine = valid[:, r]
        np.testing.assert_array_equal(
            np.delete(c_after[mine, out], axis, -1), np.delete(c_before[mine, r], axis, -1)
        )
        index = c_after[:, out, axis]
        pairs = set(zip(index.tolist(), bits.tolist()))
        assert len({i for i, _ in pairs}) == len(pairs) == len({b for _, b in pairs})


def layouts_drop_register(layout: Layout, axis: int, r: int) -> int:
    """The register ``r`` combines into once a thread's registers along ``axis`` are combined."""
    out, bit = 0, 0
    for i, basis in enumerate(layout.registers):
        if not basis[axis]:
            out |= (r >> i & 1) << bit
            bit += 1
    outer = r >> layout.register_bits
    if layout.repeat_axis != axis:
        out |= outer << bit
    return out


@FAST
@given(any_layout, st.data())
def test_reduction_steps_keep_coordinates_consistent(layout, data):
    axis = data.draw(st.integers(0, layout.rank - 1))
    partial = layout.thread_partials(axis)
    assert_partials(layout, partial, axis, "lw")
    warp = partial.warp_partials(axis)
    assert_partials(partial, warp, axis, "w")
    gathered = warp.gathered(axis)
    assert gathered.shape == warp.shape
    # Every thread holds in registers what its warps along the axis hold.
    _, _, warp_bits = warp.axis_bits(axis)
    before, after = holdings(warp), holdings(gathered)
    for thread in range(warp.threads):
        mates = {thread ^ (sum(b << 5 for b in combo)) for combo in _subsets(warp_bits)}
        assert after[thread] == set().union(*(before[t] for t in mates))
    final = gathered.thread_partials(axis)
    assert final.shape[axis] == 1
    assert final.sliced(axis) == layout.sliced(axis)


def _subsets(bits: list[int]):
    for n in range(len(bits) + 1):
        for combo in itertools.combinations(bits, n):
            yield [1 << b for b in combo]


# ---------------------------------------------------------------------------- mma fragments


def same_map(a: Layout, b: Layout) -> bool:
    return a.shape == b.shape and np.array_equal(a.coords(), b.coords())


WGMMA_GRIDS = [
    (m, n, groups, across)
    for m, n, (groups, across) in itertools.product(
        (64, 128, 256), (8, 16, 64, 256), ((1, 1), (2, 1), (2, 2), (4, 1), (4, 2))
    )
    if m % (64 * (groups // across)) == 0 and n % (8 * across) == 0
]


@pytest.mark.parametrize(("m", "n", "groups", "across"), WGMMA_GRIDS)
def test_wgmma_accumulator_is_mma_sync_with_warps_stacked_down_the_rows(m, n, groups, across):
    down = groups // across
    wg = wgmma_accumulator((m, n), groups, across)
    mma = mma_sync_accumulator((m, n), 4 * down, across)
    assert same_map(wg, mma)


@pytest.mark.parametrize(
    ("m", "k", "groups"),
    [
        (m, k, g)
        for m in (64, 128, 256)
        for k in (16, 32, 128)
        for g in (1, 2, 4)
        if m % (64 * g) == 0
    ],
)
def test_f32_accumulator_is_the_16_bit_register_a_operand(m, k, groups):
    """An f32 accumulator over K columns, packed to 16 bits register by register, is the
    next product's A: the two layouts are one map (wgmma and mma.sync alike)."""
    assert same_map(wgmma_accumulator((m, k), groups), wgmma_a((m, k), groups))
    assert same_map(mma_sync_accumulator((m, k), 4 * groups, 1), mma_sync_a((m, k), 4 * groups, 1))


def expect(layout: Layout, formula) -> None:
    """``layout`` maps (thread, register) to ``formula(warp, lane, register)`` (numpy arrays
    of the three, broadcast), a coordinate tuple."""
    thread = np.arange(layout.threads)[:, None]
    register = np.arange(layout.num_registers)[None, :]
    warp, lane = thread // 32, thread % 32
    want = np.stack(np.broadcast_arrays(*formula(warp, lane, register)), axis=-1)
    np.testing.assert_array_equal(layout.coords(), want)


def test_mma_sync_m16n8k16_accumulator_is_the_ptx_fragment():
    """C/D (f32): c_i of lane l is row l/4 (+8 for c2, c3), column (l%4)*2 + i%2."""
    layout = mma_sync_accumulator((16, 8), 1, 1)
    assert layout.num_registers == 4
    expect(layout, lambda w, lane, i: (lane // 4 + 8 * (i // 2), (lane % 4) * 2 + i % 2))


def test_mma_sync_m16n8k16_a_is_the_ptx_fragment():
    """A (f16): a_i of lane l is row l/4 (+8 for a2, a3, a6, a7), column (l%4)*2 + i%2
    (+8 for a4..a7)."""
    layout = mma_sync_a((16, 16), 1, 1)
    assert layout.num_registers == 8
    expect(
        layout,
        lambda w, lane, i: (lane // 4 + 8 * ((i // 2) % 2), (lane % 4) * 2 + i % 2 + 8 * (i // 4)),
    )


def test_mma_sync_m16n8k16_b_is_the_ptx_fragment():
    """B (f16): b_i of lane l is row (k) (l%4)*2 + i%2 (+8 for b2, b3), column l/4."""
    layout = mma_sync_b((16, 8), 1, 1)
    assert layout.num_registers == 4
    expect(layout, lambda w, lane, i: ((lane % 4) * 2 + i % 2 + 8 * (i // 2), lane // 4))


def wgmma_d(w, lane, i):
    """PTX's m64nNk16 D fragment (f32): d_i of warp w (of the warpgroup), lane l."""
    return 16 * w + lane // 4 + 8 * ((i // 2) % 2), (lane % 4) * 2 + i % 2 + 8 * (i // 4)


@pytest.mark.parametrize("n", [8, 16, 32, 64, 128, 256])
def test_wgmma_m64nNk16_accumulator_is_the_ptx_fragment(n):
    """D (f32): d_i of warp w, lane l is row 16w + l/4 + 8*((i/2)%2), column (l%4)*2 + i%2
    + 8*(i/4), for i < N/2."""
    layout = wgmma_accumulator((64, n), 1)
    assert (layout.threads, layout.num_registers) == (128, n // 2)
    expect(layout, wgmma_d)


def test_wgmma_m64nNk16_register_a_is_the_ptx_fragment():
    """A in registers (f16): a_i of warp w, lane l is row 16w + l/4 (+8 for a2, a3, a6,
    a7), column (l%4)*2 + i%2 (+8 for a4..a7): the m64n16 D fragment's."""
    layout = wgmma_a((64, 16), 1)
    assert (layout.threads, layout.num_registers) == (128, 8)
    expect(layout, wgmma_d)


@pytest.mark.parametrize(
    ("shape", "down", "across"),
    [((16, 8), 1, 1), ((64, 64), 2, 2), ((128, 64), 4, 2), ((32, 128), 1, 8), ((128, 32), 8, 1)],
)
def test_mma_sync_accumulator_tiles_the_warps_as_documented(shape, down, across):
    """Over several 16x8 tiles: register i + 4 * (n_tile + n_tiles * m_tile) of warp
    w = w_m + down * w_n is c_i of tile (m_tile, n_tile) of the warp, whose rows are
    16 w_m + 16 down m_tile and columns w_n N/across + 8 n_tile."""
    m, n = shape
    layout = mma_sync_accumulator(shape, down, across)
    cols = n // across
    n_tiles, m_tiles = cols // 8, m // (16 * down)
    assert layout.num_registers == 4 * n_tiles * m_tiles

    def formula(w, lane, r):
        w_m, w_n = w % down, w // down
        i, nt, mt = r % 4, (r // 4) % n_tiles, r // (4 * n_tiles)
        row = 16 * w_m + 16 * down * mt + lane // 4 + 8 * (i // 2)
        return row, w_n * cols + 8 * nt + (lane % 4) * 2 + i % 2

    expect(layout, formula)


@pytest.mark.parametrize(
    ("shape", "groups", "across"),
    [((64, 64), 1, 1), ((128, 128), 1, 1), ((128, 64), 2, 1), ((64, 128), 2, 2), ((256, 64), 4, 2)],
)
def test_wgmma_accumulator_tiles_the_warpgroups_as_documented(shape, groups, across):
    """Warpgroup g = g_m + down g_n takes the 64-row slabs 64 g_m + 64 down s and the
    columns from g_n N/across; register i + (cols/2) s is its d_i of slab s."""
    m, n = shape
    down = groups // across
    cols = n // across
    slabs = m // (64 * down)
    layout = wgmma_accumulator(shape, groups, across)
    assert layout.num_registers == cols // 2 * slabs

    def formula(warp, lane, r):
        group, w = warp // 4, warp % 4
        g_m, g_n = group % down, group // down
        s, i = r // (cols // 2), r % (cols // 2)
        row, col = wgmma_d(w, lane, i)
        return 64 * g_m + 64 * down * s + row, g_n * cols + col

    expect(layout, formula)


def test_mma_operands_are_replicated_over_the_other_warps():
    """Every warp of a column of the grid holds the same rows' a; of a row, the same b."""
    a, b = mma_sync_a((32, 32), 2, 4), mma_sync_b((32, 64), 2, 4)
    in_a, in_b = holdings(a), holdings(b)
    for warp in range(8):
        w_m, w_n = warp % 2, warp // 2
        same_a = (w_m + 2 * ((w_n + 1) % 4)) * 32
        same_b = ((w_m + 1) % 2 + 2 * w_n) * 32
        other_b = ((w_m + 1) % 2 + 2 * ((w_n + 1) % 4)) * 32
        assert in_a[warp * 32 + 5] == in_a[same_a + 5]
        assert in_b[warp * 32 + 5] == in_b[same_b + 5]
        assert in_b[warp * 32 + 5] != in_b[other_b + 5]
    assert a.replicated and b.replicated


def test_layout_constructors_refuse_shapes_that_do_not_tile():
    for make in (
        lambda: mma_sync_accumulator((24, 8), 1, 1),
        lambda: mma_sync_a((16, 8), 1, 1),
        lambda: wgmma_accumulator((32, 64), 1),
        lambda: wgmma_a((64, 8), 1),
        lambda: blocked((10,), 48),
        lambda: blocked((10,), 32, 4),
    ):
        with pytest.raises(ValueError):
            make()


def test_module_constants():
    assert (layouts.WARP, layouts.LANE_BITS, layouts.WARPGROUP_WARPS) == (32, 5, 4)
