"""Which .ph files a command names, where each one's Python goes, and writing it safely."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ph2py.convert import Conversion, convert_source
from ph2py.line_length import ConfigurationError, line_length_for


class UsageError(Exception):
    """A command line that names no .ph file, or a file that cannot be read or written."""


@dataclass(frozen=True)
class Job:
    """Convert ``source`` (a .ph file) into ``target`` (its .py), in lines of ``line_length``
    columns (None: the length the ruff configuration nearest the target sets)."""

    source: Path
    target: Path
    line_length: int | None = None

    def convert(self) -> tuple[Conversion, str | None]:
        """The conversion, merged into the target if it exists, and the target's current text."""
        ph_text = _read(self.source)
        existing = _read(self.target) if self.target.exists() else None
        line_length = self.line_length
        if line_length is None:
            try:
                line_length = line_length_for(self.target)
            except ConfigurationError as exc:
                raise UsageError(str(exc)) from None
        conversion = convert_source(
            ph_text, str(self.source), existing, str(self.target), line_length=line_length
        )
        return conversion, existing


def jobs(paths: list[Path], output: Path | None, line_length: int | None = None) -> list[Job]:
    """One job per .ph file: each file named, and every .ph below each folder named."""
    found: list[Job] = []
    for path in paths:
        if path.is_dir():
            found += [
                Job(ph, ph.with_suffix(".py"), line_length) for ph in sorted(path.rglob("*.ph"))
            ]
        elif path.is_file():
            if path.suffix != ".ph":
                raise UsageError(f"{path} is not a .ph file")
            found.append(Job(path, path.with_suffix(".py"), line_length))
        else:
            raise UsageError(f"{path}: no such file or folder")
    if output is not None:
        if len(found) != 1 or paths[0].is_dir():
            raise UsageError("-o names the output of one .ph file")
        found = [Job(found[0].source, output, line_length)]
    return found


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
