"""The on-disk store: entries as folders under ``<root>/v1``, each renamed into place whole.

Every change is one ``rename`` inside the cache root: a put stages its files in ``v1/tmp``,
syncs them to the disk and renames the folder to ``v1/<key[:2]>/<key>``; a removal renames the
entry into ``v1/tmp`` before deleting it.  So a reader sees a whole entry or none, even after a
power loss, and a killed process leaves only a folder in ``v1/tmp``, which ``sweep_temp``
deletes once it is older than ``STALE_TEMP_SECONDS``.  Build locks live in ``v1/locks``
(``lock``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from phobos.cache.entry import Entry, EntryInfo
from phobos.cache.key import KEY_PATTERN
from phobos.cache.lock import LOCK_SUFFIX, Lock, build_lock, discard_if_free
from phobos.cache.manifest import (
    LAYOUT_VERSION,
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    CorruptEntry,
    check_contents,
    encode_manifest,
    parse_manifest,
    verify_files,
)
from phobos.cache.trust import (
    Folder,
    Untrusted,
    WrongSize,
    default_owners,
    make_parents,
    private_folder,
    root_problem,
)
from phobos.cache.warn import warn_corrupt

STALE_TEMP_SECONDS = 600
_STAGE_PREFIX = "stage-"
_TRASH_PREFIX = "trash-"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class DiskStore:
    """Entries in folders; every method is safe with other processes using the same root."""

    def __init__(self, root: Path, owners: Collection[int] | None = None) -> None:
        self.root = root
        self.owners = frozenset(owners) if owners is not None else default_owners()
        self._place(root)

    def open(self) -> None:
        """Create the folders (the root private to the user), check that they are the user's and
        prove they are writable.  ``Untrusted`` when the root may not be used (docs/cache.md,
        section 1); another ``OSError`` when it cannot be created or written."""
        try:
            os.stat(self.root)
        except (FileNotFoundError, NotADirectoryError):  # missing: create it, or fail trying
            make_parents(self.root)
            try:
                os.mkdir(self.root, 0o700)
                os.chmod(self.root, 0o700)  # whatever the umask
            except FileExistsError:
                pass
        except OSError as exc:
            raise Untrusted(f"{self.root} cannot be checked ({exc.strerror or exc})") from None
        real = Path(os.path.realpath(self.root))  # resolved once: checked and used
        problem = root_problem(real, self.owners)
        if problem is not None:
            raise Untrusted(f"{self.root} {problem}")
        self._place(real)
        for folder in (self.layout, self.temp, self.locks):
            private_folder(folder)
        probe = tempfile.mkdtemp(prefix=_TRASH_PREFIX, dir=self.temp)
        os.rmdir(probe)

    def _place(self, real_root: Path) -> None:
        """Work in the checked folder itself, not through a link that could be changed later."""
        self.layout = real_root / f"v{LAYOUT_VERSION}"
        self.temp = self.layout / "tmp"
        self.locks = self.layout / "locks"

    def folder(self, key: str) -> Path:
        return self.layout / key[:2] / key

    def load(self, key: str) -> Entry | None:
        """The verified entry, or None; a corrupt entry is removed with a warning."""
        folder = self.folder(key)
        for _ in range(2):
            identity = _identity(folder)
            if identity is None:
                return None
            try:
                manifest, files, _ = _read_verified(key, folder, self.owners)
            except CorruptEntry as problem:
                if _identity(folder) != identity:
                    continue  # removed or replaced while we read it: look again
                warn_corrupt(key, str(problem), removed=self._discard(folder))
                return None
            self.touch(key)
            return Entry(key, folder, manifest, files)
        return None

    def check(self, key: str) -> str | None:
        """What is wrong with the entry ``key``, or None; changes nothing, not even its last use."""
        folder = self.folder(key)
        try:
            _read_verified(key, folder, self.owners)
        except CorruptEntry as problem:
            return None if _identity(folder) is None else str(problem)
        return None

    def digest(self, key: str) -> str | None:
        """The sha256 of the good entry ``key``'s manifest (what ``pin`` records), or None."""
        try:
            return _read_verified(key, self.folder(key), self.owners)[2]
        except CorruptEntry:
            return None

    def publish(self, key: str, manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> Entry:
        """Stage the files and rename them into place; if another process won, return its entry."""
        folder = self.folder(key)
        staged = Path(tempfile.mkdtemp(prefix=f"{_STAGE_PREFIX}{key[:16]}-", dir=self.temp))
        try:
            for name, data in files.items():
                _write_synced(staged / name, data)
            _write_synced(staged / MANIFEST_NAME, encode_manifest(manifest))
            _sync_folder(staged)
            _make_shard(folder.parent, self._discard)
            for _ in range(3):
                if _rename_if_absent(staged, folder):
                    _sync_folder(folder.parent)
                    self.touch(key)
                    return Entry(key, folder, manifest, dict(files))
                winner = self.load(key)
                if winner is not None:
                    return winner
            raise OSError(f"could not place cache entry {key} in {folder.parent}")
        finally:
            shutil.rmtree(staged, ignore_errors=True)

    def build_lock(self, key: str, wait: float) -> AbstractContextManager[Lock]:
        """Hold ``key``'s build lock for the body, waiting at most ``wait`` seconds for it."""
        return build_lock(self.locks / f"{key}{LOCK_SUFFIX}", wait)

    def touch(self, key: str) -> None:
        """Mark the entry used now: its folder's mtime is its last use."""
        now = time.time_ns()
        with contextlib.suppress(OSError):  # a read-only or vanished entry keeps its old time
            os.utime(self.folder(key), ns=(now, now))

    def remove(self, key: str) -> bool:
        return self._discard(self.folder(key))

    def stored_keys(self) -> Iterator[str]:
        for shard in _scan(self.layout):
            try:
                if len(shard.name) != 2 or not shard.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            for item in _scan(Path(shard.path)):
                if KEY_PATTERN.fullmatch(item.name) and item.name.startswith(shard.name):
                    yield item.name

    def usage(self, key: str) -> tuple[int, float] | None:
        """Bytes on disk and last use of entry ``key``, from ``stat`` alone; None if it is gone."""
        folder = self.folder(key)
        try:
            last_used = folder.stat().st_mtime
            size = sum(item.stat(follow_symlinks=False).st_size for item in _scan(folder))
        except OSError:
            return None
        return size, last_used

    def info(self, key: str) -> EntryInfo | None:
        """The entry as listed; its manifest is read but its files are not checked."""
        found = self.usage(key)
        if found is None:
            return None
        size, last_used = found
        folder = self.folder(key)
        try:
            with Folder(folder, self.owners) as opened:
                manifest = parse_manifest(opened.read(MANIFEST_NAME, limit=MAX_MANIFEST_BYTES), key)
        except (OSError, CorruptEntry, WrongSize):
            manifest = {"record": {}, "created": 0.0}
        return EntryInfo(key, folder, manifest["record"], size, manifest["created"], last_used)

    def sweep_temp(self, max_age: float = STALE_TEMP_SECONDS) -> int:
        """Delete folders in ``v1/tmp`` older than ``max_age`` seconds: what a killed process
        left while staging or removing an entry.  Returns how many it deleted."""
        deadline = time.time() - max_age
        swept = 0
        for item in _scan(self.temp):
            try:
                stale = item.stat(follow_symlinks=False).st_mtime < deadline
            except OSError:
                continue
            if stale:
                shutil.rmtree(item.path, ignore_errors=True)
                swept += 1
        return swept

    def sweep_locks(self) -> int:
        """Delete the lock files no one holds: what killed builders left.  Returns how many."""
        locks = [item for item in _scan(self.locks) if item.name.endswith(LOCK_SUFFIX)]
        return sum(discard_if_free(Path(item.path)) for item in locks)

    def _discard(self, folder: Path) -> bool:
        """Take the entry out of sight with one rename, then delete it."""
        try:
            trash = Path(
                tempfile.mkdtemp(prefix=f"{_TRASH_PREFIX}{folder.name[:16]}-", dir=self.temp)
            )
        except OSError:
            return False
        try:
            os.rename(folder, trash / "entry")
        except OSError:
            return False
        finally:
            shutil.rmtree(trash, ignore_errors=True)
        return True


def _read_verified(
    key: str, folder: Path, owners: Collection[int], pin: str | None = None
) -> tuple[dict[str, Any], dict[str, bytes], str]:
    """The entry's manifest, its files (checked) and the manifest's sha256; ``CorruptEntry``
    says what is wrong.  Every file is read through the opened, checked entry folder, and is
    refused unless ``owners`` own it and no one else may write it (``trust``).  With ``pin``,
    the manifest must have that sha256 (a pinned entry of a shared cache)."""
    try:
        with Folder(folder, owners) as opened:
            try:
                data = opened.read(MANIFEST_NAME, limit=MAX_MANIFEST_BYTES)
            except WrongSize as large:
                raise CorruptEntry(f"{MANIFEST_NAME} has {large.size} bytes, too many") from None
            digest = hashlib.sha256(data).hexdigest()
            if pin is not None and digest != pin:
                raise CorruptEntry(f"{MANIFEST_NAME} is not the one its owner pinned")
            manifest = parse_manifest(data, key)
            files: dict[str, bytes] = {}
            for spec in manifest["files"]:
                name = spec["name"]
                try:
                    files[name] = opened.read(name, size=spec["size"])
                except FileNotFoundError:
                    continue  # verify_files names it as missing
                except WrongSize as wrong:
                    raise CorruptEntry(
                        f"file {name!r} has {wrong.size} bytes, the manifest says {spec['size']}"
                    ) from None
    except Untrusted as exc:
        raise CorruptEntry(str(exc)) from None
    except OSError as exc:
        what = getattr(exc, "filename", None) or MANIFEST_NAME
        raise CorruptEntry(f"cannot read {what}: {exc.strerror or exc}") from None
    verify_files(manifest, files)
    check_contents(files)
    return manifest, files, digest


def _write_synced(path: Path, data: bytes) -> None:
    """Write ``path`` and wait until its bytes are on the disk, so a power loss after the
    entry's rename cannot leave it with empty or torn files."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with open(os.open(path, flags, 0o600), "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def _sync_folder(folder: Path) -> None:
    """Make the names in ``folder`` durable; best effort, as some platforms and filesystems
    cannot sync a folder (the entry's check still catches what a crash leaves)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _make_shard(shard: Path, discard: Callable[[Path], bool]) -> None:
    """Create the shard folder if missing, durably, since the entry's name will be in it.

    A shard that is not the user's (only possible where an older root let others in) is put
    aside first, or, if that fails, ``Untrusted`` says so and the entry goes to memory."""
    for _ in range(2):
        try:
            shard.mkdir(mode=0o700)
        except FileExistsError:
            try:
                private_folder(shard)
                return
            except Untrusted:
                if not discard(shard):
                    raise
                continue
        _sync_folder(shard.parent)
        return
    private_folder(shard)


def _rename_if_absent(staged: Path, folder: Path) -> bool:
    """Rename ``staged`` to ``folder``; False if an entry is already there (a lost race)."""
    try:
        os.rename(staged, folder)
    except OSError:
        if _identity(folder) is None:
            raise
        return False
    return True


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        status = folder.stat()
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as items:
            return list(items)
    except OSError:
        return []
