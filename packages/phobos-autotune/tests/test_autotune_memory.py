"""Which written arguments share memory with an argument that is read (restored, not poisoned)."""

from __future__ import annotations

import numpy as np

from phobos.autotune.memory import read_through_others
from phobos.autotune.state import ArgumentState


def test_an_array_passed_twice_or_overlapping_views_are_read_through_the_other():
    x = np.arange(100, dtype=np.float32)
    assert read_through_others([x, x, 2.0], {1}, {0}) == {1}
    assert read_through_others([x[:60], x[50:]], {1}, {0}) == {1}
    grid = np.zeros((8, 8), dtype=np.float32)
    assert read_through_others([grid[:, 3], grid[3]], {1}, {0}) == {1}  # a column and a row
    assert read_through_others([x.view(np.int32)[10:], x[:20]], {1}, {0}) == {1}


def test_separate_arrays_and_neighbouring_views_are_not():
    x = np.arange(100, dtype=np.float32)
    assert read_through_others([x, np.empty_like(x)], {1}, {0}) == frozenset()
    assert read_through_others([x[:50], x[50:]], {1}, {0}) == frozenset()
    assert read_through_others([x[50:], x[:50]], {1}, {0}) == frozenset()
    assert read_through_others([x, x[:0]], {1}, {0}) == frozenset()  # no elements
    assert read_through_others([x, x], {1}, set()) == frozenset()  # nothing read
    assert read_through_others([x, x], {0, 1}, {0, 1}) == frozenset({0, 1})


def test_an_output_that_is_also_an_input_is_restored_not_poisoned():
    x = np.arange(8, dtype=np.float32)
    out = np.empty(8, dtype=np.float32)
    state = ArgumentState([x, x, out], written={1, 2}, read={0})
    assert (state.outputs, state.in_place) == ([2], [1])
    x[:] = -1
    state.reset(0)
    assert (x == np.arange(8)).all() and np.isnan(out).all()
