"""Layouts: every element of a tile is held by exactly one (thread, repeat, lane) slot.

The C coordinate expressions a layout emits are evaluated here in Python for every
slot, so the distribution the generated code computes is checked, not re-derived.
"""

from __future__ import annotations

import math

import pytest

from phobos.compile.codegen.layout import (
    Layout,
    RowLayout,
    choose_fragment_threads,
    choose_threads,
    kernel_vector_lanes,
    lanes_per_group,
)


def _evaluate(expression: str, g: int, lane: int) -> int:
    # Coordinates are non-negative, so C's '/' is Python's '//'.
    return eval(expression.replace("/", "//"), {}, {"g": g, "i": lane})


def _slots(layout: Layout):
    for tid in range(layout.threads):
        for r in range(layout.repeats):
            g = r * layout.threads + tid
            if g >= layout.groups:
                continue
            for lane in range(layout.vec):
                coords = tuple(_evaluate(c, g, lane) for c in layout.coords())
                yield tid, r, lane, coords, _evaluate(layout.flat(), g, lane)


@pytest.mark.parametrize(
    ("shape", "vec", "threads"),
    [((1024,), 4, 64), ((16,), 4, 32), ((8, 64), 8, 32), ((4, 3, 32), 4, 128), ((5, 8), 2, 32)],
)
def test_each_element_has_one_slot_and_rows_are_contiguous(shape, vec, threads):
    layout = Layout(shape, vec, threads)
    seen = {}
    for tid, r, lane, coords, flat in _slots(layout):
        assert all(0 <= c < extent for c, extent in zip(coords, shape))
        assert coords not in seen
        seen[coords] = (tid, r, lane)
        assert flat == sum(c * math.prod(shape[k + 1 :]) for k, c in enumerate(coords))
    assert len(seen) == math.prod(shape)
    # Lanes of a group are consecutive along the last axis; consecutive threads hold
    # consecutive groups, so a warp's accesses are contiguous.
    for coords, (tid, r, lane) in seen.items():
        if lane + 1 < vec:
            assert seen[(*coords[:-1], coords[-1] + 1)] == (tid, r, lane + 1)


def test_padding_is_guarded():
    assert Layout((16,), 4, 32).guarded and Layout((16,), 4, 32).repeats == 1
    assert not Layout((1024,), 4, 64).guarded and Layout((1024,), 4, 64).repeats == 4


def test_row_layout_holds_the_row_of_each_group():
    parent = Layout((4, 64), 4, 32)
    rows = RowLayout(parent)
    assert rows.shape == (4,) and RowLayout(parent, keep_axis=True).shape == (4, 1)
    for tid in range(parent.threads):
        for r in range(parent.repeats):
            g = r * parent.threads + tid
            (row,) = (_evaluate(c, g, 0) for c in rows.coords())
            assert row == _evaluate(parent.coords()[0], g, 0)
            assert _evaluate(rows.flat(), g, 0) == row


def test_vector_width_and_cta_size_choices():
    assert kernel_vector_lanes([4, 4]) == 4 and kernel_vector_lanes([2, 4]) == 8
    assert kernel_vector_lanes([8]) == 2 and kernel_vector_lanes([]) == 4
    assert lanes_per_group((8, 1), 4) == 1 and lanes_per_group((8, 6), 4) == 2
    assert choose_threads(16) == 32  # at least a warp
    assert choose_threads(1024) == 64  # 16 lanes per thread
    assert choose_threads(4096) == 256 and choose_threads(16384) == 256  # 8 warps, 16-64 lanes
    assert choose_threads(32768) == 512 and choose_threads(1 << 20) == 1024
    assert choose_threads(8192, held=3 * 8192) == 512  # lanes a loop keeps live count too
    assert choose_fragment_threads([256]) == 64  # four groups per thread
    assert choose_fragment_threads([1 << 20]) == 512  # at most 512 chosen
