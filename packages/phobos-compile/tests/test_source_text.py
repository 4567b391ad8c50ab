""".ph source text: UTF-8 bytes with a located error otherwise, and Python's identifiers
(Unicode XID_Start/XID_Continue, NFKC-normalised) as names."""

from __future__ import annotations

import unicodedata

import pytest

from phobos.compile import pipeline
from phobos.compile.check import lower
from phobos.compile.cli import main
from phobos.compile.diagnostics import PhobosError
from phobos.compile.syntax import format_module, parse
from phobos.compile.syntax.encoding import decode_ph
from phobos.compile.syntax.lexer import tokenize

GOOD = "kernel k(x: tensor<f32>[N]) {\n    let t = x[0 :+ 4]\n    x[0 :+ 4] = t + 1.0\n}\n"


def decode_error(data: bytes) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        decode_ph(data, "bad.ph")
    return caught.value


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        (b"\xff", "0xff (invalid start byte)"),
        (b"\xc3\x28", "0xc3 (invalid continuation byte)"),
        (b"\xed\xa0\x80", "0xed (invalid continuation byte)"),  # a UTF-16 surrogate
        (b"\xc0\xaf", "0xc0 (invalid start byte)"),  # overlong
        (b"\xf4\x90\x80\x80", "0xf4 (invalid continuation byte)"),  # past U+10FFFF
    ],
)
def test_bytes_that_are_not_utf8_are_an_error_at_their_place(bad, shown):
    data = GOOD.encode().replace(b"let t", b"let \xc3\xa7" + bad + b"t")
    err = decode_error(data)
    assert (err.span.file, err.span.line, err.span.col) == ("bad.ph", 2, 10)
    assert err.message == f"the file is not valid UTF-8: {shown}"
    assert "save it as UTF-8" in err.diagnostics[0].help
    assert "let ç" in str(err)  # the line, as far as it decodes


def test_an_error_at_the_end_of_the_file():
    err = decode_error(GOOD.encode() + b"// \xe2\x82")
    assert (err.span.line, err.span.col) == (5, 4)
    assert err.message == "the file is not valid UTF-8: 0xe2 0x82 (unexpected end of data)"


def test_a_byte_order_mark_is_not_a_column():
    err = decode_error(b"\xef\xbb\xbf" + b"kernel \xff")
    assert (err.span.line, err.span.col) == (1, 8)


def test_files_are_read_as_utf8_with_a_byte_order_mark_allowed(tmp_path):
    path = tmp_path / "bom.ph"
    path.write_bytes(
        b"\xef\xbb\xbf" + GOOD.replace("let t", "let ñ").replace("= t", "= ñ").encode()
    )
    module = pipeline.parse_file(path)
    assert module.kernels[0].body.body[0].name == "ñ"
    path.write_bytes(b"\xff" + GOOD.encode())
    with pytest.raises(PhobosError) as caught:
        pipeline.parse_file(path)
    assert caught.value.span.file == str(path)


def test_the_command_line_prints_the_error(tmp_path, capsys):
    path = tmp_path / "bad.ph"
    path.write_bytes(GOOD.encode().replace(b"+ 1.0", b"+ \x80"))
    assert main([str(path), "--emit", "ir"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:3:21: error: the file is not valid UTF-8: 0x80")
    assert "Traceback" not in err


# ------------------------------------------------------------------ names


@pytest.mark.parametrize("name", ["façade", "Δt", "変数", "_x1", "ñ", "a·b", "ǅ", "Ω"])
def test_pythons_identifiers_are_names(name):
    assert name.isidentifier()
    module = parse(GOOD.replace("let t", f"let {name}").replace("= t", f"= {name}"), "n.ph")
    lower(module, "k", {})
    assert parse(format_module(module), "again.ph") == module


@pytest.mark.parametrize(
    ("written", "normal"),
    [
        ("ﬁle", "file"),  # a ligature
        ("𝐲", "y"),  # mathematical bold
        ("Ω", "Ω"),  # the ohm sign is omega
        ("fac\u0327ade", "façade"),  # c and a combining cedilla
        ("ª", "a"),
    ],
)
def test_names_are_normalised_to_nfkc_as_python_does(written, normal):
    assert unicodedata.normalize("NFKC", written) == normal
    text = GOOD.replace("let t", f"let {written}").replace("= t", f"= {normal}")
    module = parse(text, "n.ph")
    lower(module, "k", {})  # one name, two spellings
    assert f"let {normal} =" in format_module(module)
    # Python agrees
    namespace: dict = {}
    exec(f"{written} = 1", namespace)
    assert namespace[normal] == 1


def test_a_spans_columns_are_the_source_characters():
    tokens, _ = tokenize("let ﬁle = 𝐱\n", "n.ph")
    name, value = tokens[1], tokens[3]
    assert (name.text, name.col, name.end_col) == ("file", 5, 8)  # ﬁ is one character
    assert (value.text, value.col, value.end_col) == ("x", 11, 12)


def test_a_name_that_normalises_to_a_keyword_is_an_error():
    with pytest.raises(PhobosError) as caught:
        parse(GOOD.replace("let t", "let 𝐥𝐞𝐭"), "n.ph")
    err = caught.value
    assert (
        err.message
        == "`𝐥𝐞𝐭` is the keyword `let` once normalised (NFKC), so it cannot name a value"
    )
    assert (err.span.line, err.span.col) == (2, 9)


@pytest.mark.parametrize("char", ["²", "€", "\u00a0", "\u2028", "\ufeff"])
def test_other_characters_are_an_error_that_names_them(char):
    with pytest.raises(PhobosError) as caught:
        parse(GOOD.replace("let t", f"let t{char}"), "n.ph")
    assert caught.value.message == f"unexpected character {char!r} (U+{ord(char):04X})"
    assert (caught.value.span.line, caught.value.span.col) == (2, 10)
