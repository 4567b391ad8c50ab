"""The static race check: no warning where blocks' footprints are provably apart, one where not."""

from __future__ import annotations

from pathlib import Path

import pytest

from phobos.compile.check import lower
from phobos.compile.cli import main
from phobos.compile.diagnostics import register_source
from phobos.compile.pipeline import variant_values
from phobos.compile.races import check_races
from phobos.compile.syntax import parse

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def warnings_of(source: str, file: str = "k.ph"):
    register_source(file, source)
    module = parse(source, file)
    name = module.kernels[0].name
    values = variant_values(module, [name], {})[name]
    return check_races(lower(module, name, values))


CLEAN = {
    "saxpy": """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
""",
    "in place": """\
kernel double(x: tensor<f32>[N]) {
    let base = ctx.block.x * 128
    x[base :+ 128] = x[base :+ 128] * 2.0
}
""",
    "softmax rows": """\
kernel softmax(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x
    let t = x[row, 0 :+ 1024]
    let e = exp(t - max(t, axis=0))
    out[row, 0 :+ 1024] = e / sum(e, axis=0)
}
""",
    "row loop": """\
kernel scale_rows(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    for c in 0 .. N step 256 {
        out[ctx.block.x, c :+ 256] = x[ctx.block.x, c :+ 256] * 3.0
    }
}
""",
    "matmul tiles": """\
kernel mm(a: tensor<f32>[M, K], b: tensor<f32>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.x * 32
    let n = ctx.block.y * 32
    var acc = zeros<f32>[32, 32]
    for k in 0 .. K step 16 {
        acc = dot(a[m :+ 32, k :+ 16], b[k :+ 16, n :+ 32], acc)
    }
    c[m :+ 32, n :+ 32] = acc
}
""",
    "a block's chunks in a loop": """\
kernel chunks(out: tensor<f32>[N]) {
    let base = ctx.block.x * 64
    for i in 0 .. 4 {
        out[base + i * 16 :+ 16] = zeros<f32>[16]
    }
}
""",
    "guarded by the block": """\
kernel total(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * 8
    out[base :+ 8] = x[base :+ 8]
    if ctx.block.x == 0 {
        out[0] = 1.0
    }
}
""",
    "grid-stride loop": """\
kernel gs(x: tensor<f32>[N], out: tensor<f32>[N]) {
    for i in ctx.block.x * 128 .. N step ctx.grid.x * 128 {
        out[i :+ 128] = x[i :+ 128] * 2.0
    }
}
""",
    "a let var that is never reassigned": """\
kernel k(out: tensor<f32>[N]) {
    var base = ctx.block.x * 4 + 0
    out[base :+ 4] = zeros<f32>[4]
}
""",
}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_no_warning_where_blocks_are_apart(name):
    assert warnings_of(CLEAN[name]) == []


# matmul.ph's grouped block order (ctx.block.x / group and % group) is proved by races.orders.
@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.ph")), ids=lambda p: p.name)
def test_examples_are_proved_race_free(path):
    assert warnings_of(path.read_text(), str(path)) == []


def test_overlapping_windows_are_a_race_between_neighbours():
    (warning,) = warnings_of(
        """\
kernel smear(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * 4
    out[base :+ 8] = x[base :+ 8] * 2.0
}
"""
    )
    assert warning.severity == "warning"
    assert (warning.span.line, warning.span.col) == (3, 5)
    assert warning.message == (
        "blocks next to each other along x write overlapping elements of 'out': "
        "the window starts 4 elements further in each block but is 8 long"
    )
    assert "ctx.block.x * 8" in warning.help


def test_a_store_independent_of_the_block_races_with_more_than_one_block():
    (warning,) = warnings_of(
        """\
kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let s = sum(x[ctx.block.x * 64 :+ 64], axis=0)
    out[0] = s
}
"""
    )
    assert warning.span.line == 3
    assert "every block that runs this store writes the same elements of 'out'" in warning.message
    assert "more than one block" in warning.message


def test_reading_a_neighbours_output_is_reported_with_the_load():
    (warning,) = warnings_of(
        """\
kernel shift(x: tensor<f32>[N]) {
    let b = ctx.block.x * 8
    x[b :+ 8] = x[b + 1 :+ 8]
}
"""
    )
    assert warning.span.line == 3
    assert "not read by another block" in warning.message
    (note,) = warning.notes
    assert (note.span.line, note.span.col) == (3, 17)
    assert "race_check=True" in warning.help


def test_a_second_axis_the_store_ignores_is_a_race():
    (warning,) = warnings_of(
        """\
kernel k(x: tensor<f32>[M, N], out: tensor<f32>[N]) {
    let row = x[ctx.block.y, ctx.block.x * 16 :+ 16]
    out[ctx.block.x * 16 :+ 16] = row
}
"""
    )
    assert warning.span.line == 3
    assert warning.message.startswith("cannot prove that blocks write disjoint elements")


def test_a_loop_of_unknown_length_inside_a_blocks_stride_is_not_proved():
    (warning,) = warnings_of(
        """\
kernel k(out: tensor<f32>[N]) {
    for i in 0 .. N step 16 {
        out[ctx.block.x * 16 + i :+ 16] = zeros<f32>[16]
    }
}
"""
    )
    assert warning.span.line == 3


def test_a_grid_stride_loop_whose_stride_is_shorter_than_its_window_is_not_proved():
    (warning,) = warnings_of(
        """\
kernel gs(out: tensor<f32>[N]) {
    for i in ctx.block.x * 128 .. N step ctx.grid.x * 64 {
        out[i :+ 128] = zeros<f32>[128]
    }
}
"""
    )
    assert warning.span.line == 3
    assert warning.message == "cannot prove that blocks write disjoint elements of 'out'"


def test_a_store_meeting_an_atomic_update_is_reported_but_atomics_alone_are_not():
    atomics_only = """\
kernel k(x: tensor<f32>[N], total: tensor<f32>[1]) {
    atomic_add(total[0], sum(x[ctx.block.x * 64 :+ 64], axis=0))
}
"""
    assert warnings_of(atomics_only) == []
    (warning,) = warnings_of(
        """\
kernel k(x: tensor<f32>[N], total: tensor<f32>[N]) {
    let base = ctx.block.x * 64
    total[base :+ 64] = x[base :+ 64]
    atomic_add(total[0], 1.0)
}
"""
    )
    assert warning.span.line == 3
    assert "updated by another block" in warning.message
    assert warning.notes[0].span.line == 4


def test_the_cli_prints_warnings_and_succeeds(tmp_path, capsys):
    path = tmp_path / "smear.ph"
    path.write_text(
        "kernel smear(out: tensor<f32>[N]) {\n    out[ctx.block.x * 4 :+ 8] = zeros<f32>[8]\n}\n"
    )
    assert main([str(path), "--emit", "ir"]) == 0
    err = capsys.readouterr().err
    assert f"{path}:2:5: warning: blocks next to each other along x" in err
    assert "        out[ctx.block.x * 4 :+ 8] = zeros<f32>[8]\n        ^^^^" in err
