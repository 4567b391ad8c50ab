"""Atomics spelled in Python (``ph.atomic_cas``...) mean the same program as in Phobos text."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.interp import run
from phobos.compile.syntax import format_module
from phobos.compile.syntax.parser import parse

frontend = pytest.importorskip("phobos.frontend")

PYTHON = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def tally(x: ph.tensor[ph.f32][N], total: ph.tensor[ph.f32][4], lock: ph.tensor[ph.i32][1],
          order: ph.tensor[ph.i32][1], seen: ph.tensor[ph.i32][G], top: ph.tensor[ph.i32][1]):
    b: ph.let = ph.ctx.block.x
    ph.atomic_add(total[0:+4], x[b * 4:+4])
    ph.atomic_max(top[0], ph.i32(b))
    old: ph.var = ph.atomic_cas(lock[0], 0, 1)
    while old != 0:
        old = ph.atomic_cas(lock[0], 0, 1)
    before: ph.let = ph.atomic_xchg(order[0], ph.i32(b) + 1)
    seen[b] = before
    ph.atomic_xchg(lock[0], 0)
"""

PHOBOS = """\
kernel tally(x: tensor<f32>[N], total: tensor<f32>[4], lock: tensor<i32>[1], \
order: tensor<i32>[1], seen: tensor<i32>[G], top: tensor<i32>[1]) {
    let b = ctx.block.x
    atomic_add(total[0 :+ 4], x[b * 4 :+ 4])
    atomic_max(top[0], i32(b))
    var old = atomic_cas(lock[0], 0, 1)
    while old != 0 {
        old = atomic_cas(lock[0], 0, 1)
    }
    let before = atomic_xchg(order[0], i32(b) + 1)
    seen[b] = before
    atomic_xchg(lock[0], 0)
}
"""


def test_both_spellings_are_one_program():
    program = frontend.translate_source(PYTHON, "/work/tally.py")
    assert program.text == format_module(parse(PHOBOS, "tally.ph"))


def test_the_python_spelling_runs_with_the_race_check():
    module = frontend.translate_source(PYTHON, "/work/tally.py").module
    x = np.arange(10, dtype=np.float32)
    total, lock, order = np.zeros(4, np.float32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    seen, top = np.full(3, -1, np.int32), np.full(1, -1, np.int32)
    run(lower(module, "tally", {}), (3,), [x, total, lock, order, seen, top], race_check=True)
    np.testing.assert_array_equal(total, [0 + 4 + 8, 1 + 5 + 9, 2 + 6, 3 + 7])
    np.testing.assert_array_equal(seen, [0, 1, 2])
    np.testing.assert_array_equal(top, [2])
    np.testing.assert_array_equal(lock, [0])
