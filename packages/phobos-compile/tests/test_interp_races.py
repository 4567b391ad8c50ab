"""The race check: two blocks writing one element, or one writing what another reads."""

from __future__ import annotations

import time

import numpy as np
import pytest

from phobos.compile.diagnostics import PhobosError, register_source
from phobos.compile.interp import RaceError, run
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span

SOURCE = """\
kernel racy(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * 4
    out[0 :+ 4] = x[base :+ 4]
    x[base :+ 4] = x[base + 1 :+ 4]
    out[base :+ 4] = x[base :+ 4]
}
"""
FILE = "interp_races.ph"
register_source(FILE, SOURCE)


def span_of(text: str, occurrence: int = 0) -> Span:
    """The span of the ``occurrence``-th ``text`` in SOURCE."""
    start = -1
    for _ in range(occurrence + 1):
        start = SOURCE.index(text, start + 1)
    line = SOURCE.count("\n", 0, start) + 1
    col = start - (SOURCE.rindex("\n", 0, start) + 1 if line > 1 else 0) + 1
    return Span(FILE, line, col, line, col + len(text))


IDX = ir.ScalarT("index")
F32x4 = ir.TileT("f32", (4,), partial=True)


def const(value: int) -> ir.Const:
    return ir.Const(value, IDX)


def base_plus(offset: int) -> ir.Expr:
    base = ir.Binary("mul", ir.CtxValue("block", "x", IDX), const(4), IDX)
    return ir.Binary("add", base, const(offset), IDX) if offset else base


def window(start: ir.Expr) -> tuple[ir.WindowIndex]:
    return (ir.WindowIndex(start, 4),)


def tensor(name: str, *dims: str) -> ir.TensorParam:
    return ir.TensorParam(name, "f32", dims)


def racy_kernel(*body: ir.Stmt, params=None) -> ir.Kernel:
    return ir.Kernel("racy", params or (X, OUT), (), body)


X, OUT = tensor("x", "N"), tensor("out", "N")
SAME_WINDOW = ir.Store(
    OUT,
    window(const(0)),
    ir.Load(X, window(base_plus(0)), F32x4),
    span_of("out[0 :+ 4] = x[base :+ 4]"),
)
SHIFT_IN_PLACE = ir.Store(
    X,
    window(base_plus(0)),
    ir.Load(X, window(base_plus(1)), F32x4, span_of("x[base + 1 :+ 4]")),
    span_of("x[base :+ 4] = x[base + 1 :+ 4]"),
)
OWN_WINDOW = ir.Store(
    OUT,
    window(base_plus(0)),
    ir.Load(X, window(base_plus(0)), F32x4, span_of("x[base :+ 4]", 2)),
    span_of("out[base :+ 4] = x[base :+ 4]"),
)


def arrays(n: int = 8) -> list[np.ndarray]:
    return [np.arange(n, dtype=np.float32), np.zeros(n, np.float32)]


def test_two_blocks_writing_one_element():
    with pytest.raises(RaceError) as caught:
        run(racy_kernel(SAME_WINDOW), (2,), arrays(), race_check=True)
    err = caught.value
    assert isinstance(err, PhobosError)
    assert err.message == (
        "data race on out[0]: block (1, 0, 0) writes it, and block (0, 0, 0) wrote it"
    )
    assert err.span == SAME_WINDOW.span
    (note,) = err.diagnostics[0].notes
    assert note.span == SAME_WINDOW.span
    assert note.message == "block (0, 0, 0) wrote out[0] here"
    rendered = err.render()
    assert rendered.startswith("interp_races.ph:3:5: error: data race on out[0]")
    assert "interp_races.ph:3:5: note: block (0, 0, 0) wrote out[0] here" in rendered
    assert rendered.count(SOURCE.splitlines()[2]) == 2


def test_a_block_writing_what_another_read_names_both_lines():
    with pytest.raises(RaceError) as caught:
        run(racy_kernel(SHIFT_IN_PLACE), (2,), arrays(), race_check=True)
    err = caught.value
    # Block 0 read x[1 .. 4]; block 1 then writes x[4 .. 7].
    assert err.message == (
        "data race on x[4]: block (1, 0, 0) writes it, and block (0, 0, 0) read it"
    )
    assert err.span.line == 4 and err.span.col == 5
    (note,) = err.diagnostics[0].notes
    assert (note.span.line, note.span.col) == (4, 20)
    assert note.message == "block (0, 0, 0) read x[4] here"


def test_a_block_reading_what_another_wrote():
    # Block 0 writes x[0 .. 3]; block 1 reads x[0 .. 3] (a window one block back).
    back = ir.Binary("sub", base_plus(0), const(4), IDX)
    read_back = ir.Store(
        OUT, window(base_plus(0)), ir.Load(X, window(back), F32x4, span_of("x[base :+ 4]"))
    )
    write_own = ir.Store(X, window(base_plus(0)), ir.Full(1.0, F32x4), span_of("x[base :+ 4] = x"))
    with pytest.raises(
        RaceError,
        match=r"data race on x\[0\]: block \(1, 0, 0\) reads it, and block \(0, 0, 0\) wrote it",
    ):
        run(racy_kernel(write_own, read_back), (2,), arrays(), race_check=True)


def test_the_race_reports_a_multidimensional_element():
    grid_out = ir.TensorParam("g", "f32", ("M", "N"))
    rows = ir.Binary("add", ir.CtxValue("block", "x", IDX), const(1), IDX)
    store = ir.Store(
        grid_out,
        (ir.WindowIndex(const(0), 2), ir.WindowIndex(rows, 2)),
        ir.Full(0.0, ir.TileT("f32", (2, 2))),
    )
    with pytest.raises(RaceError, match=r"data race on g\[0, 2\]: block \(1, 0, 0\)"):
        run(
            racy_kernel(store, params=(grid_out,)),
            (2,),
            [np.zeros((3, 4), np.float32)],
            race_check=True,
        )


def test_race_free_kernels_pass():
    x, out = arrays(10)
    run(racy_kernel(OWN_WINDOW), (3,), [x, out], race_check=True)
    assert out.tolist() == x.tolist()


def test_a_block_may_read_and_write_its_own_elements():
    double = ir.Store(
        X,
        window(base_plus(0)),
        ir.Binary(
            "add",
            ir.Load(X, window(base_plus(0)), F32x4),
            ir.Load(X, window(base_plus(0)), F32x4),
            F32x4,
        ),
    )
    x, out = arrays(8)
    run(racy_kernel(double, OWN_WINDOW), (2,), [x, out], race_check=True)
    assert out.tolist() == [2.0 * i for i in range(8)]


def test_many_blocks_may_read_one_element():
    first = ir.Load(X, (ir.PointIndex(const(0)),), ir.ScalarT("f32"))
    broadcast = ir.Store(OUT, window(base_plus(0)), ir.Splat(first, F32x4))
    x, out = arrays(8)
    run(racy_kernel(broadcast), (2,), [x, out], race_check=True)
    assert out.tolist() == [0.0] * 8


def test_a_write_after_other_blocks_read_is_caught():
    # Blocks 0 and 1 read x[0]; block 1 then writes x[0]: block 0's read races with it.
    first = ir.Load(X, (ir.PointIndex(const(0)),), ir.ScalarT("f32"), span_of("x: tensor"))
    read = ir.Store(OUT, (ir.PointIndex(ir.CtxValue("block", "x", IDX)),), first)
    last_block_writes = ir.If(
        ir.Binary("eq", ir.CtxValue("block", "x", IDX), const(1), ir.ScalarT("bool")),
        (ir.Store(X, (ir.PointIndex(const(0)),), ir.Const(5.0, ir.ScalarT("f32"))),),
    )
    with pytest.raises(
        RaceError, match=r"x\[0\]: block \(1, 0, 0\) writes it, and block \(0, 0, 0\) read it"
    ):
        run(racy_kernel(read, last_block_writes), (2,), arrays(), race_check=True)


def test_absent_lanes_of_a_store_are_not_writes():
    # Each block stores an 8-lane window starting at its own 4 elements; the lanes past
    # the 4 that x holds per block are absent (x is shorter), so blocks do not overlap.
    short = tensor("x", "M")
    overhang = ir.Store(
        OUT,
        (ir.WindowIndex(base_plus(0), 8),),
        ir.Load(short, (ir.WindowIndex(base_plus(0), 8),), ir.TileT("f32", (8,), True)),
    )
    out = np.zeros(8, np.float32)
    run(
        racy_kernel(overhang, params=(short, OUT)),
        (1,),
        [np.ones(4, np.float32), out],
        race_check=True,
    )
    assert out.tolist() == [1.0] * 4 + [0.0] * 4


def test_the_race_check_is_quick():
    n, size = 100_000, 256
    x, out = tensor("x", "N"), tensor("out", "N")
    start = ir.Binary("mul", ir.CtxValue("block", "x", IDX), const(size), IDX)
    copy = ir.Store(
        out,
        (ir.WindowIndex(start, size),),
        ir.Load(x, (ir.WindowIndex(start, size),), ir.TileT("f32", (size,), True)),
    )
    data, result = np.random.default_rng(0).random(n, np.float32), np.zeros(n, np.float32)
    began = time.perf_counter()
    run(racy_kernel(copy, params=(x, out)), (-(-n // size),), [data, result], race_check=True)
    assert time.perf_counter() - began < 0.5
    assert np.array_equal(result, data)
