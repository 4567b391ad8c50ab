"""Where the cache lives and how big it may grow, from the environment.

The root must be the same folder whether or not platformdirs is installed, so the fallback
spells out the rule platformdirs follows for ``user_cache_dir("phobos", appauthor=False)``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT_ENV = "PHOBOS_CACHE_DIR"
MAX_BYTES_ENV = "PHOBOS_CACHE_MAX_BYTES"
TRUSTED_OWNER_ENV = "PHOBOS_CACHE_TRUSTED_OWNER"  # the account whose pinned cache you trust
DEFAULT_MAX_BYTES = 2 * 1024**3
APP_NAME = "phobos"

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def default_root() -> Path:
    """``$PHOBOS_CACHE_DIR``, else the user's cache folder + ``phobos``."""
    configured = os.environ.get(ROOT_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    try:
        import platformdirs
    except ImportError:
        return _user_cache_dir()
    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def _user_cache_dir() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA", "").strip() or str(Path.home() / "AppData" / "Local")
        return Path(base) / APP_NAME / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / APP_NAME
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return Path(base or Path.home() / ".cache") / APP_NAME


def default_trusted_owner() -> str | None:
    """``$PHOBOS_CACHE_TRUSTED_OWNER``: the account (name or uid) whose pinned shared cache the
    user trusts (docs/cache.md, section 1), else None."""
    return os.environ.get(TRUSTED_OWNER_ENV, "").strip() or None


def default_max_bytes() -> int:
    """``$PHOBOS_CACHE_MAX_BYTES`` (e.g. ``500000000``, ``512M``, ``2GiB``), else 2 GiB."""
    configured = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not configured:
        return DEFAULT_MAX_BYTES
    return parse_size(configured, source=MAX_BYTES_ENV)


def parse_size(text: str, source: str = "size") -> int:
    """Bytes from a count with an optional binary unit: K, M, G, T (with or without ``iB``)."""
    match = _SIZE.fullmatch(text)
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(
            f"{source}={text!r} is not a positive size; write bytes (2147483648) "
            "or a number with K, M, G or T (binary units), e.g. 2G"
        )
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])
