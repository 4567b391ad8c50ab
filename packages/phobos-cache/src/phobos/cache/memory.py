"""Entries held in this process, for when the cache folder cannot be written (``fallback``).

It has the disk store's methods, so the cache's policy (the size bound, eviction) is the same.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from phobos.cache.entry import Entry, EntryInfo
from phobos.cache.manifest import encode_manifest


class MemoryStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._entries: dict[str, Entry] = {}
        self._last_used: dict[str, float] = {}
        self._lock = threading.Lock()

    def load(self, key: str) -> Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._last_used[key] = time.time()
            return entry

    def publish(self, key: str, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> Entry:
        with self._lock:
            entry = self._entries.setdefault(key, Entry(key, None, manifest, dict(files)))
            self._last_used[key] = time.time()
            return entry

    def touch(self, key: str) -> None:
        with self._lock:
            if key in self._entries:
                self._last_used[key] = time.time()

    def remove(self, key: str) -> bool:
        with self._lock:
            self._last_used.pop(key, None)
            return self._entries.pop(key, None) is not None

    def stored_keys(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._entries))

    def usage(self, key: str) -> tuple[int, float] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            return _size(entry), self._last_used[key]

    def info(self, key: str) -> EntryInfo | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            created = entry.manifest["created"]
            return EntryInfo(key, None, entry.record, _size(entry), created, self._last_used[key])


def _size(entry: Entry) -> int:
    return sum(len(data) for data in entry.files.values()) + len(encode_manifest(entry.manifest))
