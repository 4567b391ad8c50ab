"""The build lock: one process builds a missing entry while the others wait and then read it.

A build lock is an exclusive lock on ``<root>/v1/locks/<key>.lock``, taken with filelock's
``lock_descriptor`` (``flock`` on POSIX, ``LockFileEx`` on byte 0 on Windows) on a descriptor this
module opens and checks itself: filelock's ``FileLock`` checks less of a lock file than rule 3 of
docs/cache.md asks and keeps its file in place (docs/cache.md, section 7, says more).  The OS
releases the lock when its holder exits, however it exits, so a killed builder never blocks a
waiter for long.  The holder deletes the file before it lets go; so whoever gets the lock checks
that the file it locked is still the one at that path, and starts over if not.  Then a file left
behind by a killed process blocks no one, and housekeeping may delete it the same way.  Where files
cannot be locked (filelock not installed, a folder that cannot be written, a filesystem without
locks) the caller builds without a lock.  The protocol is specified in docs/cache.md, section 7.
"""

from __future__ import annotations

import contextlib
import enum
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from phobos.cache.trust import Untrusted, default_owners, status_problem

try:
    from filelock import lock_descriptor
except ImportError:  # sources on PYTHONPATH without filelock: every process builds for itself
    lock_descriptor = None  # type: ignore[assignment]

# Flags Windows lacks are left out (its descriptors are not inherited anyway, PEP 446).
_OPEN = os.O_RDWR | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
_OPEN |= getattr(os, "O_NONBLOCK", 0)

BUILD_WAIT_SECONDS = 120.0
LOCK_SUFFIX = ".lock"
_FIRST_PAUSE = 0.002  # polling for the lock starts fast and backs off to _LAST_PAUSE
_LAST_PAUSE = 0.05


class Lock(enum.Enum):
    """How a caller came to build: holding the lock, or without one."""

    HELD = "held"
    UNAVAILABLE = "unavailable"  # this folder or platform cannot lock
    TIMED_OUT = "timed out"  # another process held it for longer than the wait allowed


@contextlib.contextmanager
def build_lock(path: Path, wait: float) -> Iterator[Lock]:
    """Hold the build lock at ``path`` for the body, waiting at most ``wait`` seconds for it."""
    taken = _acquire(path, time.monotonic() + wait)
    if isinstance(taken, Lock):
        yield taken
        return
    try:
        yield Lock.HELD
    finally:
        _release(path, taken)


def discard_if_free(path: Path) -> bool:
    """Delete the lock file at ``path`` if no one holds it (a killed builder's); True if deleted."""
    if lock_descriptor is None:
        return False
    try:
        descriptor = _open(path, create=False)
    except OSError:
        return False
    try:
        if _try_lock(descriptor) and _is_current(descriptor, path):
            os.unlink(path)
            return True
    except OSError:
        pass
    finally:
        os.close(descriptor)
    return False


def _acquire(path: Path, deadline: float) -> int | Lock:
    """The locked descriptor of the file now at ``path``, or why there is none."""
    if lock_descriptor is None:
        return Lock.UNAVAILABLE
    pause = _FIRST_PAUSE
    while True:
        try:
            descriptor = _open(path, create=True)
        except OSError:
            return Lock.UNAVAILABLE
        try:
            while not _try_lock(descriptor):
                left = deadline - time.monotonic()
                if left <= 0:
                    os.close(descriptor)
                    return Lock.TIMED_OUT
                time.sleep(min(pause, left))
                pause = min(pause * 2, _LAST_PAUSE)
            if _is_current(descriptor, path):
                return descriptor
        except OSError:  # e.g. ENOLCK: a filesystem without locks
            os.close(descriptor)
            return Lock.UNAVAILABLE
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)  # its holder deleted it before letting go: lock the new one


def _release(path: Path, descriptor: int) -> None:
    """Delete the lock file while still holding it, then let go (closing releases the lock)."""
    try:
        if _is_current(descriptor, path):
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _open(path: Path, create: bool) -> int:
    """The lock file, never through a symbolic link; one that is not yours is not used (an
    ``OSError``), so no one else can hold up your builds with it."""
    descriptor = os.open(path, _OPEN | (os.O_CREAT if create else 0), 0o600)
    try:
        status = os.fstat(descriptor)
        if status_problem(status, default_owners()) is not None or not stat.S_ISREG(status.st_mode):
            raise Untrusted(f"{path} is not yours or not a file")
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _try_lock(descriptor: int) -> bool:
    """Lock without waiting: False if another holds it, an ``OSError`` if it cannot be locked."""
    return lock_descriptor(descriptor, blocking=False)


def _is_current(descriptor: int, path: Path) -> bool:
    """True when ``descriptor`` is the file now at ``path`` (not one deleted since it was opened)."""
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)
