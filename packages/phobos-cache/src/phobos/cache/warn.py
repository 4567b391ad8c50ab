"""The cache's warnings: one category, so a caller can filter or escalate them."""

from __future__ import annotations

import warnings


class CacheWarning(UserWarning):
    """Something in the cache was wrong and the cache worked around it."""


def warn_corrupt(key: str, problem: str) -> None:
    warnings.warn(
        f"phobos cache: entry {key} is corrupt ({problem}); removed it, it will be rebuilt",
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
