"""Show a Phobos error the way Python shows a SyntaxError: the user's line, not our frames.

A ``PhobosError`` already names the user's file, line and column and shows the line
with a caret, so the frames of the compiler that found it only hide the message.
Inside ``user_facing()`` such an error loses its internal traceback; set
``PHOBOS_DEBUG=1`` to keep every frame.
"""

from __future__ import annotations

import linecache
import os
from collections.abc import Mapping
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

from phobos.compile import Diagnostic, Note, PhobosError, Span

if TYPE_CHECKING:
    from phobos.autotune import Report


class user_facing:
    """Context manager: drop the compiler's frames from a ``PhobosError`` passing through."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if isinstance(error, PhobosError) and not os.environ.get("PHOBOS_DEBUG"):
            error.__traceback__ = None
            error.__suppress_context__ = True
        return False


def call_site(frame: FrameType) -> Span:
    """The span of the statement ``frame`` is executing (the user's launch line)."""
    file, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(file, line).rstrip("\n")
    start = len(text) - len(text.lstrip()) + 1
    return Span(file, line, start, line, max(len(text) + 1, start + 1))


def located_launch_error(declared: Mapping[str, Span], error: Exception, site: Span) -> PhobosError:
    """A launcher's ``LaunchError`` at the launch's line, with a note at the parameter's
    declaration (``declared``: where each parameter is declared)."""
    notes: tuple[Note, ...] = ()
    param = getattr(error, "param", None)
    if param in declared:
        notes = (Note(declared[param], f"'{param}' is declared here"),)
    return PhobosError(Diagnostic("error", str(error), site, None, notes))


class DisagreeingVariants(PhobosError):
    """Tuning without a reference function found variants that disagree: the error names the
    kernel's definition, lists the groups of agreeing variants and how far apart they are,
    and says what to do.  ``report`` is the tuning report (also ``kernel.tuning_report()``)."""

    def __init__(
        self, diagnostic: Diagnostic, lines: list[str], advice: str, report: Report
    ) -> None:
        self.lines = list(lines)
        self.advice = advice
        self.report = report
        super().__init__(diagnostic)

    def render(self) -> str:
        listed = [f"  {line}" for line in self.lines]
        return "\n".join([super().render(), *listed, f"help: {self.advice}"])
