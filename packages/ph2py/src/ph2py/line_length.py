"""How long the lines of the Python may be: the project's ruff setting, found as ruff finds it.

ruff reads ``line-length`` from the configuration nearest the file it formats:
the first folder, from the file's own upwards, with a ``.ruff.toml``, a
``ruff.toml`` or a ``pyproject.toml`` that has a ``[tool.ruff]`` table.  ph2py
wraps to the same length, so ``ruff format`` leaves what it writes as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ph2py.convert import DEFAULT_LINE_LENGTH

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ConfigurationError(Exception):
    """A ruff configuration that cannot be read, or whose line length is not a length."""


def line_length_for(target: Path) -> int:
    """The ``line-length`` of the ruff configuration nearest ``target``, else 88 (ruff's)."""
    for folder in target.resolve().parents:
        for name in (".ruff.toml", "ruff.toml", "pyproject.toml"):
            path = folder / name
            if not path.is_file():
                continue
            settings = _read(path)
            if name == "pyproject.toml":
                settings = settings.get("tool", {}).get("ruff")
                if settings is None:
                    continue
            return _length(settings.get("line-length", DEFAULT_LINE_LENGTH), path)
    return DEFAULT_LINE_LENGTH


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"cannot read the line length from {path}: {exc}") from None


def _length(value: object, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"line-length in {path} is {value!r}, not a positive number")
    return value
