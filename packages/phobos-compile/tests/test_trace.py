"""trace(...): the Phobos spelling through parser, printer, checker and interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError, register_source
from phobos.compile.interp import run
from phobos.compile.ir import format_kernel
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import format_module, parse

TRACED = """\
kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * 4
    let t = x[base :+ 4]
    trace(base, t * 2.0, when=ctx.block.x >= 1)
    out[base :+ 4] = t
}
"""


def lowered(source: str, file: str = "k.ph") -> ir.Kernel:
    register_source(file, source)
    return lower(parse(source, file), "k", {})


def test_trace_prints_back_as_written():
    assert format_module(parse(TRACED, "k.ph")) == TRACED


def test_trace_lowers_to_a_trace_node_with_the_users_text():
    traces = [s for s in lowered(TRACED).body if isinstance(s, ir.Trace)]
    assert [t.name for t in traces] == ["base", "t * 2.0"]
    assert isinstance(traces[1].value.type, ir.TileT)
    assert all(t.when is not None and t.span.line == 4 for t in traces)
    assert "trace when " in format_kernel(lowered(TRACED))


def test_the_interpreter_prints_file_line_block_name_and_value(capsys):
    x, out = np.arange(10, dtype=np.float32), np.zeros(10, np.float32)
    run(lowered(TRACED), (3,), [x, out])
    assert capsys.readouterr().out.splitlines() == [
        "k.ph:4: block (1, 0, 0): base = 4",
        "k.ph:4: block (1, 0, 0): t * 2.0 = [ 8. 10. 12. 14.]",
        "k.ph:4: block (2, 0, 0): base = 8",
        "k.ph:4: block (2, 0, 0): t * 2.0 = [16.0 18.0 _ _]",
    ]
    np.testing.assert_array_equal(out, x)


def test_without_when_every_block_prints_and_2d_tiles_line_up(capsys):
    source = """\
kernel k(x: tensor<i32>[M, N]) {
    trace(x[ctx.block.x * 2 :+ 2, 0 :+ 2])
}
"""
    run(lowered(source), (2,), [np.arange(8, dtype=np.int32).reshape(4, 2)])
    head = "k.ph:2: block (0, 0, 0): x[ctx.block.x * 2 :+ 2, 0 :+ 2] = "
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == [head + "[[0 1]", " " * len(head) + " [2 3]]"]
    assert lines[2].startswith("k.ph:2: block (1, 0, 0): ")


@pytest.mark.parametrize(
    "call, message",
    [
        ("trace()", "trace needs at least one value"),
        ("trace(x[0], block=0)", "trace has no argument 'block'"),
        ("trace(x[0], when=1)", "the condition of `trace(when=...)` must be bool"),
        ('trace("hello")', "a string stands only as an assert's message"),
    ],
)
def test_trace_mistakes_are_errors_at_their_place(call, message):
    source = f"kernel k(x: tensor<f32>[N]) {{\n    {call}\n}}\n"
    with pytest.raises(PhobosError) as info:
        lowered(source)
    assert info.value.span.line == 2
    assert message in info.value.message
