"""Spans name absolute lines and 1-based columns of the Python file."""

from __future__ import annotations

from pathlib import Path

import pytest

from phobos.compile.diagnostics import PhobosError
from phobos.frontend import translate_file, translate_source

KERNEL = """\
@ph.kernel
def scale(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    i: ph.let = ph.ctx.block.x * 128
    for k in range(0, 4):
        out[i:+128] = ph.exp(x[i:+128]) * 2.0
"""


def module_with_kernel_at_line_40() -> str:
    host = "import phobos.lang as ph\n" + "".join(f"HOST_{n} = {n}\n" for n in range(38))
    assert host.count("\n") == 39
    return host + KERNEL


def test_spans_point_at_absolute_file_lines() -> None:
    program = translate_source(module_with_kernel_at_line_40(), "/src/ops.py")
    kernel = program.module.kernel("scale")
    assert str(kernel.span) == "/src/ops.py:41:1"
    assert str(kernel.params[1].span) == "/src/ops.py:41:36"
    assert str(kernel.params[1].type.span) == "/src/ops.py:41:41"
    let, loop = kernel.body.body
    assert str(let.span) == "/src/ops.py:42:5"
    assert (let.span.end_line, let.span.end_col) == (42, 37)
    assert str(let.value.left.span) == "/src/ops.py:42:17"
    (store,) = loop.body.body
    assert str(loop.span) == "/src/ops.py:43:5"
    assert (loop.span.end_line, loop.span.end_col) == (44, 46)
    assert str(store.span) == "/src/ops.py:44:9"
    call = store.value.left
    assert str(call.span) == "/src/ops.py:44:23"
    window = call.args[0].items[0]
    assert (window.span.line, window.span.col, window.span.end_col) == (44, 32, 38)


def test_an_error_deep_in_a_file_names_its_line() -> None:
    source = module_with_kernel_at_line_40().replace("ph.exp(x[i:+128])", "ph.exp(x[i:128])")
    with pytest.raises(PhobosError) as caught:
        translate_source(source, "/src/ops.py")
    assert str(caught.value.span) == "/src/ops.py:44:32"


def test_columns_count_characters_not_utf8_bytes() -> None:
    source = "import phobos.lang as ph\n\n@ph.kernel\ndef k(x: ph.tensor[ph.f32][N]):\n"
    source += "    x[0] = 1.0  # é\n    ä: ph.let = [1]\n"
    with pytest.raises(PhobosError) as caught:
        translate_source(source, "/src/u.py")
    assert str(caught.value.span) == "/src/u.py:6:17"


def test_translate_file_uses_the_absolute_path_and_caches_until_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ops.py"
    path.write_text(module_with_kernel_at_line_40())
    monkeypatch.chdir(tmp_path)
    first = translate_file("ops.py")
    assert first.filename == str(path)
    assert str(first.module.kernel("scale").span) == f"{path}:41:1"
    assert translate_file(path) is first
    path.write_text(module_with_kernel_at_line_40().replace("scale", "scaled"))
    assert [k.name for k in translate_file(path).module.kernels] == ["scaled"]
