"""trace and assert in the Python spelling, through phobos.lang and the interpreter."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from phobos.compile.diagnostics import PhobosError
from phobos.compile.interp.debugging import DeviceAssertError

KERNELS = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def checked(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 4
    t: ph.let = x[base:+4]
    ph.trace(ph.sum(t, axis=0), when=ph.ctx.block.x == 0)
    assert t >= 0.0, "x must not be negative"
    assert ph.ctx.block.x < 8
    out[base:+4] = ph.sqrt(t)
"""
FORMATTED = """\
import phobos.lang as ph


@ph.kernel
def formatted(x: ph.tensor[ph.f32][4]):
    assert x[0] > 0.0, f"x[0] is {x[0]}"
"""


def load(path: Path, text: str):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return load(tmp_path_factory.mktemp("kernels") / "debugged.py", KERNELS)


def test_source_spells_trace_and_assert(module):
    source = module.checked.source
    assert "    trace(sum(t, axis=0), when=ctx.block.x == 0)\n" in source
    assert '    assert(t >= 0.0, "x must not be negative")\n' in source
    assert "    assert(ctx.block.x < 8)\n" in source


def test_trace_names_the_python_line_and_source_text(module, capsys):
    x = np.arange(8, dtype=np.float32)
    module.checked[(2,)](x, np.zeros(8, np.float32))
    path = module.__file__
    assert capsys.readouterr().out == f"{path}:10: block (0, 0, 0): ph.sum(t, axis=0) = 6.0\n"


def test_a_failed_assert_names_the_python_line_block_and_lane(module):
    x = np.arange(8, dtype=np.float32)
    x[5] = -2.0
    with pytest.raises(DeviceAssertError) as info:
        module.checked[(2,)](x, np.zeros(8, np.float32))
    assert info.value.span.file == module.__file__
    assert (info.value.span.line, info.value.span.col) == (11, 5)
    assert info.value.message == (
        "assertion failed in block (1, 0, 0) at lane 1 (1 of 4 lanes fail): x must not be negative"
    )


def test_a_scalar_assert_without_message_quotes_its_condition(module):
    x = np.ones(40, np.float32)
    with pytest.raises(DeviceAssertError) as info:
        module.checked[(10,)](x, np.zeros(40, np.float32))
    assert info.value.message == "assertion failed in block (8, 0, 0): ph.ctx.block.x < 8"
    assert info.value.span.line == 12


def test_an_assert_message_must_be_a_plain_string(tmp_path):
    formatted = load(tmp_path / "formatted.py", FORMATTED).formatted
    with pytest.raises(PhobosError) as info:
        formatted.source  # noqa: B018 (translating the module raises)
    assert (info.value.span.line, info.value.span.col) == (6, 24)
    assert "an assert's message must be a string literal" in info.value.message


def test_the_docs_examples_exist():
    root = Path(__file__).resolve().parents[1] / "docs" / "examples"
    assert (root / "trace.py").is_file() and (root / "device_assert.py").is_file()
