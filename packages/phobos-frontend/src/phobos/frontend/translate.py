"""Entry points: a Python module's source (or file) → its ``Program``.

The source is parsed with ``ast`` and never imported or run.  ``translate_file``
remembers its result per path until the file changes.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from phobos.compile.diagnostics import error, register_source
from phobos.compile.span import Span
from phobos.frontend.items import translate_module
from phobos.frontend.program import Program
from phobos.frontend.source import SourceFile

_FILE_CACHE: dict[str, tuple[int, int, Program]] = {}


def translate_source(source: str, filename: str) -> Program:
    """Translate the ``@ph.kernel``/``@ph.func`` defs and ``ph.const``s of a module's source.

    Raises ``PhobosError`` naming ``filename``, line and column for anything that
    spells nothing in Phobos (and for Python syntax errors).
    """
    register_source(filename, source)
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise _syntax_error(exc, filename) from None
    module = translate_module(SourceFile(filename, source), tree)
    return Program(module, filename)


def translate_file(path: str | os.PathLike[str]) -> Program:
    """``translate_source`` of a file, by absolute path; cached until its mtime or size changes."""
    filename = os.path.abspath(path)
    stat = os.stat(filename)
    cached = _FILE_CACHE.get(filename)
    if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
        return cached[2]
    program = translate_source(Path(filename).read_text(encoding="utf-8"), filename)
    _FILE_CACHE[filename] = (stat.st_mtime_ns, stat.st_size, program)
    return program


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
