"""The native fast path: ``native_fast_launch.c`` built on first use, one ``FastLaunch`` per signature.

The generated Python of fastpath.py leaves the interpreter between every array
accessor and ctypes between the launch and the driver; together they cost more
than the driver's own launch.  This module compiles a small C extension once per
machine and Python (with the C compiler Python was built with, the way Triton
builds its launcher), keeps it under the Phobos cache folder, and makes one
``FastLaunch`` per call signature, GPU and thread: torch tensors read through their
accessors, other arrays through ``__cuda_array_interface__`` (the driver asked from
C which GPU holds each pointer), and scalars.  It makes every check the generated
Python makes, from the same ``ArgumentBinder`` tables, and writes the same launch
block.

Where it cannot be used (no C compiler or Python headers, a driver without C entry
points such as a test's fake made without them, ``PHOBOS_NATIVE_LAUNCH=0``) the
generated Python is used: the native path changes how fast a launch goes, never
what it does.  ``native_status()`` (``python -m phobos.launch``) says which applies.
"""

from __future__ import annotations

import contextlib
import ctypes
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
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from phobos.launch.arrays import read_cai, read_torch
from phobos.launch.binder import SCALAR, ArgumentBinder, Plan
from phobos.launch.dtypes import ITEMSIZE, from_torch, from_typestr
from phobos.launch.fastpath import FastLaunch, LaunchTarget, tensor_reads
from phobos.launch.grid import MAX_GRID
from phobos.launch.params import CONFIG_SIZE
from phobos.launch.streams import stream_handle

SOURCE = Path(__file__).with_name("native_fast_launch.c")
MODULE_NAME = "phobos_native_launch"
SWITCH_ENV = "PHOBOS_NATIVE_LAUNCH"  # "0" turns the native path off
CACHE_ENV = "PHOBOS_CACHE_DIR"
BUILD_TIMEOUT_S = 120

# The slot types in the order of the C enum (native_fast_launch.c).
SLOT_TYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
              "f16", "bf16", "f32", "f64")  # fmt: skip

_lock = threading.Lock()
_module: ModuleType | None = None
_status: str | None = None  # why there is no module, once a build was tried


def native_launch(
    binder: ArgumentBinder, plan: Plan, args: Any, target: LaunchTarget
) -> FastLaunch | None:
    """The native fast path for ``plan`` on ``target``, or ``None`` where it does not apply.

    ``args`` passed the reference checks with ``plan``; their types and torch dtype
    objects are what later launches are compared with, by identity.
    """
    if target.launch_entry is None or any(r not in (read_torch, read_cai) for r in plan.readers):
        return None
    if read_cai in plan.readers and target.pointer_entry is None:
        return None
    module = native_module()
    if module is None:
        return None
    strided = binder.strided_tensors()
    tensors = []
    for i, (check, reader) in enumerate(zip(binder.tensors, plan.readers)):
        arg = args[check.position]
        needs_strides, check_contiguous, span_check = tensor_reads(binder, check, i in strided)
        if reader is read_cai:
            dtype = arg.__cuda_array_interface__["typestr"]  # compared as the array spells it
            if from_typestr(dtype) != check.dtype:
                return None
            needs_strides, check_contiguous = True, False
        else:
            dtype = arg.dtype
            if from_torch(dtype) != check.dtype:
                return None
        tensors.append(
            (check.position, type(arg), dtype, check.rank, check.align, check.unit_stride,
             needs_strides, check_contiguous, span_check, ITEMSIZE[check.dtype],
             reader is read_cai, check.written)
        )  # fmt: skip
    block = target.block
    slots = []
    for (kind, a, b), slot, offset in zip(
        binder.slot_sources, binder.contract.slots, block.offsets
    ):
        reader = partial(binder.read_scalar, a) if kind == SCALAR else None
        slots.append((kind, a, b, SLOT_TYPES.index(slot.type), offset, reader))
    config = ctypes.addressof(block.config)
    keep = (block, target, tuple(tensors), tuple(slots))  # what the C side borrows
    return module.FastLaunch(
        target.owner,
        target.other_thread,
        plan.current_stream,
        stream_handle,
        dict(target.meta),
        binder.count,
        tuple(tensors),
        tuple(binder.extent_sources),
        tuple(binder.extent_checks),
        tuple(binder.literal_checks),
        binder.index32,
        target.device,
        tuple(slots),
        tuple(binder.extent_names),
        keep,
        target.launch_entry,
        target.pointer_entry or 0,
        target.function.value or 0,
        config,
        config + CONFIG_SIZE,
        ctypes.addressof(block.pointers),
        block.cta,
        block.dynamic_smem,
        MAX_GRID,
    )


def steady_call(kernel: Any, grid: Any, fallback: Any) -> Any | None:
    """phobos.lang's ``kernel[grid]`` with its steady state in C, or ``None`` without the module.

    The steady state: ``kernel.last_launch`` is ``(values, loaded)`` and the call's
    keywords (less ``stream=``) equal ``values``; the call then goes to
    ``loaded.try_launch(grid, args, stream)``.  Every other call, and any launch that
    does not return 0, goes to ``fallback`` with the call's own arguments.
    """
    module = native_module()
    return None if module is None else module.SteadyCall(kernel, grid, fallback)


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
                _module = _load(build_extension(build_folder()))
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
    return f"the native launch path is on ({module.__file__})"


class BuildFailed(RuntimeError):
    """The C compiler refused or is missing; the message carries its first lines of output."""


def build_folder() -> Path:
    """Where the extension is kept: ``$PHOBOS_CACHE_DIR/native``, else the user's cache folder."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return Path(root) / "native"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "phobos" / "native"


def build_extension(folder: Path) -> Path:
    """The extension's path in ``folder``, compiled there first unless this build is present.

    The file name carries a hash of the source, the Python and the compiler, so an
    upgrade builds afresh; a build goes to a temporary name first and is renamed, so
    processes building at once never load a half-written file.
    """
    source = SOURCE.read_bytes()
    compiler = shlex.split(sysconfig.get_config_var("CC") or "cc")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    tag = hashlib.sha256(source + sys.version.encode() + " ".join(compiler).encode())
    path = folder / f"{MODULE_NAME}-{tag.hexdigest()[:16]}{suffix}"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    includes = {sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"]}
    fd, temporary = tempfile.mkstemp(suffix=suffix, dir=folder)
    os.close(fd)
    command = [
        *compiler,
        "-O2",
        "-shared",
        "-fPIC",
        *(f"-I{include}" for include in sorted(includes)),
        str(SOURCE),
        "-o",
        temporary,
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        os.unlink(temporary)
        raise BuildFailed(f"{compiler[0]} could not run ({exc})") from None
    if done.returncode:
        os.unlink(temporary)
        lines = (done.stderr or done.stdout).strip().splitlines()
        errors = [line for line in lines if "error" in line] or lines
        raise BuildFailed(f"{compiler[0]} failed building {SOURCE.name}: " + " | ".join(errors[:3]))
    os.replace(temporary, path)
    _remove_older_builds(folder, path, suffix)
    return path


def _remove_older_builds(folder: Path, kept: Path, suffix: str) -> None:
    """Other builds for this Python (an earlier Phobos's source) are never loaded again."""
    for other in folder.glob(f"{MODULE_NAME}-*{suffix}"):
        if other != kept:
            with contextlib.suppress(OSError):  # another process may be at it: only disk space
                other.unlink()


def _load(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path, loader=loader)
    if spec is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
