"""Is a folder safe to load code from: the check made before the native extension is loaded.

The rule is the kernel cache's (docs/cache.md, section 1), which is OpenSSH's for its own
files: the folder is owned by you (``os.geteuid()``) or root and neither its group nor others
may write to it; each folder above it is owned by you or root and is not writable by others
unless it has the sticky bit (as ``/tmp`` has), so no one else can rename what is in it.  Files
are opened with ``O_NOFOLLOW`` and checked on the opened descriptor, so the file checked is the
file read.  Root is trusted because it can change any of your files anyway.

This is a copy of part of ``phobos.cache.trust``: phobos-launch depends on nothing but the
standard library, so it cannot import phobos-cache.  Keep the two rules the same.  On platforms
without POSIX owners (Windows) nothing is checked.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

POSIX = hasattr(os, "geteuid")
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_READ_FILE = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_READ_FOLDER = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class Untrusted(PermissionError):
    """A file or folder not to load code from; the message says whose it is or what is wrong."""


def problem_of(status: os.stat_result) -> str | None:
    """Why a file or folder with this ``stat`` may not be trusted, or None."""
    if not POSIX:
        return None
    if status.st_uid not in (os.geteuid(), 0):
        return f"is owned by {_describe(status.st_uid)}, not by you ({_describe(os.geteuid())})"
    if status.st_mode & _OTHERS_WRITE:
        return f"is writable by others than you (mode {stat.S_IMODE(status.st_mode):04o})"
    return None


def folder_problem(path: Path) -> str | None:
    """Why the existing folder ``path`` (links resolved) may not be trusted, or None."""
    if not POSIX:
        return None
    try:
        real = Path(os.path.realpath(path))
        status = os.stat(real)
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc})"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a folder"
    problem = problem_of(status)
    if problem is not None:
        return problem
    for parent in real.parents:
        try:
            status = os.stat(parent)
        except OSError as exc:
            return f"is inside {parent}, which cannot be checked ({exc.strerror or exc})"
        if status.st_uid not in (os.geteuid(), 0):
            return f"is inside {parent}, which is owned by {_describe(status.st_uid)}"
        if status.st_mode & _OTHERS_WRITE and not status.st_mode & stat.S_ISVTX:
            mode = stat.S_IMODE(status.st_mode)
            return f"is inside {parent}, which others can write to (mode {mode:04o})"
    return None


def make_folder(path: Path, tighten: bool) -> None:
    """Create the folder ``path`` private to you (mode 0700) if it is missing.  With
    ``tighten``, an existing folder of yours that others may write to loses those bits (an
    older Phobos made it with the umask); someone else's is left alone."""
    make_parents(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if tighten and POSIX:
            _tighten(path)
        return
    os.chmod(path, 0o700)  # whatever the umask


def make_parents(path: Path) -> None:
    """Create the missing folders above ``path`` as ``mkdir -p`` would, but never writable by
    group or others whatever the umask (else the check would refuse what was just made)."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(parent)
    for parent in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o755)


def read_checked(path: Path) -> bytes:
    """The bytes of the file at ``path``, which must be yours (or root's), a regular file and
    writable by no one else; ``Untrusted`` if not, ``FileNotFoundError`` if it is missing."""
    try:
        descriptor = os.open(path, _READ_FILE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Untrusted(f"{path} is a symbolic link") from None
        raise
    with open(descriptor, "rb") as file:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise Untrusted(f"{path} is not a regular file")
        problem = problem_of(status)
        if problem is not None:
            raise Untrusted(f"{path} {problem}")
        return file.read()


def _tighten(path: Path) -> None:
    try:
        descriptor = os.open(path, _READ_FOLDER)
    except OSError:
        return  # folder_problem says what is wrong with it
    with contextlib.suppress(OSError):
        status = os.fstat(descriptor)
        if status.st_uid == os.geteuid() and status.st_mode & _OTHERS_WRITE:
            os.fchmod(descriptor, stat.S_IMODE(status.st_mode) & ~_OTHERS_WRITE)
    os.close(descriptor)


def _describe(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"
