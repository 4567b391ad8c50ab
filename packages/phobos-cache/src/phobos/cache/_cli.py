"""What every Phobos command line shares: one-line errors, ``--version``, warnings, colour.

Every command prints its problems as ``NAME: error: ...`` (and ``NAME: warning: ...``) on one
line, exits non-zero, and never shows a Python traceback unless PHOBOS_DEBUG=1.  Colour only
where stderr is a terminal, and never when NO_COLOR is set (https://no-color.org); FORCE_COLOR
forces it.  The packages share no code, so each one with a command has this file; a test checks
that the copies are identical.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

_COLOURS = {"error:": "\033[1;31m", "warning:": "\033[1;35m", "note:": "\033[1;36m"}
_RESET = "\033[0m"


def version(distribution: str, here: str) -> str:
    """The installed distribution's version, else the checkout's VERSION file."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        pass
    for folder in Path(here).resolve().parents:
        if (folder / "VERSION").is_file() and (folder / "packages").is_dir():
            text = (folder / "VERSION").read_text(encoding="utf-8").strip()
            return f"{text} (not installed: sources in {folder})"
    return "unknown (not installed)"


def colour(stream: IO[str] | None = None) -> bool:
    """Whether to colour what goes to ``stream`` (default stderr)."""
    stream = sys.stderr if stream is None else stream
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


def paint(text: str, stream: IO[str] | None = None) -> str:
    """``text`` with its first ``error:``/``warning:``/``note:`` coloured, where colour is on."""
    if not colour(stream):
        return text
    found = [(text.find(word), word) for word in _COLOURS if word in text]
    if not found:
        return text
    at, word = min(found)
    return text[:at] + _COLOURS[word] + word + _RESET + text[at + len(word) :]


def say(prog: str, kind: str, message: str) -> None:
    """Print ``PROG: KIND: MESSAGE`` to stderr."""
    print(paint(f"{prog}: {kind}: {message}"), file=sys.stderr)


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors that name an unknown option first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, paint(f"{self.prog}: error: {message} (see {self.prog} --help)\n"))

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        argv = list(sys.argv[1:] if args is None else args)
        unknown = _unknown_option(self, argv)
        if unknown is not None:
            self.error(f"unrecognized option {unknown!r}")
        return super().parse_args(argv, namespace)


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    found = dict(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.update(_options(sub))
    return found


def _unknown_option(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    options = _options(parser)
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token == "--":
            return None
        if not token.startswith("-") or token == "-" or _is_number(token):
            continue
        name = token.split("=", 1)[0] if token.startswith("--") else token
        action = options.get(name)
        if action is None and not token.startswith("--"):
            action = options.get(token[:2])  # -DNAME=1: a short option with its value attached
            if action is None or action.nargs == 0:
                return token
            continue
        if action is None:
            return token
        skip = action.nargs != 0 and "=" not in token
    return None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def cli_warnings(prog: str) -> Iterator[None]:
    """Show warnings as ``PROG: warning: message``, not in Python's format with our source line."""

    def show(
        message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None
    ) -> None:
        text = str(message)
        if text.startswith("phobos ") and ": " in text[:20]:  # "phobos cache: ...": ours already
            text = text.split(": ", 1)[1]
        say(prog, "warning", text)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield


def run(prog: str, body: Callable[[], int]) -> int:
    """``body()``'s exit status; any exception becomes one ``PROG: error:`` line and status 1."""
    try:
        with cli_warnings(prog):
            return body()
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head`: stop quietly
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if os.environ.get("PHOBOS_DEBUG") == "1":
            raise
        say(prog, "error", describe(exc))
        return 1


def describe(exc: BaseException) -> str:
    """One line about ``exc`` for a user: what failed and where, without a traceback."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return (
        f"internal error ({type(exc).__name__}: {text}); "
        "PHOBOS_DEBUG=1 shows the traceback: please report it"
    )
