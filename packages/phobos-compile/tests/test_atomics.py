"""Atomics: checking atomic_add/max/xchg/cas, running them, and the race check's view of them."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.interp import RaceError, run
from phobos.compile.ir import nodes as ir
from phobos.compile.ir.printer import format_kernel
from phobos.compile.syntax.parser import parse

HEADER = (
    "kernel k(x: tensor<f32>[N], total: tensor<f32>[4], h: tensor<f16>[4], "
    "count: tensor<i32>[C], lock: tensor<i32>[1], seen: tensor<i32>[G]) {\n"
    "    let b = ctx.block.x\n"
)


def body(text: str) -> ir.Kernel:
    return lower(parse(HEADER + text + "\n}\n", "atomics.ph"), "k", {})


def failure(text: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        body(text)
    return caught.value


def at(err: PhobosError) -> tuple[int, int]:
    """Line (counted from the first body line) and column of the error."""
    return err.span.line - 2, err.span.col


def arrays(n: int = 10, blocks: int = 3) -> dict[str, np.ndarray]:
    return {
        "x": np.arange(n, dtype=np.float32) + 0.5,
        "total": np.zeros(4, np.float32),
        "h": np.zeros(4, np.float16),
        "count": np.zeros(2, np.int32),
        "lock": np.zeros(1, np.int32),
        "seen": np.full(blocks, -7, np.int32),
    }


def launch(text: str, blocks: int = 3, race_check: bool = True, **given) -> dict:
    args = {**arrays(blocks=blocks), **given}
    run(body(text), (blocks,), list(args.values()), race_check=race_check)
    return args


# ----------------------------------------------------------------------------- checking


def test_each_atomic_lowers_to_its_statement():
    kernel = body(
        "atomic_add(total[0 :+ 4], x[b :+ 4])\n"
        "atomic_max(count[0], i32(b))\n"
        "atomic_xchg(lock[0], 0)\n"
        "let old = atomic_cas(lock[0], 0, 1)"
    )
    add, top, xchg, cas = kernel.body[1:]
    assert isinstance(add, ir.AtomicAdd) and add.value.type == ir.TileT("f32", (4,), True)
    assert isinstance(top, ir.AtomicMax) and top.value.type == ir.ScalarT("i32")
    assert isinstance(xchg, ir.AtomicXchg) and xchg.result is None
    assert isinstance(cas, ir.AtomicCas)
    assert cas.compare == ir.Const(0, ir.ScalarT("i32"))
    assert cas.result == ir.Variable("old", ir.ScalarT("i32"), False)


def test_the_old_value_goes_into_let_var_or_an_assignment():
    kernel = body(
        "var old = atomic_cas(lock[0], 0, 1)\n"
        "while old != 0 {\n    old = atomic_cas(lock[0], 0, 1)\n}\n"
        "let prev = atomic_xchg(lock[0], 0)"
    )
    text = format_kernel(kernel)
    assert "var %old: i32 = atomic_cas lock[0], 0, 1" in text
    assert "%old_1: i32 = atomic_cas lock[0], 0, 1\n        %old = %old_1" in text
    assert "%prev: i32 = atomic_xchg lock[0], 0" in text


def test_atomic_max_prints_and_updates_windows():
    text = format_kernel(body("atomic_max(total[0 :+ 4], x[b :+ 4])"))
    assert "atomic_max total[0 :+ 4], load x[%b :+ 4]" in text


@pytest.mark.parametrize(
    "text, where, message, help",
    [
        (
            "let s = atomic_max(count[0], 1)",
            (1, 9),
            "atomic_max is a statement and gives no value",
            "write it on its own line: `atomic_max(t[a :+ L], v)`",
        ),
        (
            "let s = 1 + atomic_xchg(lock[0], 1)",
            (1, 13),
            "atomic_xchg gives the old value only as the whole value of `let`, `var` or `=`",
            "write `let old = atomic_xchg(lock[0], 1)` on its own line, then use `old`",
        ),
        (
            "atomic_cas(count[0 :+ 2], 0, 1)",
            (1, 12),
            "atomic_cas works on one element, not a window",
            "index one element: `count[i]` (a point on every axis)",
        ),
        (
            "atomic_cas(total[0], 0.0, 1.0)",
            (1, 12),
            "atomic_cas cannot swap f32",
            "it works on i32, u32, i64, u64 tensors",
        ),
        (
            "atomic_max(h[0 :+ 4], 1.0)",
            (1, 12),
            "atomic_max cannot update f16",
            "it works on i32, u32, i64, u64, f32, f64 tensors",
        ),
        (
            "atomic_cas(lock[0], 1)",
            (1, 1),
            "atomic_cas takes a tensor access and 2 values (compare, v)",
            "write `atomic_cas(t[i], compare, v)`",
        ),
        (
            "atomic_xchg(lock, 1)",
            (1, 13),
            "atomic_xchg swaps a tensor access",
            "index the tensor: `atomic_xchg(t[i], 1)`",
        ),
        (
            "atomic_xchg(lock[0], 1.5)",
            (1, 22),
            "a float literal cannot be stored into i32",
            None,
        ),
        (
            "var f = 0.0\nf = atomic_xchg(lock[0], 1)",
            (2, 5),
            "'f' is a f32, but atomic_xchg gives a i32 old value",
            "declare a new name for it: `let old = atomic_xchg(lock[0], 1)`",
        ),
        (
            "while atomic_cas(lock[0], 0, 1) != 0 {\n}",
            (1, 7),
            "atomic_cas gives the old value only as the whole value of `let`, `var` or `=`",
            "write `let old = atomic_cas(lock[0], 0, 1)` on its own line, then use `old`",
        ),
        (
            "let t = count[0 :+ 2]\nlet old = atomic_cas(lock[0], t, 1)",
            (2, 31),
            "atomic_cas compares with a scalar, not a tile<i32>[2]",
            "reduce the tile first, or compare one element at a time",
        ),
    ],
)
def test_misused_atomics_are_located_errors(text, where, message, help):
    err = failure(text)
    assert err.message == message
    assert at(err) == where
    assert err.diagnostics[0].help == help


# ----------------------------------------------------------------------------- running


def test_atomic_add_sums_every_block_window_skipping_absent_lanes():
    out = launch("atomic_add(total[0 :+ 4], x[b * 4 :+ 4])")
    x = arrays()["x"]
    expected = np.zeros(4, np.float32)
    for start in range(0, 12, 4):
        chunk = x[start : start + 4]
        expected[: len(chunk)] += chunk
    np.testing.assert_array_equal(out["total"], expected)


def test_atomic_add_rounds_f16_after_each_update_and_wraps_integers():
    h = np.full(4, 2048.0, np.float16)
    out = launch("atomic_add(h[0 :+ 4], 1f16)", blocks=2, h=h)
    # 2048 + 1 rounds back to 2048 in f16, every time.
    np.testing.assert_array_equal(out["h"], np.full(4, 2048.0, np.float16))
    count = np.array([2**31 - 1, 5], np.int32)
    out = launch("atomic_add(count[0 :+ 2], 1)", blocks=2, count=count)
    np.testing.assert_array_equal(out["count"], [-(2**31) + 1, 7])


def test_atomic_max_keeps_the_largest():
    count = np.array([1, 100], np.int32)
    out = launch("atomic_max(count[0 :+ 2], i32(b) * 3)", blocks=5, count=count)
    np.testing.assert_array_equal(out["count"], [12, 100])
    # x is 0.5, 1.5, ..., 9.5; block 7's window x[7 :+ 4] has its last lane absent.
    out = launch("atomic_max(total[0 :+ 4], x[b :+ 4] - 8.0)", blocks=8)
    np.testing.assert_array_equal(out["total"], [0.0, 0.5, 1.5, 1.5])


def test_a_spin_lock_serialises_a_counter():
    text = (
        "var old = atomic_cas(lock[0], 0, 1)\n"
        "while old != 0 {\n    old = atomic_cas(lock[0], 0, 1)\n}\n"
        "let before = atomic_xchg(count[1], i32(b) + 10)\n"
        "seen[b] = before\n"
        "atomic_xchg(lock[0], 0)"
    )
    out = launch(text, blocks=4)
    # Blocks run in order: each sees the previous block's value, the first sees 0.
    np.testing.assert_array_equal(out["seen"], [0, 10, 11, 12])
    np.testing.assert_array_equal(out["count"], [0, 13])
    np.testing.assert_array_equal(out["lock"], [0])


def test_cas_swaps_only_when_the_element_equals_compare():
    text = "let old = atomic_cas(count[0], i32(b), 50)\nseen[b] = old"
    out = launch(text, blocks=3, count=np.array([1, 0], np.int32))
    # Block 0 compares 1 with 0 (no swap), block 1 swaps 1 for 50, block 2 sees 50.
    np.testing.assert_array_equal(out["seen"], [1, 1, 50])
    np.testing.assert_array_equal(out["count"], [50, 0])


def test_an_element_outside_the_tensor_is_not_written_and_reads_zero():
    out = launch("let old = atomic_xchg(count[i32(b) + 1], 9)\nseen[b] = old", blocks=3)
    np.testing.assert_array_equal(out["count"], [0, 9])
    np.testing.assert_array_equal(out["seen"], [0, 0, 0])


# ----------------------------------------------------------------------------- race check


def test_atomics_from_many_blocks_are_not_races():
    launch(
        "atomic_add(total[0 :+ 4], x[b :+ 4])\natomic_max(count[0], 1)\natomic_xchg(lock[0], 0)",
        blocks=5,
    )


def test_an_atomic_races_with_another_blocks_plain_read_or_write():
    with pytest.raises(RaceError) as caught:
        launch("atomic_add(count[0], 1)\nseen[b] = count[0]", blocks=2)
    assert caught.value.message == (
        "data race on count[0]: block (1, 0, 0) updates it atomically, and block (0, 0, 0) read it"
    )
    with pytest.raises(RaceError) as caught:
        launch("seen[b] = count[0]\natomic_add(count[0], 1)", blocks=2)
    assert caught.value.message == (
        "data race on count[0]: block (1, 0, 0) reads it, and block (0, 0, 0) updated it atomically"
    )
    assert caught.value.diagnostics[0].notes[0].message == (
        "block (0, 0, 0) updated count[0] atomically here"
    )
    with pytest.raises(RaceError):
        launch("if b == 1 {\n    count[0] = 3\n}\natomic_max(count[0], 1)", blocks=2)


def test_absent_lanes_of_an_atomic_are_not_recorded():
    # Block 0 updates total[0 :+ 2] only (x has 2 elements); block 1 writes total[2 :+ 2].
    text = "if b == 0 {\n    atomic_add(total[0 :+ 4], x[0 :+ 4])\n} else {\n"
    text += "    total[2 :+ 2] = x[0 :+ 2]\n}"
    out = launch(text, blocks=2, x=np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(out["total"], [1.0, 2.0, 1.0, 2.0])
