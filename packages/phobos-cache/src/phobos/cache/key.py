"""The cache key: a sha256 of a canonical JSON text of the caller's key record.

The recipe is part of the on-disk layout (docs/cache.md) so that a program in another language
(the inference runtime, in C++) computes the same key.  To keep it exact, a record holds only
JSON objects with string keys, arrays, strings, integers, booleans and null: no floats, whose
shortest decimal spelling differs between languages (write them as strings, e.g. ``float.hex``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

KEY_PATTERN = re.compile(r"[0-9a-f]{64}")


def canonical_json(record: Mapping) -> bytes:
    """The UTF-8 bytes of ``record`` as canonical JSON: keys sorted by code point, no spaces."""
    _check_value(record, "record")
    if not isinstance(record, Mapping):
        raise TypeError(f"a key record must be a mapping, not {type(record).__name__}")
    text = json.dumps(
        record, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def cache_key(record: Mapping) -> str:
    """The entry key for ``record``: 64 lowercase hex digits of sha256(canonical_json(record))."""
    return hashlib.sha256(canonical_json(record)).hexdigest()


def check_key(key: str) -> str:
    """Return ``key`` if it is a well-formed cache key, else raise ``ValueError``."""
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise ValueError(f"not a cache key (64 lowercase hex digits): {key!r}")
    return key


def _check_value(value: object, where: str) -> None:
    """Reject anything whose canonical spelling is not pinned down by the recipe."""
    if value is None or isinstance(value, (bool, int, str)):
        if isinstance(value, str):
            _check_text(value, where)
        return
    if isinstance(value, float):
        raise TypeError(
            f"{where} is a float ({value!r}); key records hold no floats, "
            "write it as a string (e.g. float.hex())"
        )
    if isinstance(value, Mapping):
        for name, item in value.items():
            if not isinstance(name, str):
                raise TypeError(f"{where} has a non-string key {name!r}")
            _check_text(name, where)
            _check_value(item, f"{where}[{name!r}]")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_value(item, f"{where}[{index}]")
        return
    raise TypeError(f"{where} is a {type(value).__name__}, which a key record cannot hold")


def _check_text(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise TypeError(f"{where} holds text that is not valid Unicode: {exc}") from None
