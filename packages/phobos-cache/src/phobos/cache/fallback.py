"""What the cache does when it may not write its folder: new entries go to memory.

- A folder that cannot be written (``fallback_store``): entries already on disk are still read
  (and checked), so a read-only cache, baked into an image for example, still serves its
  kernels; what this process builds lives only as long as it does.
- A folder that may not be trusted (``refused_store``: another user's, or one others may write
  to, docs/cache.md section 1): nothing in it is read at all.
- A shared cache that another account pinned (``pinned``): its pinned entries are read.

Each problem is said once per process, with one ``CacheWarning``.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

from phobos.cache.disk import DiskStore
from phobos.cache.entry import Entry, EntryInfo
from phobos.cache.location import ROOT_ENV, TRUSTED_OWNER_ENV
from phobos.cache.lock import Lock
from phobos.cache.memory import MemoryStore
from phobos.cache.warn import CacheWarning, warn_once

_memory_stores: dict[str, MemoryStore] = {}
_warned_unwritable = False
_lock = threading.Lock()


class Below(Protocol):
    """What ``MemoryOverDisk`` reads under its memory: a disk store, or nothing."""

    root: Path

    def load(self, key: str) -> Entry | None: ...
    def check(self, key: str) -> str | None: ...
    def remove(self, key: str) -> bool: ...
    def stored_keys(self) -> Iterator[str]: ...
    def info(self, key: str) -> EntryInfo | None: ...
    def folder(self, key: str) -> Path | None: ...


class NoDisk:
    """A refused folder, as the cache sees it: empty."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def load(self, key: str) -> Entry | None:
        return None

    def check(self, key: str) -> str | None:
        return None

    def remove(self, key: str) -> bool:
        return False

    def stored_keys(self) -> Iterator[str]:
        return iter(())

    def info(self, key: str) -> EntryInfo | None:
        return None

    def folder(self, key: str) -> Path | None:
        return None


class MemoryOverDisk:
    """Writes to a process-wide memory store for the root; reads memory, then the disk."""

    def __init__(self, memory: MemoryStore, disk: Below) -> None:
        self.memory = memory
        self.disk = disk

    def load(self, key: str) -> Entry | None:
        return self.memory.load(key) or self.disk.load(key)

    def check(self, key: str) -> str | None:
        return None if self.memory.usage(key) else self.disk.check(key)

    def publish(self, key: str, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> Entry:
        return self.memory.publish(key, manifest, files)

    def build_lock(self, key: str, wait: float) -> AbstractContextManager[Lock]:
        """No lock: the folder cannot be written, so other processes could not see our entry."""
        return nullcontext(Lock.UNAVAILABLE)

    def touch(self, key: str) -> None:
        self.memory.touch(key)

    def remove(self, key: str) -> bool:
        return self.memory.remove(key) or self.disk.remove(key)

    def stored_keys(self) -> Iterator[str]:
        in_memory = set(self.memory.stored_keys())
        return iter(in_memory | set(self.disk.stored_keys()))

    def usage(self, key: str) -> tuple[int, float] | None:
        """Only the memory's entries count against the bound: the disk's are not ours to evict."""
        return self.memory.usage(key)

    def info(self, key: str) -> EntryInfo | None:
        return self.memory.info(key) or self.disk.info(key)

    def sweep_temp(self) -> int:
        return 0

    def sweep_locks(self) -> int:
        return 0

    def folder(self, key: str) -> Path | None:
        """The entry's folder when it is read from disk; None when it is held in memory."""
        return None if self.memory.usage(key) else self.disk.folder(key)


def fallback_store(disk: DiskStore, reason: OSError) -> MemoryOverDisk:
    """The fallback for ``disk``'s root; the first time in a process, warn with ``reason``."""
    global _warned_unwritable
    with _lock:
        if not _warned_unwritable:
            _warned_unwritable = True
            warnings.warn(
                f"phobos cache: cannot write to {disk.root} ({reason}); kernels built in this "
                f"process are cached in memory only and will compile again next time. Set "
                f"{ROOT_ENV} to a writable folder.",
                CacheWarning,
                stacklevel=3,
            )
    return over(disk)


def refused_store(root: Path, problem: str) -> MemoryOverDisk:
    """Memory only, for a root that may not be trusted; warn once per process and problem."""
    warn_once(
        f"refused {problem}",
        f"phobos cache: not using the cache folder: {problem}, so another user could plant "
        f"kernels in it. Kernels built in this process are cached in memory only. Use a folder "
        f"only you can write (unset {ROOT_ENV} for your own default, or point it at a new "
        f"folder), or, for a shared cache its owner pinned for you, set {TRUSTED_OWNER_ENV} "
        "to that owner (docs/cache.md, section 1).",
    )
    return over(NoDisk(root))


def over(below: Below) -> MemoryOverDisk:
    """The process's memory store for ``below``'s root, over ``below``."""
    with _lock:
        key = str(Path(below.root).absolute())
        memory = _memory_stores.setdefault(key, MemoryStore(below.root))
    return MemoryOverDisk(memory, below)
