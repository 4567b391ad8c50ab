"""The interpreter's own errors: a bad launch, and a data race between blocks."""

from __future__ import annotations

from phobos.compile.diagnostics import Note, PhobosError, error
from phobos.compile.span import Span


class LaunchError(PhobosError):
    """The arguments or grid of a launch do not fit the kernel; raised before anything runs."""


class RaceError(PhobosError):
    """Two blocks of one launch touched the same element, and at least one of them wrote it."""


def launch_error(
    span: Span, message: str, help: str | None = None, notes: tuple[Note, ...] = ()
) -> LaunchError:
    return LaunchError(*error(span, message, help=help, notes=notes).diagnostics)


def race_error(span: Span, message: str, note: Note, help: str) -> RaceError:
    return RaceError(*error(span, message, help=help, notes=(note,)).diagnostics)
