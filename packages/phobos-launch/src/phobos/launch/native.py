"""The native fast path: ``native_fast_launch.c`` built on first use, one ``FastLaunch`` per signature.

The generated Python of fastpath.py leaves the interpreter between every array
accessor and ctypes between the launch and the driver; together they cost more than
the driver's own launch.  This module compiles a small C extension once per machine
and Python (with the C compiler Python was built with, the way Triton builds its
launcher), keeps it under the Phobos cache folder, and makes one ``FastLaunch`` per
call signature, GPU and thread from the same ``LaunchTable`` as the generated Python
(table.py; ``table.c_header()`` declares the C struct, written where it is compiled).

Where it cannot be used (no C compiler or Python headers, a driver without C entry
points such as a test's fake made without them, ``PHOBOS_NATIVE_LAUNCH=0``) the
generated Python is used: the native path changes how fast a launch goes, never
what it does.  ``native_status()`` (``python -m phobos.launch``) says which applies.

Loading a shared library runs its code, so the extension is only loaded from a folder
only you can write (``private``: yours, no group or other write bit, nor on the way to
it, as docs/cache.md section 1 says of the cache), and only when its sha256 is the one
recorded beside it when it was built.  A cache folder that fails the check is not used
at all: the extension is built in a private temporary folder for the process, with one
``LaunchWarning``; a build that fails its sha256 is built again, with one warning too.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from phobos.launch.errors import LaunchWarning
from phobos.launch.private import Untrusted, folder_problem, make_folder, read_checked
from phobos.launch.table import FastLaunch, LaunchTable, Read, c_header

try:
    import fcntl
except ImportError:  # Windows: builds are not serialised
    fcntl = None  # type: ignore[assignment]

SOURCE = Path(__file__).with_name("native_fast_launch.c")
MODULE_NAME = "phobos_native_launch"
SWITCH_ENV = "PHOBOS_NATIVE_LAUNCH"  # "0" turns the native path off
CACHE_ENV = "PHOBOS_CACHE_DIR"
BUILD_TIMEOUT_S = 120
DIGEST_SUFFIX = ".sha256"  # beside each build: the sha256 of the file as it was built
LOCK_NAME = f"{MODULE_NAME}.lock"  # processes building at once take turns on it

HEADER = "phobos_launch_table.h"  # table.c_header(), written beside the source for a build
_lock = threading.Lock()
_module: ModuleType | None = None
_status: str | None = None  # why there is no module, once a build was tried
_said: set[str] = set()  # the warnings given in this process
_said_lock = threading.Lock()


def native_launch(table: LaunchTable) -> FastLaunch | None:
    """The native fast path made from ``table``, or ``None`` where it does not apply (no C entry
    points, as in a test's fake driver made without them; no extension)."""
    cai = any(table.tensors[i].read == Read.CAI for i in range(table.ntensors))
    if not table.launch or (cai and not table.pointer_attribute):
        return None
    module = native_module()
    return None if module is None else module.FastLaunch(table)


class SteadyState:
    """The steady state of a caller's launches, which ``steady_call``'s ``SteadyCall`` reads.

    ``last_launch`` is ``(values, loaded)``: the keyword values of the caller's last
    launch and the ``LoadedKernel`` it used (phobos.lang: the last GPU launch that fixed
    every compile-time name), or None.
    """

    __slots__ = ("last_launch",)

    def __init__(self) -> None:
        self.last_launch: tuple[dict[str, int], Any] | None = None


def steady_call(state: SteadyState, grid: Any, fallback: Callable[..., None]) -> Any | None:
    """A launch function with its steady state in C, or ``None`` without the module.

    The steady state: ``state.last_launch`` is ``(values, loaded)`` and the call's
    keywords (less ``stream=`` and a false ``race_check=``) equal ``values``; the call
    then goes to ``loaded.try_launch(grid, args, stream)``.  Every other call, and any
    launch that does not return 0, goes to ``fallback`` with the call's own arguments.
    """
    module = native_module()
    return None if module is None else module.SteadyCall(state, grid, fallback)


def native_module() -> ModuleType | None:
    """The compiled extension (built or found on first use), or ``None`` where it cannot be."""
    global _module, _status
    if os.environ.get(SWITCH_ENV, "1") == "0":
        return None
    if _module is not None or _status is not None:
        return _module
    with _lock:
        if _module is None and _status is None:
            try:
                _module = _find_and_load(build_folder())
            except (OSError, ImportError, BuildFailed) as exc:
                _status = f"the native launch path is off: {exc}"
    return _module


def native_status() -> str:
    """Whether launches use the native path, and if not, why (builds it if not yet tried)."""
    if os.environ.get(SWITCH_ENV, "1") == "0":
        return f"the native launch path is off: {SWITCH_ENV}=0"
    module = native_module()
    if module is None:
        return _status or "the native launch path is off"
    where = module.__file__
    if not os.path.exists(where):
        where += ", built privately for this process"
    return f"the native launch path is on ({where})"


class BuildFailed(RuntimeError):
    """The C compiler refused or is missing; the message carries its first lines of output."""


def build_folder() -> Path:
    """Where the extension is kept: ``$PHOBOS_CACHE_DIR/native``, else ``native`` in the user's
    cache folder (the kernel cache's default root, docs/cache.md section 1: this repeats
    ``phobos.cache.default_root``, which phobos-launch cannot import)."""
    root = os.environ.get(CACHE_ENV, "").strip()
    if root:
        return Path(root).expanduser() / "native"
    try:
        import platformdirs
    except ImportError:
        return _user_cache_dir() / "native"
    return Path(platformdirs.user_cache_dir("phobos", appauthor=False)) / "native"


def _user_cache_dir() -> Path:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA", "").strip() or str(Path.home() / "AppData" / "Local")
        return Path(base) / "phobos" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "phobos"
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return Path(base or Path.home() / ".cache") / "phobos"


def extension_name() -> str:
    """The file name of this build: a hash of the source, the Python and the compiler, so an
    upgrade builds afresh."""
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    built = SOURCE.read_bytes() + c_header().encode() + sys.version.encode()
    tag = hashlib.sha256(built + " ".join(compiler).encode())
    return f"{MODULE_NAME}-{tag.hexdigest()[:16]}{suffix}"


def _find_and_load(folder: Path) -> ModuleType:
    """The extension from ``folder`` if it may be trusted; else one built privately."""
    try:
        make_folder(folder.parent, tighten=False)  # the cache root: 0700 when made here
        root = Path(os.path.realpath(folder.parent))  # resolved once: checked and used
        problem = folder_problem(root)
        if problem is not None:
            raise Untrusted(f"{folder.parent} {problem}")
        path = build_extension(root / folder.name)
    except Untrusted as exc:
        _warn_once(
            f"phobos launch: not loading the native launcher from {folder}: {exc}, so another "
            "user could plant code there; building it in a private temporary folder for this "
            f"process instead. Use a cache folder only you can write (unset {CACHE_ENV} for "
            "your own default, or point it at a new folder)."
        )
        with tempfile.TemporaryDirectory(prefix="phobos-native-") as private:
            return _load(build_extension(Path(private)))  # loaded, the file may go
    return _load(path)


def build_extension(folder: Path) -> Path:
    """The extension's path in ``folder``, compiled there first unless a good build is present.

    ``folder`` is created private (0700) if missing, and must pass the trust check
    (``private``), else ``Untrusted``.  A build is good when it is yours, writable by no one
    else, and has the sha256 recorded beside it (``<name>.sha256``) when it was built; any
    other is built again (with a ``LaunchWarning`` unless it is an older Phobos's, which
    recorded nothing).  Processes building at once take turns on a lock file, and a build goes
    to a temporary name first and is renamed, so no process loads a half-written file.
    """
    make_folder(folder, tighten=True)
    real = Path(os.path.realpath(folder))  # resolved once: checked and used
    problem = folder_problem(real)
    if problem is not None:
        raise Untrusted(f"{folder} {problem}")
    folder = real
    path = folder / extension_name()
    record = path.with_name(path.name + DIGEST_SUFFIX)
    with _build_lock(folder):
        found = _check_build(path, record)
        if found is None:
            return path
        if found:
            _warn_once(f"phobos launch: {found}; building the native launcher again")
        _compile(path, record)
    _remove_older_builds(folder, path)
    return path


def _check_build(path: Path, record: Path) -> str | None:
    """None for a good build; why it is not one; "" when there is none or it has no record."""
    try:
        data = read_checked(path)
        recorded = read_checked(record).decode("ascii", "replace").strip()
    except FileNotFoundError:
        return ""
    except OSError as exc:  # Untrusted says whose it is
        return str(exc)
    if hashlib.sha256(data).hexdigest() != recorded:
        return f"{path} does not have the sha256 recorded when it was built"
    return None


def _compile(path: Path, record: Path) -> None:
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    includes = {sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"]}
    fd, temporary = tempfile.mkstemp(suffix=suffix, dir=path.parent)
    os.close(fd)
    header = tempfile.TemporaryDirectory(prefix="phobos-native-header-")
    (Path(header.name) / HEADER).write_text(c_header())
    command = [
        *compiler,
        "-O2",
        "-shared",
        "-fPIC",
        f"-I{header.name}",
        *(f"-I{include}" for include in sorted(includes)),
        str(SOURCE),
        "-o",
        temporary,
    ]
    try:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BuildFailed(f"{compiler[0]} could not run ({exc})") from None
        if done.returncode:
            lines = (done.stderr or done.stdout).strip().splitlines()
            errors = [line for line in lines if "error" in line] or lines
            raise BuildFailed(
                f"{compiler[0]} failed building {SOURCE.name}: " + " | ".join(errors[:3])
            )
        os.chmod(temporary, 0o700)  # the compiler may have made it with the umask's mode
        digest = hashlib.sha256(read_checked(Path(temporary))).hexdigest()
        with contextlib.suppress(FileNotFoundError):
            record.unlink()  # from here until the new record, the build counts as missing
        os.replace(temporary, path)
        _write_private(record, f"{digest}\n".encode())
    finally:
        header.cleanup()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` (mode 0600) through a temporary file and a rename."""
    fd, temporary = tempfile.mkstemp(dir=path.parent)
    try:
        with open(fd, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


@contextlib.contextmanager
def _build_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder``'s lock file (not removed; it is empty)."""
    if fcntl is None:
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(folder / LOCK_NAME, flags, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _remove_older_builds(folder: Path, kept: Path) -> None:
    """Other builds for this Python (an earlier Phobos's source) are never loaded again."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    keep = {kept.name, kept.name + DIGEST_SUFFIX}
    for pattern in (f"{MODULE_NAME}-*{suffix}", f"{MODULE_NAME}-*{suffix}{DIGEST_SUFFIX}"):
        for other in folder.glob(pattern):
            if other.name not in keep:
                with contextlib.suppress(OSError):  # another process may be at it: only disk
                    other.unlink()


def _warn_once(message: str) -> None:
    """One clean line per problem and process, attributed to phobos.launch, not to a line."""
    with _said_lock:
        if message in _said:
            return
        _said.add(message)
    warnings.warn_explicit(message, LaunchWarning, "phobos.launch", 0, module="phobos.launch")


def _load(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path, loader=loader)
    if spec is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
