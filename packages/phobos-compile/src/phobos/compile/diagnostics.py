"""Diagnostics: every error and warning names the user's file, line and column.

A ``Diagnostic`` is a plain value.  ``PhobosError`` carries one or more of them and
renders like a compiler message::

    saxpy.py:9:11: error: undefined name 'BLOK'
        base: ph.let = ph.ctx.block.x * BLOK
                                        ^^^^
    help: did you mean 'BLOCK'?

The source line is read from ``register_source`` (text compiled from a string) or
from the file on disk.  ``PhobosError.__str__`` is the rendered message, so an
uncaught error shows the user's line, not our frames (see ``phobos.compile.errors``).
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from phobos.compile.span import Span

_SOURCES: dict[str, str] = {}


def register_source(file: str, text: str) -> None:
    """Remember ``text`` as the contents of ``file`` for rendering carets."""
    _SOURCES[file] = text


def source_line(file: str, line: int) -> str | None:
    text = _SOURCES.get(file)
    if text is not None:
        # Lines end at \n only, as the lexer and Python count them (not at \x0c or \u2028).
        lines = text.removeprefix("\ufeff").split("\n")
        return lines[line - 1].removesuffix("\r") if 0 < line <= len(lines) else None
    got = linecache.getline(file, line)
    return got.rstrip("\n") if got else None


@dataclass(frozen=True)
class Note:
    """A secondary location: "the other write is here"."""

    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    severity: str  # "error" or "warning"
    message: str
    span: Span
    help: str | None = None
    notes: tuple[Note, ...] = field(default=())
    # The limit (``phobos.compile.limits``) an error is about, or None: a variant that only
    # exceeds limits is too large to build, not wrong, and the tuner prunes it.
    limit: str | None = None

    def render(self) -> str:
        out = [f"{self.span}: {self.severity}: {self.message}"]
        out += _excerpt(self.span)
        for note in self.notes:
            out.append(f"{note.span}: note: {note.message}")
            out += _excerpt(note.span)
        if self.help:
            out.append(f"help: {self.help}")
        return "\n".join(out)


def _excerpt(span: Span) -> list[str]:
    if span.line <= 0:
        return []
    text = source_line(span.file, span.line)
    if text is None:
        return []
    expanded = text.expandtabs(4)
    prefix = text[: max(span.col - 1, 0)].expandtabs(4)
    if span.end_line == span.line and span.end_col > span.col:
        width = len(text[span.col - 1 : span.end_col - 1].expandtabs(4))
    else:
        width = max(len(expanded) - len(prefix), 1)
    return ["    " + expanded, "    " + " " * len(prefix) + "^" * max(width, 1)]


class PhobosError(Exception):
    """An error in the user's program (or launch), with where and what to do."""

    def __init__(self, *diagnostics: Diagnostic) -> None:
        if not diagnostics:
            raise ValueError("PhobosError needs at least one diagnostic")
        self.diagnostics = tuple(diagnostics)
        super().__init__(self.render())

    @property
    def span(self) -> Span:
        return self.diagnostics[0].span

    @property
    def message(self) -> str:
        return self.diagnostics[0].message

    @property
    def only_limits(self) -> bool:
        """Whether every error here is about a limit (``Diagnostic.limit``), none a mistake."""
        errors = [d for d in self.diagnostics if d.severity == "error"]
        return bool(errors) and all(d.limit is not None for d in errors)

    def render(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()


def error(
    span: Span,
    message: str,
    help: str | None = None,
    notes: tuple[Note, ...] = (),
    limit: str | None = None,
) -> PhobosError:
    """Build (not raise) a one-diagnostic ``PhobosError``: ``raise error(span, "...")``."""
    return PhobosError(Diagnostic("error", message, span, help, notes, limit))


def warning(span: Span, message: str, help: str | None = None) -> Diagnostic:
    return Diagnostic("warning", message, span, help)


class PhobosWarning(UserWarning):
    """A compiler warning about the user's program (``warnings.warn(rendered, PhobosWarning)``)."""
