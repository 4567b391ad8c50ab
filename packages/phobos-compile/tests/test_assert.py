"""assert(c, "message"): the Phobos spelling through lexer, checker and interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError, register_source
from phobos.compile.interp import run
from phobos.compile.interp.debugging import DeviceAssertError
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import format_module, parse

CHECKED = """\
kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let t = x[ctx.block.x * 4 :+ 4]
    assert(t >= 0.0, "x must not be negative")
    assert(ctx.block.x < 3)
    out[ctx.block.x * 4 :+ 4] = sqrt(t)
}
"""


def lowered(source: str, file: str = "k.ph") -> ir.Kernel:
    register_source(file, source)
    return lower(parse(source, file), "k", {})


def test_assert_prints_back_as_written():
    assert format_module(parse(CHECKED, "k.ph")) == CHECKED


def test_assert_lowers_with_its_message_or_its_condition_text():
    asserts = [s for s in lowered(CHECKED).body if isinstance(s, ir.DeviceAssert)]
    assert [a.message for a in asserts] == ["x must not be negative", "ctx.block.x < 3"]
    assert isinstance(asserts[0].cond.type, ir.TileT)


def test_a_holding_assert_changes_nothing():
    x, out = np.arange(12, dtype=np.float32), np.zeros(12, np.float32)
    run(lowered(CHECKED), (3,), [x, out])
    np.testing.assert_allclose(out, np.sqrt(x))


def test_a_failing_tile_assert_names_the_block_and_lane():
    x = np.arange(10, dtype=np.float32)
    x[6] = -1.0
    with pytest.raises(DeviceAssertError) as info:
        run(lowered(CHECKED), (3,), [x, np.zeros(10, np.float32)])
    assert str(info.value).startswith(
        "k.ph:3:5: error: assertion failed in block (1, 0, 0) at lane 2 (1 of 4 lanes fail): "
        "x must not be negative\n"
        '        assert(t >= 0.0, "x must not be negative")\n'
        "        ^^^^"
    )


def test_absent_lanes_are_not_checked():
    x = np.arange(10, dtype=np.float32)  # block 2's window hangs over the end
    run(lowered(CHECKED), (3,), [x, np.zeros(10, np.float32)])


def test_a_failing_scalar_assert_names_the_block():
    x = np.arange(16, dtype=np.float32)
    with pytest.raises(DeviceAssertError) as info:
        run(lowered(CHECKED), (4,), [x, np.zeros(16, np.float32)])
    assert info.value.message == "assertion failed in block (3, 0, 0): ctx.block.x < 3"
    assert info.value.span.line == 4


@pytest.mark.parametrize(
    "call, message",
    [
        ("assert(x[0])", "an assert's condition must be bool, got f32"),
        ("assert(x[0] > 0.0, 3)", "an assert's message must be a string literal"),
        ('assert(x[0] > 0.0, "a", "b")', "assert takes a condition and, optionally, a message"),
        ('let s = "text"', "a string stands only as an assert's message"),
    ],
)
def test_assert_mistakes_are_errors_at_their_place(call, message):
    source = f"kernel k(x: tensor<f32>[N]) {{\n    {call}\n}}\n"
    with pytest.raises(PhobosError) as info:
        lowered(source)
    assert info.value.span.line == 2
    assert message in info.value.message


@pytest.mark.parametrize(
    "text, message",
    [('let s = "never closed\n', "unclosed string"), ("let s = 'x'\n", "double quotes")],
)
def test_strings_are_double_quoted_on_one_line(text, message):
    with pytest.raises(PhobosError) as info:
        parse(f"kernel k() {{\n    {text}}}\n", "k.ph")
    assert message in info.value.message
