"""A shared, read-only cache that another account owns and pins (docs/cache.md, section 1).

An inference fleet's cache, say: one account builds it, many read it.  The owner runs
``phobos-cache pin``, which checks every entry, writes ``ROOT/v1/pins.json`` (the sha256 of each
good entry's manifest, which holds the sha256 of each of the entry's files) and makes the root
readable, never writable, by others.  A user who trusts that account names it
(``Cache(trusted_owner=...)``, ``$PHOBOS_CACHE_TRUSTED_OWNER``).  Then the root is read and never
written: an entry is served only when it is pinned and its manifest has the pinned sha256, and
the root, the pins and every file read belong to that account (or root) and no one else may
write them.  What such a process builds is kept in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Collection, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from phobos.cache.disk import DiskStore, _identity, _read_verified, _sync_folder
from phobos.cache.entry import Entry
from phobos.cache.key import KEY_PATTERN
from phobos.cache.lock import Lock
from phobos.cache.manifest import LAYOUT_VERSION, CorruptEntry, parse_json_object
from phobos.cache.trust import Folder, Untrusted, WrongSize, describe, root_problem
from phobos.cache.warn import warn_once

PINS_NAME = "pins.json"
MAX_PINS_BYTES = 64 * 1024**2
_DIGEST_LENGTH = 64


class PinnedStore(DiskStore):
    """Another account's cache root, read through its pins; every write is refused."""

    def __init__(self, root: Path, owner: int) -> None:
        super().__init__(root, {owner, 0})
        self.owner = owner
        self.pins: dict[str, str] = {}

    def open(self) -> None:
        """Check the root and read the pins; ``Untrusted`` says why the root cannot be used."""
        real = Path(os.path.realpath(self.root))  # resolved once: checked and used
        problem = root_problem(real, self.owners)
        if problem is not None:
            raise Untrusted(f"{self.root} {problem}")
        self._place(real)
        where = self.layout / PINS_NAME
        try:
            with Folder(self.layout, self.owners) as layout:
                data = layout.read(PINS_NAME, limit=MAX_PINS_BYTES)
        except FileNotFoundError:
            raise Untrusted(
                f"{self.root} has no {where}: its owner ({describe(self.owner)}) has not run "
                "phobos-cache pin"
            ) from None
        except WrongSize as large:
            raise Untrusted(f"{where} has {large.size} bytes, too many") from None
        except Untrusted as exc:
            raise Untrusted(f"{self.root}: {exc}") from None
        except OSError as exc:
            raise Untrusted(f"{where} cannot be read ({exc.strerror or exc})") from None
        try:
            self.pins = parse_pins(data)
        except CorruptEntry as exc:
            raise Untrusted(f"{where} is not a pins file ({exc})") from None

    def load(self, key: str) -> Entry | None:
        pin = self.pins.get(key)
        if pin is None:
            return None
        folder = self.folder(key)
        try:
            manifest, files, _ = _read_verified(key, folder, self.owners, pin)
        except CorruptEntry as problem:
            if _identity(folder) is not None:
                warn_once(
                    f"pinned {folder}: {problem}",
                    f"phobos cache: pinned entry {key} of the shared cache {self.root} fails its "
                    f"check ({problem}); not using it. Its owner ({describe(self.owner)}) can "
                    "run phobos-cache verify, then pin again.",
                )
            return None
        return Entry(key, folder, manifest, files)

    def check(self, key: str) -> str | None:
        pin = self.pins.get(key)
        folder = self.folder(key)
        if pin is None:
            return None if _identity(folder) is None else "it is not pinned"
        try:
            _read_verified(key, folder, self.owners, pin)
        except CorruptEntry as problem:
            return None if _identity(folder) is None else str(problem)
        return None

    def publish(self, key: str, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> Entry:
        raise Untrusted(f"{self.root} is another account's shared cache: it is read-only")

    def build_lock(self, key: str, wait: float) -> AbstractContextManager[Lock]:
        return nullcontext(Lock.UNAVAILABLE)

    def touch(self, key: str) -> None:
        """A shared cache's last-use times are its owner's."""

    def remove(self, key: str) -> bool:
        return False

    def stored_keys(self) -> Iterator[str]:
        """The pinned entries that are there (any others are not listed, nor read)."""
        return (key for key in list(self.pins) if _identity(self.folder(key)) is not None)

    def sweep_temp(self, max_age: float = 0) -> int:
        return 0

    def sweep_locks(self) -> int:
        return 0


def parse_pins(data: bytes) -> dict[str, str]:
    """The pins in ``data``: key to sha256 of the entry's manifest; ``CorruptEntry`` if malformed."""
    pins = parse_json_object(data, PINS_NAME)
    if pins.get("layout_version") != LAYOUT_VERSION:
        raise CorruptEntry(f"layout_version is {pins.get('layout_version')!r}, not 1")
    entries = pins.get("entries")
    if not isinstance(entries, dict):
        raise CorruptEntry("'entries' is not an object")
    for key, digest in entries.items():
        if not KEY_PATTERN.fullmatch(key) or not _is_digest(digest):
            raise CorruptEntry(f"entry {key[:80]!r} is not a key and a sha256")
    return dict(entries)


def write_pins(disk: DiskStore, pins: Mapping[str, str]) -> Path:
    """Write ``ROOT/v1/pins.json`` for ``pins`` atomically (a rename), readable by everyone."""
    data = json.dumps(
        {"layout_version": LAYOUT_VERSION, "entries": dict(sorted(pins.items()))}, indent=2
    ).encode()
    descriptor, staged = tempfile.mkstemp(prefix="pins-", dir=disk.temp)
    try:
        with open(descriptor, "wb") as file:
            file.write(data + b"\n")
            file.flush()
            os.fsync(file.fileno())
        os.chmod(staged, 0o644)
        target = disk.layout / PINS_NAME
        os.replace(staged, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise
    _sync_folder(disk.layout)
    return target


def share(disk: DiskStore, keys: Collection[str]) -> None:
    """Let everyone read (never write) the root, ``v1``, the pins and the entries ``keys``."""
    folders = [Path(os.path.realpath(disk.root)), disk.layout]
    for key in keys:
        entry = disk.folder(key)
        folders += [entry.parent, entry]
    for folder in dict.fromkeys(folders):
        _open_up(folder, 0o755)
    _open_up(disk.layout / PINS_NAME, 0o644)
    for key in keys:
        for item in os.scandir(disk.folder(key)):
            if item.is_file(follow_symlinks=False):
                _open_up(Path(item.path), 0o644)


def _open_up(path: Path, readable: int) -> None:
    mode = os.stat(path, follow_symlinks=False).st_mode & 0o7777
    os.chmod(path, (mode | readable) & ~0o022)


def _is_digest(value: object) -> bool:
    return (
        isinstance(value, str)
        and len(value) == _DIGEST_LENGTH
        and all(c in "0123456789abcdef" for c in value)
    )
