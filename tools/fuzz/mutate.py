"""Mutations: a seed's text → one fuzz input (bytes), with the names of what was done.

Most mutations keep a program close to valid, so that inputs reach the checker
and the interpreter: numbers become boundary values (window lengths, autotune
bounds, shifts, tiny and huge floats), names are renamed consistently (to
non-ASCII names among others), bindings with deep expressions or odd operators
are inserted after an existing binding, statements are wrapped in nested blocks.
Others break the program: tokens and lines deleted, duplicated, swapped, random
tokens inserted.  Encoding mutations work on the bytes: invalid UTF-8, a byte
order mark, a PEP 263 coding line (with the text encoded to match), CRLF, NUL.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from tools.fuzz.seeds import Seed

_TOKEN = re.compile(
    r"(?P<name>[^\W\d]\w*)"
    r"|(?P<number>\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?[A-Za-z0-9]*)"
    r"|(?P<op>:\+|\.\.|->|&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%&|^~!<>=()\[\]{},:.@])"
)
_BINDING_PH = re.compile(r"^(?P<indent>[ \t]*)(?:let|var) (?P<name>[^\W\d]\w*) =", re.M)
_BINDING_PY = re.compile(r"^(?P<indent>[ \t]*)(?P<name>[^\W\d]\w*): *\w+\.(?:let|var) *=", re.M)
_WINDOW = re.compile(r":\+ ?(?P<length>[^\W\d]\w*|\d+)")

INTERESTING_INTS = (
    "0", "1", "2", "3", "7", "15", "16", "17", "31", "32", "33", "63", "64", "65", "127",
    "128", "255", "256", "1023", "1024", "1025", "4096", "8192", "65535", "65536", "65537",
    "131072", "1048576", "16777216", "2147483647", "2147483648", "4294967295", "4294967296",
    "9007199254740993", "9223372036854775807", "9223372036854775808", "18446744073709551616",
    "1" + "0" * 30,
)  # fmt: skip
INTERESTING_FLOATS = (
    "0.0", "0.5", "1.5", "1e-46", "1e-39", "1e-8", "5e-324", "1e-320", "2.2250738585072014e-308",
    "6e-8", "65504.0", "65520.0", "3.4028234663852886e38", "3.5e38", "1e38", "1e300", "1.8e308",
    "1e309", "1e-400",
)  # fmt: skip
NAMES = (
    "x", "y", "N", "BLOCK", "tmp", "acc", "façade", "ñ", "変数", "Ω", "Ω", "ﬁle", "𝐱", "ª",
    "x\u0301", "e\u0301t\u00e9", "_", "__x", "let", "var", "fn", "kernel", "ctx", "newaxis",
    "inf", "step", "sum", "exp", "dot", "f32", "i8", "u16", "bool", "index", "ph", "True",
    "None", "x²", "٣x", "a·b", "ℌ", "ǅ",
)  # fmt: skip
TYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64")
TOKENS = (
    "(", ")", "[", "]", "{", "}", ",", ":", ":+", "..", "=", "+", "-", "*", "/", "%", "~", "!",
    "<<", ">>", "&&", "||", "@", "let", "var", "if", "else", "for", "while", "return", "in",
    "step", "newaxis", "ctx.block.x", "0", "1.0", "true", "and", "not", "None", "lambda",
    "\t", "\n", "\\", "'", '"', "#", ";", "$", "\u00a0", "\u2028", "\ufeff",
)  # fmt: skip
DEPTHS = (3, 10, 50, 99, 100, 101, 150, 199, 200, 201, 245, 300, 490, 495, 1000)
BAD_UTF8 = (
    b"\xff",
    b"\xc3",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xc0\xaf",
    b"\x80",
)


@dataclass(frozen=True)
class FuzzInput:
    """One input: ``kind`` "ph" or "py", its bytes, its seed and what was done to it."""

    index: int
    kind: str
    data: bytes
    seed: str
    mutations: tuple[str, ...]


def make_input(seeds: list[Seed], fuzz_seed: int, index: int) -> FuzzInput:
    """Input ``index`` of the run seeded ``fuzz_seed`` (the same pair gives the same bytes)."""
    rng = random.Random(f"{fuzz_seed}:{index}")
    seed = seeds[rng.randrange(len(seeds))]
    text = seed.text
    applied: list[str] = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        mutation = rng.choices(TEXT_MUTATIONS, TEXT_WEIGHTS)[0]
        text = mutation(rng, text, seed.kind)
        applied.append(mutation.__name__.lstrip("_"))
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:
        mutation = rng.choice(BYTE_MUTATIONS)
        data = mutation(rng, data, seed.kind)
        applied.append(mutation.__name__.lstrip("_"))
    return FuzzInput(index, seed.kind, data, seed.name, tuple(applied))


# --------------------------------------------------------------------------- helpers


def _tokens(text: str, group: str | None = None) -> list[re.Match[str]]:
    return [m for m in _TOKEN.finditer(text) if group is None or m.lastgroup == group]


def _replace(text: str, m: re.Match[str], new: str) -> str:
    return text[: m.start()] + new + text[m.end() :]


def _pick(rng: random.Random, items: list):
    return items[rng.randrange(len(items))] if items else None


def _bindings(text: str, kind: str) -> list[re.Match[str]]:
    return list((_BINDING_PH if kind == "ph" else _BINDING_PY).finditer(text))


def _insert_line_after(text: str, m: re.Match[str], line: str) -> str:
    """``line`` (already indented) after the logical line ``m`` starts (it may continue)."""
    end = text.find("\n", m.end())
    if end < 0:
        return text + "\n" + line + "\n"
    # Skip continuation lines: ones more indented than the binding, or inside brackets.
    depth = 0
    pos = m.start()
    while True:
        end = text.find("\n", pos)
        if end < 0:
            return text + "\n" + line + "\n"
        segment = text[pos:end]
        depth += sum(segment.count(c) for c in "([{") - sum(segment.count(c) for c in ")]}")
        if depth <= 0:
            return text[: end + 1] + line + "\n" + text[end + 1 :]
        pos = end + 1


# --------------------------------------------------------------------------- text mutations


def _number(rng: random.Random, text: str, kind: str) -> str:
    m = _pick(rng, _tokens(text, "number"))
    if m is None:
        return text
    pool = INTERESTING_FLOATS if ("." in m.group() or rng.random() < 0.2) else INTERESTING_INTS
    new = rng.choice(pool)
    if rng.random() < 0.1:
        new = "-" + new
    return _replace(text, m, new)


def _rename(rng: random.Random, text: str, kind: str) -> str:
    """Rename one name: everywhere (a consistent rename) or at one place."""
    names = _tokens(text, "name")
    m = _pick(rng, names)
    if m is None:
        return text
    new = rng.choice(NAMES)
    if rng.random() < 0.6:
        return re.sub(rf"(?<![\w.]){re.escape(m.group())}(?!\w)", new, text)
    return _replace(text, m, new)


def _delete_token(rng: random.Random, text: str, kind: str) -> str:
    m = _pick(rng, _tokens(text))
    return text if m is None else _replace(text, m, "")


def _duplicate_token(rng: random.Random, text: str, kind: str) -> str:
    m = _pick(rng, _tokens(text))
    return text if m is None else _replace(text, m, m.group() + " " + m.group())


def _swap_tokens(rng: random.Random, text: str, kind: str) -> str:
    tokens = _tokens(text)
    if len(tokens) < 2:
        return text
    i = rng.randrange(len(tokens) - 1)
    a, b = tokens[i], tokens[i + 1]
    return text[: a.start()] + b.group() + text[a.end() : b.start()] + a.group() + text[b.end() :]


def _insert_token(rng: random.Random, text: str, kind: str) -> str:
    pos = rng.randrange(len(text) + 1)
    return text[:pos] + rng.choice(TOKENS) + text[pos:]


def _lines(rng: random.Random, text: str, kind: str) -> str:
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    how = rng.randrange(3)
    if how == 0:
        del lines[i]
    elif how == 1:
        lines.insert(j, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _window(rng: random.Random, text: str, kind: str) -> str:
    m = _pick(rng, list(_WINDOW.finditer(text)))
    if m is None:
        return text
    new = rng.choice((*INTERESTING_INTS, "0", "-1", "2.5"))
    start, end = m.span("length")
    return text[:start] + new + text[end:]


def _retype(rng: random.Random, text: str, kind: str) -> str:
    spots = [m for m in _tokens(text, "name") if m.group() in TYPES]
    m = _pick(rng, spots)
    return text if m is None else _replace(text, m, rng.choice(TYPES))


def _parens(rng: random.Random, text: str, kind: str) -> str:
    m = _pick(rng, [t for t in _tokens(text) if t.lastgroup in ("name", "number")])
    if m is None:
        return text
    depth = rng.choice(DEPTHS)
    return _replace(text, m, "(" * depth + m.group() + ")" * depth)


def _deep_binding(rng: random.Random, text: str, kind: str) -> str:
    """A binding of a long sum, a chain of unary operators, nested calls or brackets."""
    m = _pick(rng, _bindings(text, kind))
    if m is None:
        return text
    name, depth = m.group("name"), rng.choice(DEPTHS)
    py = kind == "py"
    shape = rng.randrange(6)
    if shape == 0:
        expr = " + ".join([name] * depth)
    elif shape == 1:
        expr = rng.choice(("-", "~", "!" if not py else "not ")) * depth + name
    elif shape == 2:
        fn = "ph.exp" if py else "exp"
        expr = f"{fn}(" * depth + name + ")" * depth
    elif shape == 3:
        expr = "(" * depth + name + ")" * depth
    elif shape == 4:
        expr = " && ".join([f"{name} > 0"] * depth) if not py else " and ".join([name] * depth)
    else:
        expr = f"{name} * (" * depth + name + ")" * depth
    line = f"{m.group('indent')}{'zz: ph.let = ' if py else 'let zz = '}{expr}"
    return _insert_line_after(text, m, line)


STATEMENTS_PH = (
    "let zz = {n} / 0",
    "let zz = {n} % 0",
    "let zz = -{n}",
    "let zz = ~{n}",
    "let zz = i8({n})",
    "let zz = u8({n})",
    "let zz = u16(-{n})",
    "let zz = i32({n}) / i32(0)",
    "let zz = i64({n}) % 0i64",
    "let zz = {n} * 1e-46",
    "let zz = f32({n}) * 1e-46",
    "let zz = i32(f32({n}) * 1e30)",
    "let zz = u8(f32({n}) - 1000.0)",
    "let zz = {n} << 70",
    "let zz = arange(9223372036854775807)",
    "let zz = arange(65536)",
    "let zz = arange(65537)",
    "let zz = zeros<f32>[65536, 65536]",
    "let zz = zeros<f32>[256, 256]",
    "let zz = zeros<f32>[0]",
    "let zz = sum({n}, axis=7)",
    "let zz = trans({n})",
    "let zz = dot({n}, {n})",
    "let zz = fill({n}, 0)",
    "let zz = where({n} > 0, {n}, 0)",
    "let zz = {n}[:, newaxis]",
    "trace({n})",
    'assert({n} == {n}, "msg")',
    "return",
    "var zz = {n}\n{indent}zz = zz + 1",
    "for zz in 0 .. 3 {{\n{indent}}}",
    "while false {{\n{indent}}}",
)
STATEMENTS_PY = (
    "zz: ph.let = {n} / 0",
    "zz: ph.let = {n} // 0",
    "zz: ph.let = {n} % 0",
    "zz: ph.let = -{n}",
    "zz: ph.let = ~{n}",
    "zz: ph.let = ph.i8({n})",
    "zz: ph.let = ph.u8({n})",
    "zz: ph.let = ph.u16(-{n})",
    "zz: ph.let = ph.i32({n}) // ph.i32(0)",
    "zz: ph.let = {n} * 1e-46",
    "zz: ph.let = ph.i32(ph.f32({n}) * 1e30)",
    "zz: ph.let = {n} << 70",
    "zz: ph.let = ph.arange(9223372036854775807)",
    "zz: ph.let = ph.arange(65537)",
    "zz: ph.let = ph.zeros[ph.f32][65536, 65536]",
    "zz: ph.let = ph.sum({n}, axis=7)",
    "zz: ph.let = {n}[:, None]",
    "ph.trace({n})",
    "assert {n} == {n}",
    "return",
    "zz: ph.var = {n}\n{indent}zz = zz + 1",
    "for zz in range(3):\n{indent}    pass",
    "while False:\n{indent}    pass",
    "print({n})",
    "zz: ph.let = [{n}]",
    "zz: ph.let = {n} if {n} else {n}",
)


def _statement(rng: random.Random, text: str, kind: str) -> str:
    m = _pick(rng, _bindings(text, kind))
    if m is None:
        return text
    template = rng.choice(STATEMENTS_PY if kind == "py" else STATEMENTS_PH)
    indent = m.group("indent")
    line = indent + template.format(n=m.group("name"), indent=indent)
    return _insert_line_after(text, m, line)


def _nested_blocks(rng: random.Random, text: str, kind: str) -> str:
    """Wrap one binding's line in ``depth`` nested ``if`` blocks."""
    m = _pick(rng, _bindings(text, kind))
    if m is None:
        return text
    depth = rng.choice(DEPTHS[:9])
    start = m.start()
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    line = text[start:end].lstrip()
    indent = m.group("indent")
    if kind == "py":
        step = "    "
        out = [f"{indent}{step * i}if True:" for i in range(depth)]
        out.append(indent + step * depth + line)
    else:
        out = [f"{indent}if true {{" for _ in range(depth)]
        out.append(indent + line)
        out += [f"{indent}}}" for _ in range(depth)]
    return text[:start] + "\n".join(out) + text[end:]


TEXT_MUTATIONS: tuple[Callable[[random.Random, str, str], str], ...] = (
    _number,
    _rename,
    _delete_token,
    _duplicate_token,
    _swap_tokens,
    _insert_token,
    _lines,
    _window,
    _retype,
    _parens,
    _deep_binding,
    _statement,
    _nested_blocks,
)
TEXT_WEIGHTS = (12, 10, 5, 3, 3, 4, 4, 8, 5, 4, 8, 14, 3)


# --------------------------------------------------------------------------- byte mutations


def _bad_utf8(rng: random.Random, data: bytes, kind: str) -> bytes:
    pos = rng.randrange(len(data) + 1)
    return data[:pos] + rng.choice(BAD_UTF8) + data[pos:]


def _bom(rng: random.Random, data: bytes, kind: str) -> bytes:
    return b"\xef\xbb\xbf" + data


def _coding(rng: random.Random, data: bytes, kind: str) -> bytes:
    """A PEP 263 line, with the text encoded as it says (a .ph file gets the line too)."""
    text = data.decode("utf-8", "replace")
    encoding = rng.choice(("latin-1", "utf-8", "cp1252", "ascii", "klingon", "utf-16"))
    line = rng.choice(
        (
            "# -*- coding: {} -*-\n",
            "# coding={}\n",
            "#!/usr/bin/env python\n# vim: set fileencoding={} :\n",
        )
    )
    body = (line.format(encoding) if kind == "py" else "") + text
    try:
        return body.encode(encoding if encoding != "klingon" else "utf-8", "replace")
    except LookupError:
        return body.encode("utf-8")


def _crlf(rng: random.Random, data: bytes, kind: str) -> bytes:
    return data.replace(b"\n", rng.choice((b"\r\n", b"\r")))


def _nul(rng: random.Random, data: bytes, kind: str) -> bytes:
    pos = rng.randrange(len(data) + 1)
    return data[:pos] + rng.choice((b"\x00", b"\x0c", b"\x1b", b"\x7f")) + data[pos:]


BYTE_MUTATIONS = (_bad_utf8, _bad_utf8, _bom, _coding, _crlf, _nul)
