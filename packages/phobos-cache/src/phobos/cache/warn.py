"""The cache's warnings: one category, so a caller can filter or escalate them."""

from __future__ import annotations

import threading
import warnings


class CacheWarning(UserWarning):
    """Something in the cache was wrong and the cache worked around it."""


_said: set[str] = set()
_said_lock = threading.Lock()


def warn_once(problem: str, message: str) -> None:
    """Warn ``message`` the first time this process meets ``problem``, as one clean line.

    The warning is attributed to ``phobos.cache`` rather than to a line of source, so Python
    prints the message alone, without echoing a line of the cache's code."""
    with _said_lock:
        if problem in _said:
            return
        _said.add(problem)
    warnings.warn_explicit(message, CacheWarning, "phobos.cache", 0, module="phobos.cache")


def warn_corrupt(key: str, problem: str, removed: bool = True) -> None:
    done = (
        "removed it, it will be rebuilt" if removed else "not using it (it is not yours to remove)"
    )
    warnings.warn(
        f"phobos cache: entry {key} is corrupt or not yours ({problem}); {done}",
        CacheWarning,
        stacklevel=4,
    )


def warn_build_wait(key: str, seconds: float) -> None:
    warnings.warn(
        f"phobos cache: waited {seconds:g} s for another process to build entry {key}; "
        "building it here as well (pass a longer Cache(build_wait=...) if builds take longer)",
        CacheWarning,
        stacklevel=3,
    )
