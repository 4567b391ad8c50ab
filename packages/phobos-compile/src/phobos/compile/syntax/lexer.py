"""Phobos text → tokens, with comments set aside as trivia.

Statements end at a line break, so the lexer emits a ``newline`` token for each
run of line breaks outside ``( )`` and ``[ ]``; inside them a line break is only
space, which lets a long expression or parameter list continue on the next line.

Comments never enter the token stream: they are returned beside it with their
positions, and the parser hands them out as ``leading``/``trailing`` trivia.

The lexer also pairs brackets, so an unclosed ``{`` or a ``)`` that closes a
``[`` is reported at the bracket itself rather than wherever parsing gives up.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

from phobos.compile.diagnostics import Note, error
from phobos.compile.span import Span
from phobos.compile.syntax.ast import SCALAR_TYPES

# Words that cannot name a value. ``step`` is not among them: it is special only
# after a loop's upper bound.  ``ctx`` and ``newaxis`` are reserved too, because
# they spell the block context and a new subscript axis.
KEYWORDS = frozenset(
    {
        "const",
        "fn",
        "kernel",
        "let",
        "var",
        "for",
        "in",
        "if",
        "else",
        "while",
        "return",
        "true",
        "false",
    }
)
RESERVED_NAMES = frozenset({"ctx", "newaxis"})

_DIGITS = r"[0-9](?:_?[0-9])*"
_TOKEN = re.compile(
    rf"""
    (?P<space>[ \t\r\f\v]+)
  | (?P<comment>//[^\n]*)
  | (?P<newline>\n)
  | (?P<number>
        (?: (?P<hex>0[xX](?:_?[0-9a-fA-F])+)
          | {_DIGITS} (?P<frac>\.(?!\.)(?:{_DIGITS})?)? (?P<exp>[eE][+-]?{_DIGITS})?
        )
        (?P<suffix>\w+)?
    )
  | (?P<string>"[^"\n]*")
  | (?P<name>[A-Za-z_]\w*)
  | (?P<punct>
        <<= | >>= | \.\. | :\+ | -> | && | \|\| | == | != | <= | >= | << | >>
      | [-+*/%&|^]= | [-+*/%&|^~!<>=()\[\]{{}},:.@]
    )
    """,
    re.VERBOSE | re.ASCII,
)
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")": "(", "]": "[", "}": "{"}


@dataclass(frozen=True, slots=True)
class Token:
    """One token.  ``kind`` is "name", "int", "float", "newline", "eof", or the
    text itself for keywords and punctuation.  Numbers carry ``value`` and ``suffix``."""

    kind: str
    text: str
    line: int
    col: int
    value: int | float | None = None
    suffix: str | None = None
    # Characters in the source when they differ from ``text`` (a name normalised to NFKC).
    width: int | None = None

    @property
    def end_col(self) -> int:
        return self.col + (len(self.text) if self.width is None else self.width)


@dataclass(frozen=True, slots=True)
class Comment:
    """``// text`` at ``line:col``; ``text`` drops the marker, its first space and trailing blanks."""

    line: int
    col: int
    text: str


def tokenize(text: str, file: str) -> tuple[list[Token], list[Comment]]:
    """Split ``text`` into tokens (ending with a newline and an eof token) and comments."""
    tokens: list[Token] = []
    comments: list[Comment] = []
    open_brackets: list[Token] = []
    nesting = 0  # open ( and [: line breaks inside them are space
    line, line_start, pos, size = 1, 0, 0, len(text)
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark is not part of line 1
        line_start = pos = 1
    match_token = _TOKEN.match
    while pos < size:
        m = match_token(text, pos)
        col = pos - line_start + 1
        if m is None or (m.lastgroup == "name" and m.end() < size and not text[m.end()].isascii()):
            # A name with characters beyond ASCII (Python's identifiers), or no token at all.
            end = _identifier_end(text, pos)
            if end == pos:
                raise _unexpected_character(text, pos, line, col, file)
            tokens.append(_name(text[pos:end], line, col, file))
            pos = end
            continue
        kind = m.lastgroup
        pos = m.end()
        if kind == "space":
            continue
        if kind == "newline":
            if nesting == 0 and tokens and tokens[-1].kind != "newline":
                tokens.append(Token("newline", "\n", line, col))
            line += 1
            line_start = pos
        elif kind == "comment":
            body = m.group()[2:].rstrip()
            comments.append(Comment(line, col, body[1:] if body.startswith(" ") else body))
        elif kind == "name":
            word = m.group()
            tokens.append(Token(word if word in KEYWORDS else "name", word, line, col))
        elif kind == "number":
            tokens.append(_number(m, line, col, file))
        elif kind == "string":
            tokens.append(Token("string", m.group(), line, col))
        else:
            tok = Token(m.group(), m.group(), line, col)
            if tok.kind in _OPENERS:
                open_brackets.append(tok)
                nesting += tok.kind != "{"
            elif tok.kind in _CLOSERS:
                _close(open_brackets, tok, file)
                nesting -= tok.kind != "}"
            tokens.append(tok)
    if open_brackets:
        opener = open_brackets[-1]
        raise error(
            _token_span(opener, file),
            f"unclosed `{opener.kind}`",
            help=f"add the matching `{_OPENERS[opener.kind]}`",
        )
    end_line, end_col = _end_position(text)
    if tokens and tokens[-1].kind != "newline":
        tokens.append(Token("newline", "", end_line, end_col))
    tokens.append(Token("eof", "", end_line, end_col))
    return tokens, comments


def _identifier_end(text: str, pos: int) -> int:
    """Where the identifier starting at ``pos`` ends, by Python's rules (``pos``: none starts).

    An identifier is a character of Unicode's XID_Start (or ``_``) and then characters of
    XID_Continue: exactly what ``str.isidentifier`` accepts.
    """
    if not text[pos].isidentifier():
        return pos
    end, size = pos + 1, len(text)
    while end < size:
        char = text[end]
        if char.isascii():
            if not (char.isalnum() or char == "_"):
                break
        elif not ("a" + char).isidentifier():
            break
        end += 1
    return end


def _name(raw: str, line: int, col: int, file: str) -> Token:
    """A name token; a name beyond ASCII is normalised to NFKC, as Python does (PEP 3131)."""
    word = unicodedata.normalize("NFKC", raw)
    if word in KEYWORDS:
        raise error(
            Span(file, line, col, line, col + len(raw)),
            f"`{raw}` is the keyword `{word}` once normalised (NFKC), so it cannot name a value",
            help=f"write `{word}` for the keyword, or choose another name",
        )
    return Token("name", word, line, col, width=len(raw) if word != raw else None)


def _number(m: re.Match[str], line: int, col: int, file: str) -> Token:
    text = m.group()
    suffix = m.group("suffix")
    digits = text[: len(text) - len(suffix)] if suffix else text
    if suffix is not None and suffix not in SCALAR_TYPES:
        raise error(
            Span(file, line, col, line, col + len(text)),
            f"invalid number `{text}`",
            help="a number may end in a scalar type (`7i64`, `2.5f16`); "
            "`_` may stand only between digits",
        )
    clean = digits.replace("_", "")
    if m.group("hex"):
        return Token("int", text, line, col, int(clean, 16), suffix)
    if m.group("frac") is None and m.group("exp") is None:
        return Token("int", text, line, col, int(clean, 10), suffix)
    value = float(clean)
    if not math.isfinite(value):
        raise error(
            Span(file, line, col, line, col + len(text)),
            f"float literal `{text}` is too large",
            help="the largest finite f64 is about 1.8e308",
        )
    return Token("float", text, line, col, value, suffix)


def _close(open_brackets: list[Token], closer: Token, file: str) -> None:
    expected = _CLOSERS[closer.kind]
    if not open_brackets:
        raise error(
            _token_span(closer, file),
            f"`{closer.kind}` closes nothing",
            help=f"remove it, or add the `{expected}` it should close",
        )
    opener = open_brackets.pop()
    if opener.kind != expected:
        raise error(
            _token_span(closer, file),
            f"`{closer.kind}` does not close `{opener.kind}`",
            help=f"close `{opener.kind}` with `{_OPENERS[opener.kind]}` first",
            notes=(Note(_token_span(opener, file), f"`{opener.kind}` opened here"),),
        )


def _unexpected_character(text: str, pos: int, line: int, col: int, file: str) -> Exception:
    char = text[pos]
    span = Span(file, line, col, line, col + 1)
    if char == ";":
        return error(span, "unexpected `;`", help="a statement ends at the end of its line")
    if char == '"':
        return error(span, "unclosed string", help='a string ends with `"` on its own line')
    if char == "'":
        return error(span, "Phobos strings are written in double quotes", help='write "text"')
    if char == "#":
        return error(span, "unexpected `#`", help="a comment starts with `//`")
    shown = repr(char) if char.isascii() else f"{char!r} (U+{ord(char):04X})"
    return error(
        span,
        f"unexpected character {shown}",
        help="Phobos text is names (Python's identifiers), numbers and operators, "
        "with `//` comments",
    )


def _end_position(text: str) -> tuple[int, int]:
    """Where end of file is shown: just after the last character of the last line."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return len(lines), len(lines[-1].rstrip("\r")) + 1


def _token_span(tok: Token, file: str) -> Span:
    return Span(file, tok.line, tok.col, tok.line, tok.end_col)
