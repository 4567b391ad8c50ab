"""The lexer: tokens, numbers, line breaks, comments and bracket errors."""

from __future__ import annotations

import pytest

from phobos.compile.diagnostics import PhobosError
from phobos.compile.syntax.lexer import tokenize


def kinds(text: str) -> list[str]:
    return [t.kind for t in tokenize(text, "t.ph")[0]]


def texts(text: str) -> list[str]:
    return [t.text for t in tokenize(text, "t.ph")[0] if t.kind not in ("newline", "eof")]


def number(text: str) -> tuple[str, int | float, str | None]:
    tok = tokenize(text, "t.ph")[0][0]
    return tok.kind, tok.value, tok.suffix


def test_keywords_names_and_punctuation() -> None:
    assert kinds("let x = ctx.block.x") == [
        "let", "name", "=", "name", ".", "name", ".", "name", "newline", "eof",
    ]  # fmt: skip
    assert texts("a<<=b>>=c..d->e&&f||g==h!=i<=j>=k<<l>>m") == [
        "a", "<<=", "b", ">>=", "c", "..", "d", "->", "e", "&&", "f", "||", "g", "==", "h",
        "!=", "i", "<=", "j", ">=", "k", "<<", "l", ">>", "m",
    ]  # fmt: skip
    assert kinds("step in")[:2] == ["name", "in"]  # `step` is special only in a loop header


def test_window_is_one_token_only_without_a_space() -> None:
    assert texts("t[a:+L]") == ["t", "[", "a", ":+", "L", "]"]
    assert texts("t[a : + L]") == ["t", "[", "a", ":", "+", "L", "]"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", ("int", 42, None)),
        ("1_000_000", ("int", 1000000, None)),
        ("0x1F", ("int", 31, None)),
        ("0xff_ffu32", ("int", 0xFFFF, "u32")),
        ("7i64", ("int", 7, "i64")),
        ("1.5", ("float", 1.5, None)),
        ("2.", ("float", 2.0, None)),
        ("1e-6", ("float", 1e-6, None)),
        ("1E+3", ("float", 1000.0, None)),
        ("2.5f16", ("float", 2.5, "f16")),
        ("1.0bf16", ("float", 1.0, "bf16")),
        ("1e-06f32", ("float", 1e-6, "f32")),
    ],
)
def test_numbers(text: str, expected: tuple[str, int | float, str | None]) -> None:
    assert number(text) == expected


def test_range_dots_do_not_make_a_float() -> None:
    assert texts("0..K") == ["0", "..", "K"]
    assert number("0..K") == ("int", 0, None)


def test_line_breaks_end_statements_only_outside_parentheses_and_brackets() -> None:
    assert kinds("f(a,\n  b)\n\n\nx") == [
        "name", "(", "name", ",", "name", ")", "newline", "name", "newline", "eof",
    ]  # fmt: skip
    assert kinds("t[a,\n b]") == ["name", "[", "name", ",", "name", "]", "newline", "eof"]
    assert kinds("{\n}") == ["{", "newline", "}", "newline", "eof"]


def test_comments_are_set_aside_with_positions() -> None:
    tokens, comments = tokenize("x = 1 // one  \n//two\n    //\n", "t.ph")
    assert [t.text for t in tokens if t.kind != "newline"] == ["x", "=", "1", ""]
    assert [(c.line, c.col, c.text) for c in comments] == [(1, 7, "one"), (2, 1, "two"), (3, 5, "")]


def test_a_byte_order_mark_is_skipped() -> None:
    tokens, _ = tokenize("\ufeffconst", "t.ph")
    assert (tokens[0].kind, tokens[0].line, tokens[0].col) == ("const", 1, 1)


def test_positions_count_from_one() -> None:
    tokens, _ = tokenize("let x\n  = 10", "t.ph")
    assert [(t.text, t.line, t.col, t.end_col) for t in tokens[:4]] == [
        ("let", 1, 1, 4),
        ("x", 1, 5, 6),
        ("\n", 1, 6, 7),
        ("=", 2, 3, 4),
    ]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("x = 12abc", "t.ph:1:5", "invalid number `12abc`"),
        ("x = 1__0", "t.ph:1:5", "invalid number"),
        ("x = 1e999", "t.ph:1:5", "too large"),
        ("x = 1;", "t.ph:1:6", "unexpected `;`"),
        ("x = $", "t.ph:1:5", "unexpected character '$'"),
        ("kernel k() {\n  x = (1\n", "t.ph:2:7", "unclosed `(`"),
        ("kernel k() {\n  x = 1\n", "t.ph:1:12", "unclosed `{`"),
        ("f(a]", "t.ph:1:4", "`]` does not close `(`"),
        ("\n}", "t.ph:2:1", "`}` closes nothing"),
    ],
)
def test_errors_name_the_exact_position(text: str, where: str, message: str) -> None:
    with pytest.raises(PhobosError) as info:
        tokenize(text, "t.ph")
    assert str(info.value.span) == where
    assert message in info.value.message
    assert info.value.diagnostics[0].help
