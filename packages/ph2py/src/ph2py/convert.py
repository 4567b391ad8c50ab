"""A .ph program → the Python module that spells it, fresh or merged into an existing .py."""

from __future__ import annotations

import ast as python_ast
from dataclasses import dataclass

import libcst as cst

from ph2py.items import ModuleWriter
from ph2py.layout import SourceLayout
from ph2py.merge import merge
from phobos.compile.diagnostics import Diagnostic, error, register_source, warning
from phobos.compile.span import Span
from phobos.compile.syntax import ast, parse

DEFAULT_LINE_LENGTH = 88  # ruff's and black's


@dataclass(frozen=True)
class Conversion:
    """The Python text, and warnings about comments that could not stay where they were."""

    python: str
    warnings: tuple[Diagnostic, ...] = ()


def convert_source(
    ph_text: str,
    ph_file: str = "<string>",
    existing: str | None = None,
    existing_file: str = "<existing>",
    line_length: int = DEFAULT_LINE_LENGTH,
) -> Conversion:
    """Convert a .ph program; with ``existing`` (a .py's text), merge into it.

    Lines longer than ``line_length`` are wrapped as ruff format wraps them.

    Raises ``PhobosError`` at the .ph file's line and column for a syntax error
    or a name Python cannot spell, and at the .py's for a .py that is not Python.
    """
    module = parse(ph_text, ph_file)
    _check_unique_names(module)
    converted = ModuleWriter(module, SourceLayout.of(ph_text, ph_file), line_length).write()
    definitions = [(item.name, stmt) for item, stmt in zip(module.items, converted.statements)]
    base = cst.Module(body=[]) if existing is None else _parse_python(existing, existing_file)
    merged, footer_written = merge(base, definitions, converted.footer)
    warnings = sorted(converted.warnings, key=lambda w: (w.span.line, w.span.col))
    if not footer_written:
        warnings.append(_dropped_footer(module, ph_text, ph_file, existing_file))
    return Conversion(merged.code, tuple(warnings))


def _check_unique_names(module: ast.Module) -> None:
    seen: set[str] = set()
    for item in module.items:
        if item.name in seen:
            raise error(
                item.span,
                f"`{item.name}` is defined twice",
                help="a Python module keeps only the last definition of a name; rename one",
            )
        seen.add(item.name)


def _parse_python(text: str, file: str) -> cst.Module:
    """The existing .py as a libcst tree; Python's own message where it is not Python."""
    try:
        python_ast.parse(text, file)
        return cst.parse_module(text)
    except SyntaxError as exc:
        line, col, message = exc.lineno or 1, exc.offset or 1, exc.msg
    except cst.ParserSyntaxError as exc:
        line, col, message = exc.raw_line, exc.raw_column + 1, exc.message
    register_source(file, text)
    raise error(
        Span(file, line, col, line, col + 1),
        f"cannot convert into {file}: it is not valid Python ({message})",
        help="fix the Python file, or write the conversion elsewhere with -o",
    )


def _dropped_footer(module: ast.Module, text: str, ph_file: str, py_file: str) -> Diagnostic:
    """The warning for closing comments that host code after the definitions leaves no place for."""
    last_line = module.items[-1].span.end_line if module.items else 0
    layout = SourceLayout.of(text, ph_file)
    line = min((n for n in layout.comments if n > last_line), default=last_line)
    col = layout.comments[line].col if line in layout.comments else 1
    return warning(
        Span(ph_file, line, col, line, col + 2),
        f"the comments that close the .ph file are not written: in {py_file} host code "
        "follows the last definition, and the front end would read them as its comments",
        help="move them above a definition in the .ph file to keep them",
    )
