"""What the cache hands back: a verified entry, a listing row, a problem report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Entry:
    """One verified entry.  ``files`` are the bytes that passed the sha256 check, already read,
    so nothing another process does to the folder afterwards can change what the caller loads.
    ``path`` is the entry's folder (None for an entry held in memory)."""

    key: str
    path: Path | None
    manifest: Mapping[str, Any]
    files: Mapping[str, bytes]

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", MappingProxyType(dict(self.files)))

    @property
    def record(self) -> Mapping[str, Any]:
        """The key record the entry was stored under."""
        return self.manifest["record"]

    def read(self, name: str) -> bytes:
        """The bytes of file ``name``; ``KeyError`` naming the files there are if absent."""
        try:
            return self.files[name]
        except KeyError:
            raise KeyError(
                f"entry {self.key[:16]} has no file {name!r} (it has {sorted(self.files)})"
            ) from None


@dataclass(frozen=True)
class EntryInfo:
    """One entry as listed, from its manifest, without reading or checking its files."""

    key: str
    path: Path | None
    record: Mapping[str, Any]
    size: int  # bytes on disk: the files and the manifest
    created: float  # unix seconds
    last_used: float  # unix seconds


@dataclass(frozen=True)
class Problem:
    """An entry (or a stray folder) that fails its check, and what is wrong with it."""

    key: str
    path: Path | None
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"
