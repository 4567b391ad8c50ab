"""Whom the cache trusts: what it loads must be yours (or root's) and writable by no one else.

The rule is OpenSSH's for its own files (``StrictModes``), docs/cache.md section 1:

- the cache root, and every folder and file the cache reads in it, is owned by the current user
  (``os.geteuid()``) or by root, and has neither the group nor the other write bit;
- every folder above the root is owned by the current user or root and is not writable by group
  or others unless it has the sticky bit (as ``/tmp`` has): then no one else can rename what is
  in it;
- files are opened with ``O_NOFOLLOW`` (and ``O_NONBLOCK``, so a FIFO cannot stall a reader) and
  checked on the opened descriptor (``fstat``), inside a folder opened and checked the same way,
  so the file checked is the file read, whatever happens to the paths meanwhile.

Root is trusted because it can change any of your files anyway.  A shared cache that belongs to
another account is trusted only when the user names that account (``pinned``).  On platforms
without POSIX owners (Windows) nothing is checked.

phobos-launch checks the folder of its native extension with a copy of the folder rule
(``phobos/launch/private.py``): it depends on nothing, so it cannot import this module.  Keep the
two the same.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Collection
from pathlib import Path

POSIX = hasattr(os, "geteuid") and os.open in os.supports_dir_fd
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_READ_FILE = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
_READ_FOLDER = os.O_RDONLY | _NOFOLLOW | _DIRECTORY | _CLOEXEC
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class Untrusted(PermissionError):
    """A file or folder the cache must not use; the message says whose it is or what is wrong."""


def you() -> int:
    return os.geteuid() if POSIX else 0


def default_owners() -> frozenset[int]:
    """Whose files the cache reads: yours and root's."""
    return frozenset({you(), 0})


def describe(uid: int) -> str:
    """``uid 65534 (nobody)``."""
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def owner_uid(name: str | int) -> int:
    """The uid of an account given by name or number; ``ValueError`` if there is none."""
    if isinstance(name, int) and not isinstance(name, bool):
        return name
    text = str(name).strip()
    if text.isdigit():
        return int(text)
    try:
        import pwd

        return pwd.getpwnam(text).pw_uid
    except (ImportError, KeyError):
        raise ValueError(f"no account is named {text!r}") from None


def status_problem(status: os.stat_result, owners: Collection[int]) -> str | None:
    """Why a file or folder with this ``stat`` may not be trusted, or None."""
    if not POSIX:
        return None
    if status.st_uid not in owners:
        return f"is owned by {describe(status.st_uid)}, not by you ({describe(you())})"
    if status.st_mode & _OTHERS_WRITE:
        who = "group and others" if status.st_mode & stat.S_IWOTH else "its group"
        if not status.st_mode & stat.S_IWGRP:
            who = "others"
        return f"is writable by {who} (mode {stat.S_IMODE(status.st_mode):04o})"
    return None


def root_problem(root: Path, owners: Collection[int] | None = None) -> str | None:
    """Why the existing folder ``root`` may not be trusted as a cache root, or None.

    The folder (symbolic links resolved) must pass ``status_problem``; each folder above it
    must be owned by you, root or ``owners`` and not be writable by others unless sticky."""
    if not POSIX:
        return None
    owners = frozenset(owners if owners is not None else default_owners())
    try:
        real = Path(os.path.realpath(root))
        status = os.stat(real)
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc})"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a folder"
    problem = status_problem(status, owners)
    if problem is not None:
        return problem
    above = owners | default_owners()
    for parent in real.parents:
        try:
            status = os.stat(parent)
        except OSError as exc:
            return f"is inside {parent}, which cannot be checked ({exc.strerror or exc})"
        if status.st_uid not in above:
            return f"is inside {parent}, which is owned by {describe(status.st_uid)}"
        if status.st_mode & _OTHERS_WRITE and not status.st_mode & stat.S_ISVTX:
            mode = stat.S_IMODE(status.st_mode)
            return f"is inside {parent}, which others can write to (mode {mode:04o})"
    return None


def make_parents(path: Path) -> None:
    """Create the missing folders above ``path`` as ``mkdir -p`` would, but never writable by
    group or others whatever the umask (else ``root_problem`` would refuse what was just made)."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    for parent in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o755)


def private_folder(path: Path, mode: int = 0o700) -> None:
    """Create the folder ``path`` (with ``mode``) or make sure the existing one may be used.

    A folder of yours that group or others may write to (an older Phobos made its folders
    with the umask) loses those bits.  ``Untrusted`` for another user's folder, one of root's
    that others may write to, or a symbolic link; another ``OSError`` when it cannot be
    created or is not a folder (a folder of root's is trusted, but writing in it will fail)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, mode)
    if not POSIX:
        return
    descriptor = _open(str(path), _READ_FOLDER, None)
    try:
        status = os.fstat(descriptor)
        if status.st_uid == you() and status.st_mode & _OTHERS_WRITE:
            os.fchmod(descriptor, stat.S_IMODE(status.st_mode) & ~_OTHERS_WRITE)
        elif (problem := status_problem(status, default_owners())) is not None:
            raise Untrusted(f"{path} {problem}")
    finally:
        os.close(descriptor)


class Folder:
    """An open, checked folder, to read checked files from (a context manager)."""

    def __init__(self, path: Path, owners: Collection[int]) -> None:
        self.path = path
        self.owners = owners
        self.descriptor: int | None = None
        if POSIX:
            self.descriptor = _open(str(path), _READ_FOLDER, None)
            try:
                _check(os.fstat(self.descriptor), owners, f"folder {path}", stat.S_ISDIR)
            except BaseException:
                self.close()
                raise

    def read(self, name: str, size: int | None = None, limit: int | None = None) -> bytes:
        """The bytes of the checked file ``name``.  With ``size``, a file of another size is
        refused without reading it (``WrongSize``); with ``limit``, so is a larger one."""
        if self.descriptor is None:
            data = (self.path / name).read_bytes()
            if size is not None and len(data) != size:
                raise WrongSize(name, len(data))
            return data
        descriptor = _open(name, _READ_FILE, self.descriptor)
        try:
            status = os.fstat(descriptor)
            _check(status, self.owners, repr(name), stat.S_ISREG)
            if size is not None and status.st_size != size:
                raise WrongSize(name, status.st_size)
            if limit is not None and status.st_size > limit:
                raise WrongSize(name, status.st_size)
            chunks = []
            left = status.st_size
            while left > 0:
                chunk = os.read(descriptor, min(left, 1 << 24))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            return b"".join(chunks)
        finally:
            os.close(descriptor)

    def close(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WrongSize(Exception):
    """A file whose size is not the expected one (it was not read)."""

    def __init__(self, name: str, size: int) -> None:
        super().__init__(name, size)
        self.name = name
        self.size = size


def _open(name: str, flags: int, folder: int | None) -> int:
    try:
        return os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(name, folder):
            raise Untrusted(f"{name} is a symbolic link") from None
        raise


def _is_link(name: str, folder: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=folder).st_mode)
    except OSError:
        return False


def _check(status: os.stat_result, owners: Collection[int], what: str, kind) -> None:
    if not kind(status.st_mode):
        raise Untrusted(f"{what} is not a {'folder' if kind is stat.S_ISDIR else 'regular file'}")
    problem = status_problem(status, owners)
    if problem is not None:
        raise Untrusted(f"{what} {problem}")
