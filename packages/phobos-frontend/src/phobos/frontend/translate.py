"""Entry points: a Python module's source (or file) → its ``Program``.

The source is parsed with ``ast`` and never imported or run.  ``translate_file``
remembers its result per path until the file changes, and reads the file as
Python does (``decode_python``): a PEP 263 coding line or a UTF-8 byte order mark
says how its bytes are encoded, and UTF-8 is the default.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize

from phobos.compile.diagnostics import PhobosError, error, register_source
from phobos.compile.span import Span
from phobos.compile.syntax.nesting import check_nesting
from phobos.frontend.aliases import LangAliases
from phobos.frontend.items import translate_module
from phobos.frontend.program import Program
from phobos.frontend.source import SourceFile

# PEP 263's coding line, as Python's tokenizer matches it.
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")

_FILE_CACHE: dict[str, tuple[int, int, Program]] = {}


def translate_source(source: str, filename: str, imported: LangAliases | None = None) -> Program:
    """Translate the ``@ph.kernel``/``@ph.func`` defs and ``ph.const``s of a module's source.

    ``imported``: names of ``phobos.lang`` the text uses without importing them (a notebook
    cell's earlier cells did).  Raises ``PhobosError`` naming ``filename``, line and column
    for anything that spells nothing in Phobos (and for Python syntax errors).
    """
    # As Python reads a file: a byte order mark is not part of it, and every line ends in \n.
    source = source.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    register_source(filename, source)
    if "\0" in source:
        raise _at_offset(source, source.index("\0"), filename, "a NUL character", _NUL_HELP)
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise _syntax_error(exc, filename) from None
    except (RecursionError, MemoryError):
        # CPython's own parser gives up (it allows about 200 nested brackets, and its
        # stack ends somewhere beyond); the module is not valid Python here.
        raise error(
            Span(filename, 1, 1, 1, 2),
            "Python cannot parse this module: it is nested too deeply for Python's parser",
            help="bind inner parts of long expressions to names first",
        ) from None
    module = translate_module(SourceFile(filename, source), tree, imported)
    check_nesting(module)  # the Phobos tree too: `a and b and c` nests deeper in Phobos
    return Program(module, filename)


def translate_file(path: str | os.PathLike[str]) -> Program:
    """``translate_source`` of a file, by absolute path; cached until its mtime or size changes."""
    filename = os.path.abspath(path)
    stat = os.stat(filename)
    cached = _FILE_CACHE.get(filename)
    if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
        return cached[2]
    with open(filename, "rb") as f:
        data = f.read()
    program = translate_source(decode_python(data, filename), filename)
    _FILE_CACHE[filename] = (stat.st_mtime_ns, stat.st_size, program)
    return program


def decode_python(data: bytes, filename: str) -> str:
    """A module's text as Python reads it (PEP 263, a BOM, universal newlines).

    Bytes that do not decode, an unknown encoding, or a coding line that contradicts a
    byte order mark raise ``PhobosError`` at the line and column concerned.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise _encoding_error(data, filename, exc.msg) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise _undecodable(data, filename, encoding, exc) from None
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


_NUL_HELP = "a Python source file cannot hold NUL characters; remove it"


def _encoding_error(data: bytes, filename: str, message: str) -> PhobosError:
    """What ``tokenize.detect_encoding`` refused: a coding line, or bytes that are not UTF-8."""
    for number, line in enumerate(data.splitlines()[:2], start=1):
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")
        found = _CODING.match(line)
        if found is not None:
            name = found.group(1).decode("ascii", "replace")
            register_source(filename, data.decode("utf-8", "replace").removeprefix("\ufeff"))
            start = len(line[: found.start(1)].decode("utf-8", "replace")) + 1
            span = Span(filename, number, start, number, start + len(name))
            if "unknown encoding" in message:
                return error(
                    span,
                    f"the coding line names an encoding Python does not know: '{name}'",
                    help="name one Python knows (utf-8, latin-1, cp1252, ...), or remove the "
                    "line: a Python file is UTF-8 unless it says otherwise",
                )
            return error(
                span,
                f"the file starts with a UTF-8 byte order mark but its coding line says '{name}'",
                help="remove the coding line, or the byte order mark",
            )
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _undecodable(data, filename, "utf-8", exc)
    return error(
        Span(filename, 1, 1, 1, 2),
        f"Python cannot read the file: {message}",
        help="save the file as UTF-8, with no coding line or a correct one (PEP 263)",
    )


def _undecodable(data: bytes, filename: str, encoding: str, exc: UnicodeDecodeError) -> PhobosError:
    """The first byte that does not decode, at its line and column."""
    text = data.decode(encoding, "replace")
    register_source(filename, text.removeprefix("\ufeff").replace("\r\n", "\n"))
    line_start = max(data.rfind(b"\n", 0, exc.start), data.rfind(b"\r", 0, exc.start)) + 1
    line = data[: exc.start].replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n") + 1
    col = len(data[line_start : exc.start].decode(encoding, "replace")) + 1
    if line == 1 and data.startswith(b"\xef\xbb\xbf"):
        col -= 1
    bad = " ".join(f"0x{b:02x}" for b in data[exc.start : exc.end])
    named = "UTF-8" if encoding.replace("_", "-").lower().startswith("utf-8") else encoding
    return error(
        Span(filename, line, col, line, col + 1),
        f"the file is not valid {named}: {bad} ({exc.reason})",
        help="save the file as UTF-8, or name its encoding in a coding line on its first "
        "line (`# -*- coding: latin-1 -*-`, PEP 263)",
    )


def _at_offset(text: str, offset: int, filename: str, what: str, help: str) -> PhobosError:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return error(Span(filename, line, col, line, col + 1), f"Python cannot read {what}", help=help)


def _syntax_error(exc: SyntaxError, filename: str) -> Exception:
    line = exc.lineno or 1
    col = exc.offset or 1
    end_line = exc.end_lineno or line
    end_col = exc.end_offset if exc.end_offset and exc.end_offset > 0 else col + 1
    return error(
        Span(filename, line, col, end_line, end_col),
        f"Python syntax error: {exc.msg}",
        help="the module must be valid Python before Phobos can read it",
    )
