"""The cache: verified entries of files and JSON records under one content key each.

Policy lives here and mechanism in the stores: ``Cache`` checks keys and file names, bounds the
size with least-recently-used eviction, lets one process build a missing entry while the others
wait (``lock``) and falls back to memory, with one warning per process, when its folder cannot
be written or may not be trusted (``fallback``, ``trust``), or reads another account's pinned
cache (``pinned``).  ``DiskStore`` does the atomic renames and the integrity check.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phobos.cache.disk import DiskStore
from phobos.cache.entry import Entry, EntryInfo, Problem
from phobos.cache.fallback import MemoryOverDisk, fallback_store, over, refused_store
from phobos.cache.key import cache_key, check_key
from phobos.cache.location import (
    default_max_bytes,
    default_root,
    default_trusted_owner,
    parse_size,
)
from phobos.cache.lock import BUILD_WAIT_SECONDS, Lock
from phobos.cache.manifest import (
    RECORD_FILE,
    CorruptEntry,
    build_manifest,
    check_file_name,
    parse_json_object,
)
from phobos.cache.pinned import PinnedStore, share, write_pins
from phobos.cache.trust import Untrusted, owner_uid, you
from phobos.cache.warn import warn_build_wait, warn_corrupt

EVICT_TO = 0.9  # after crossing the bound, evict down to this fraction of it

# Bytes stored per (root, in memory), shared by every Cache in the process, so a caller may make
# a Cache per compile without each one scanning the folder at its first put.
_running_totals: dict[tuple[str, bool], int] = {}
_totals_lock = threading.Lock()


def record_key(namespace: str, key: str) -> str:
    """The entry key under which ``put_record(namespace, key, ...)`` stores its record."""
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"a record namespace must be a non-empty string, not {namespace!r}")
    if not isinstance(key, str):
        raise TypeError(f"a record key must be a string, not {type(key).__name__}")
    return cache_key(_record_key_record(namespace, key))


@dataclass(frozen=True)
class Pruned:
    """What ``prune`` deleted."""

    evicted: list[str] = field(default_factory=list)
    temp_folders: int = 0


@dataclass(frozen=True)
class Pins:
    """What ``pin`` wrote: the pins file, the keys pinned and the bad entries left out."""

    path: Path
    keys: list[str] = field(default_factory=list)
    bad: list[Problem] = field(default_factory=list)


class Cache:
    """The Phobos kernel cache at ``root`` (default: ``$PHOBOS_CACHE_DIR``, else the user's
    cache folder + ``phobos``), holding at most ``max_bytes`` (default:
    ``$PHOBOS_CACHE_MAX_BYTES``, else 2 GiB).  ``get_or_build`` waits at most ``build_wait``
    seconds for another process building the same entry.

    The root must be yours and writable by no one else (docs/cache.md, section 1); another
    one is not read at all (``refused`` says why), unless it belongs to ``trusted_owner``
    (default: ``$PHOBOS_CACHE_TRUSTED_OWNER``; a name or uid) and that account pinned it:
    then its pinned entries are read and nothing is written there (``shared``)."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        max_bytes: int | str | None = None,
        *,
        build_wait: float = BUILD_WAIT_SECONDS,
        trusted_owner: str | int | None = None,
    ) -> None:
        self.root = Path(root).expanduser() if root is not None else default_root()
        self.max_bytes = _resolve_max_bytes(max_bytes)
        self.build_wait = _check_build_wait(build_wait)
        owner = trusted_owner if trusted_owner is not None else default_trusted_owner()
        self.trusted_owner = None if owner is None else owner_uid(owner)
        self.refused: str | None = None  # why the root is not used at all
        self.shared = False  # True when reading another account's pinned cache
        disk = DiskStore(self.root)
        try:
            disk.open()
        except Untrusted as exc:
            self._store: DiskStore | MemoryOverDisk = self._untrusted(str(exc))
        except OSError as exc:
            self._store = fallback_store(disk, exc)
        else:
            self._store = disk

    def _untrusted(self, problem: str) -> MemoryOverDisk:
        """The pinned cache of the trusted owner, if the root is theirs; else nothing."""
        if self.trusted_owner is not None and self.trusted_owner != you():
            pinned = PinnedStore(self.root, self.trusted_owner)
            try:
                if os.stat(self.root).st_uid == self.trusted_owner:
                    pinned.open()
                    self.shared = True
                    return over(pinned)
            except Untrusted as exc:
                problem = str(exc)
            except OSError:
                pass
        self.refused = problem
        return refused_store(self.root, problem)

    @property
    def in_memory(self) -> bool:
        """True when the folder cannot be written: new entries live in this process only
        (entries already on disk are still read)."""
        return isinstance(self._store, MemoryOverDisk)

    def get(self, key: str) -> Entry | None:
        """The entry for ``key`` with every file checked against its sha256, or None.

        A corrupt entry (missing or altered file, bad manifest) is removed with a
        ``CacheWarning`` naming the key and the problem, and None is returned, so the caller
        rebuilds it."""
        return self._store.load(check_key(key))

    def put(self, key: str, record: Mapping[str, Any], files: Mapping[str, bytes]) -> Entry:
        """Store ``files`` under ``key``, which must be ``cache_key(record)``.

        Atomic: other processes see the whole entry or none.  If another process put the
        same key first, its (verified) entry is kept and returned."""
        _check_record(key, record)
        contents = _check_files(files)
        manifest = build_manifest(key, record, contents, time.time())
        try:
            entry = self._store.publish(key, manifest, contents)
        except OSError as exc:
            if not isinstance(self._store, DiskStore):
                raise
            self._store = fallback_store(self._store, exc)
            entry = self._store.publish(key, manifest, contents)
        self._account(key)
        return entry

    def get_or_build(
        self,
        key: str,
        record: Mapping[str, Any],
        build: Callable[[], Mapping[str, bytes]],
    ) -> tuple[Entry, bool]:
        """The entry for ``key``; on a miss, ``build()`` makes its files and they are put.
        Returns the entry and whether ``build`` was called here.

        Processes and threads that miss the same key at once take turns on its build lock: one
        builds, the others wait and then read its entry.  A waiter builds anyway when the
        builder dies (the lock is released with it) or, with a ``CacheWarning``, when it has
        waited ``build_wait`` seconds.  Where the folder cannot be locked, every caller builds."""
        _check_record(key, record)
        entry = self.get(key)
        if entry is not None:
            return entry, False
        with self._store.build_lock(key, self.build_wait) as lock:
            if lock is Lock.TIMED_OUT:
                warn_build_wait(key, self.build_wait)
            entry = self.get(key)
            if entry is not None:
                return entry, False
            return self.put(key, record, build()), True

    def get_record(self, namespace: str, key: str) -> dict[str, Any] | None:
        """The JSON record stored by ``put_record(namespace, key, ...)``, or None."""
        full_key = record_key(namespace, key)
        entry = self.get(full_key)
        if entry is None:
            return None
        try:
            return parse_json_object(entry.read(RECORD_FILE), RECORD_FILE)
        except (KeyError, CorruptEntry) as problem:  # a foreign writer's entry: rebuild it
            warn_corrupt(full_key, str(problem), removed=self._store.remove(full_key))
            return None

    def put_record(self, namespace: str, key: str, value: Mapping[str, Any]) -> None:
        """Store a JSON object (e.g. an autotuning result) as an entry of its own."""
        if not isinstance(value, Mapping):
            raise TypeError(f"a record must be a mapping, not {type(value).__name__}")
        data = json.dumps(dict(value), sort_keys=True, indent=2, allow_nan=False).encode()
        self.put(
            record_key(namespace, key), _record_key_record(namespace, key), {RECORD_FILE: data}
        )

    def keys(self) -> list[str]:
        """Every entry's key, sorted."""
        return sorted(self._store.stored_keys())

    def find(self, prefix: str) -> list[str]:
        """The keys that start with ``prefix`` (any case), as the CLI takes them."""
        return [key for key in self.keys() if key.startswith(prefix.lower())]

    def info(self, key: str) -> EntryInfo | None:
        """The entry as listed (its manifest, size, times), without checking its files."""
        return self._store.info(check_key(key))

    def entries(self) -> list[EntryInfo]:
        """Every entry, most recently used first."""
        found = [info for key in self.keys() if (info := self._store.info(key)) is not None]
        return sorted(found, key=lambda info: (-info.last_used, info.key))

    def check(self, key: str) -> Problem | None:
        """What is wrong with the entry for ``key``, or None; changes nothing."""
        message = self._store.check(check_key(key))
        return None if message is None else Problem(key, self._path(key), message)

    def verify(self, remove: bool = False) -> list[Problem]:
        """Check every entry's files; the corrupt ones, removed as well when ``remove``."""
        problems = [problem for key in self.keys() if (problem := self.check(key)) is not None]
        if remove:
            for problem in problems:
                self._store.remove(problem.key)
        return problems

    def remove(self, key: str) -> bool:
        """Remove the entry for ``key``; False if there was none."""
        return self._store.remove(check_key(key))

    def prune(self) -> Pruned:
        """Delete what killed processes left behind (stale folders in ``tmp``, lock files no
        one holds), and evict least-recently-used entries until the cache is within its bound."""
        temp_folders = self._store.sweep_temp()
        self._store.sweep_locks()
        with _totals_lock:
            _running_totals[self._totals_key], evicted = self._evict(self.max_bytes, keep=None)
        return Pruned(evicted, temp_folders)

    def pin(self) -> Pins:
        """Pin every good entry, so that other accounts may read this cache as a shared one
        (docs/cache.md, section 1): write ``ROOT/v1/pins.json`` and let everyone read (never
        write) the root and the pinned entries.  Only the owner of a writable cache can."""
        if not isinstance(self._store, DiskStore) or self.shared:
            why = self.refused or "it cannot be written here"
            raise PermissionError(f"cannot pin {self.root}: {why}")
        store = self._store
        pins, bad = {}, []
        for key in self.keys():
            digest = store.digest(key)
            if digest is not None:
                pins[key] = digest
            elif (problem := self.check(key)) is not None:
                bad.append(problem)
        path = write_pins(store, pins)
        share(store, pins)
        return Pins(path, sorted(pins), bad)

    def clear(self) -> int:
        """Remove every entry; returns how many."""
        removed = sum(self._store.remove(key) for key in self.keys())
        self._store.sweep_temp()
        self._store.sweep_locks()
        with _totals_lock:
            _running_totals.pop(self._totals_key, None)
        return removed

    def _account(self, key: str) -> None:
        """Keep a running total of the bytes stored; scan and evict only when it crosses the bound."""
        with _totals_lock:
            total = _running_totals.get(self._totals_key)
            if total is None:
                self._store.sweep_temp()
                total = sum(size for size, _ in self._usages().values())
            else:
                usage = self._store.usage(key)
                total += usage[0] if usage else 0
            if total > self.max_bytes:
                total, _ = self._evict(int(self.max_bytes * EVICT_TO), keep=key)
            _running_totals[self._totals_key] = total

    @property
    def _totals_key(self) -> tuple[str, bool]:
        return str(self.root.absolute()), self.in_memory

    def _evict(self, target: int, keep: str | None) -> tuple[int, list[str]]:
        usages = self._usages()
        total = sum(size for size, _ in usages.values())
        evicted = []
        oldest_first = sorted(usages, key=lambda key: (usages[key][1], key))
        for key in oldest_first:
            if total <= target:
                break
            if key != keep and self._store.remove(key):
                total -= usages[key][0]
                evicted.append(key)
        return total, evicted

    def _usages(self) -> dict[str, tuple[int, float]]:
        return {
            key: usage for key in self._store.stored_keys() if (usage := self._store.usage(key))
        }

    def _path(self, key: str) -> Path | None:
        return self._store.folder(key)


def _record_key_record(namespace: str, key: str) -> dict[str, str]:
    return {"record_namespace": namespace, "record_key": key}


def _check_record(key: str, record: Mapping[str, Any]) -> None:
    if cache_key(record) != check_key(key):
        raise ValueError(f"key {key} is not cache_key(record); compute it with cache_key(record)")


def _check_files(files: Mapping[str, bytes]) -> dict[str, bytes]:
    if not isinstance(files, Mapping) or not files:
        raise ValueError("an entry needs at least one file: a mapping of file name to bytes")
    contents = {}
    for name, data in files.items():
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"file {name!r} must be bytes, not {type(data).__name__}")
        contents[check_file_name(name)] = bytes(data)
    return contents


def _check_build_wait(seconds: float) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
        raise ValueError(f"build_wait must be a number of seconds >= 0, not {seconds!r}")
    return float(seconds)


def _resolve_max_bytes(max_bytes: int | str | None) -> int:
    if max_bytes is None:
        return default_max_bytes()
    if isinstance(max_bytes, str):
        return parse_size(max_bytes, source="max_bytes")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(f"max_bytes must be a positive number of bytes, not {max_bytes!r}")
    return max_bytes
