"""A Python module is read as Python reads it (PEP 263, a byte order mark, universal
newlines), its names are Python's, and one nested too deeply is a located error."""

from __future__ import annotations

import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.limits import MAX_NESTING, NESTING
from phobos.compile.syntax import parse
from phobos.frontend import translate_file, translate_source
from phobos.frontend.translate import decode_python

SAXPY = """\
import phobos.lang as ph


@ph.kernel
def saxpy(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    # a comment: déjà vu
    base: ph.let = ph.ctx.block.x * 4
    out[base:+4] = alpha * x[base:+4]
"""


def write(tmp_path, data: bytes, name: str = "kernels.py"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def translated(tmp_path, data: bytes):
    program = translate_file(write(tmp_path, data))
    lower(program.module, program.module.kernels[0].name, {})
    return program


def error_of(tmp_path, data: bytes) -> PhobosError:
    path = write(tmp_path, data)
    with pytest.raises(PhobosError) as caught:
        translate_file(path)
    assert caught.value.span.file == str(path)
    return caught.value


def test_a_pep_263_coding_line_names_the_encoding(tmp_path):
    text = "# -*- coding: latin-1 -*-\n" + SAXPY.replace("base", "bâse")
    program = translated(tmp_path, text.encode("latin-1"))
    assert "let bâse = ctx.block.x * 4" in program.text
    assert parse(program.text, "source.ph") == program.module


def test_a_byte_order_mark_is_read_as_python_reads_it(tmp_path):
    program = translated(tmp_path, b"\xef\xbb\xbf" + SAXPY.encode())
    saxpy = program.module.kernels[0]
    assert saxpy.span.line == 5 and saxpy.span.col == 1  # the def, after its decorator


def test_line_ends_are_python_universal_newlines(tmp_path):
    for end in (b"\r\n", b"\r"):
        program = translated(tmp_path, SAXPY.encode().replace(b"\n", end))
        assert program.module.kernels[0].body.body[0].span.line == 7


def test_characters_that_split_lines_for_str_splitlines_do_not_for_python(tmp_path):
    text = SAXPY.replace("déjà vu", "déjà\x0cvu\u2028again")
    program = translated(tmp_path, text.encode())
    store = program.module.kernels[0].body.body[1]
    assert (store.span.line, store.span.col) == (8, 5)


def test_bytes_not_in_the_encoding_are_an_error_at_their_place(tmp_path):
    err = error_of(tmp_path, SAXPY.encode().replace(b"alpha * x", b"alpha \xff x"))
    assert (err.span.line, err.span.col) == (8, 26)
    assert err.message == "the file is not valid UTF-8: 0xff (invalid start byte)"
    assert "coding line" in err.diagnostics[0].help
    err = error_of(tmp_path, b"# vim: set fileencoding=ascii :\n" + SAXPY.encode())
    assert err.span.line == 7 and err.message.startswith("the file is not valid ascii: 0xc3")


def test_an_unknown_encoding_is_an_error_at_the_coding_line(tmp_path):
    err = error_of(tmp_path, b"#!/usr/bin/env python\n# coding: klingon\n" + SAXPY.encode())
    assert (err.span.line, err.span.col) == (2, 11)
    assert err.message == "the coding line names an encoding Python does not know: 'klingon'"


def test_a_coding_line_that_contradicts_the_byte_order_mark(tmp_path):
    err = error_of(tmp_path, b"\xef\xbb\xbf# coding: latin-1\n" + SAXPY.encode())
    assert (err.span.line, err.span.col) == (1, 11)
    assert "byte order mark" in err.message


def test_a_nul_is_an_error_at_its_place(tmp_path):
    err = error_of(tmp_path, SAXPY.encode().replace(b"* 4\n", b"* 4\x00\n"))
    assert (err.span.line, err.span.col) == (7, 38)


def test_decode_python_is_pythons_reading():
    import importlib.util

    for data in (
        b"# -*- coding: cp1252 -*-\nx = '\x80'\n",
        b"\xef\xbb\xbfx = 1\r\ny = 2\rz = 3\n",
        "x = 'ñ'\n".encode(),
    ):
        assert decode_python(data, "m.py") == importlib.util.decode_source(data)


# ------------------------------------------------------------------ names


def test_names_beyond_ascii_work_end_to_end(tmp_path):
    text = SAXPY.replace("saxpy", "façade").replace("base", "ﬁrst").replace("alpha", "α")
    program = translated(tmp_path, text.encode())
    source = program.kernel_source("façade")
    assert "kernel façade(" in source and "let first = " in source  # NFKC, as Python reads it
    assert parse(source, "source.ph") == program.for_kernel("façade").module


def test_a_python_name_that_normalises_to_a_phobos_keyword(tmp_path):
    err = error_of(tmp_path, SAXPY.replace("base", "𝐥𝐞𝐭").encode())
    assert err.message == "`let` is a Phobos keyword and cannot name a value"


# ------------------------------------------------------------------ nesting


def kernel_with(expr: str) -> str:
    return SAXPY.replace("alpha * x[base:+4]", expr)


@pytest.mark.parametrize(
    "expr",
    [
        " + ".join(["alpha"] * 495),  # CPython imports this
        "-" * 490 + "alpha",
        "ph.exp(" * 150 + "alpha" + ")" * 150,
        " and ".join(["alpha > 0"] * 150),  # flat in Python, 150 levels in Phobos
    ],
)
def test_an_expression_nested_too_deeply_is_an_error_at_its_line(tmp_path, expr):
    compile(kernel_with(expr), "m.py", "exec")  # valid Python
    err = error_of(tmp_path, kernel_with(expr).encode())
    assert err.span.line == 8
    assert "nested too deeply" in err.message and f"the limit is {MAX_NESTING}" in err.message
    assert err.diagnostics[0].limit == NESTING
    assert "`x: ph.let = ...`" in err.diagnostics[0].help


def test_an_expression_under_the_limit_translates(tmp_path):
    translated(tmp_path, kernel_with(" + ".join(["alpha * x[base:+4]"] * 30)).encode())


def test_blocks_nested_too_deeply(tmp_path):
    # CPython allows 100 levels of indentation; an elif chain nests without indenting.
    store = "        out[base:+4] = x[base:+4]\n"
    body = "    if alpha > 0.0:\n" + store
    body += "".join(f"    elif alpha > {i}.0:\n" + store for i in range(120))
    text = SAXPY.replace("    out[base:+4] = alpha * x[base:+4]\n", body)
    err = error_of(tmp_path, text.encode())
    assert err.message.startswith("blocks nested too deeply (this one is at level 101)")
    assert err.span.line == 8 + 2 * 99


def test_host_code_is_never_counted():
    host = "def host():\n    return " + " + ".join(["1"] * 400) + "\n"
    translate_source(SAXPY + host, "m.py")


def test_python_s_own_limit_is_a_located_error():
    with pytest.raises(PhobosError) as caught:
        translate_source(kernel_with("(" * 300 + "alpha" + ")" * 300), "m.py")
    assert caught.value.span.file == "m.py" and caught.value.span.line >= 1
