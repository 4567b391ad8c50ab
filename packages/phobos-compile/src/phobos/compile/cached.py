"""Compile through the shared kernel cache, so a kernel compiles once per chip.

``phobos.cache`` is an optional companion package (``pip install phobos-cache``):
this module is the only place the compiler touches it, and only when asked
(``phobos-compile --cache``, ``kernel.compile()``, a launch from Python).

The key record holds everything the PTX and cubin depend on: the program text,
the kernel, its compile-time values, the specialisation, the target, the
toolchain versions, and a fingerprint of the compiler's own sources (so a changed
compiler never serves stale code), plus the user's file and its digest, since
the cubin's line info names the user's lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from phobos.compile.contract import Contract
from phobos.compile.pipeline import compile_kernel, default_specialization
from phobos.compile.specialization import Specialization
from phobos.compile.syntax import ast, format_module

if TYPE_CHECKING:
    from phobos.cache import Cache, Entry


@dataclass(frozen=True)
class CachedKernel:
    """A compiled variant as the cache holds it; ``from_cache`` says whether it was compiled now."""

    ptx: str
    cubin: bytes
    contract: Contract
    key: str
    from_cache: bool


@cache
def compiler_fingerprint() -> str:
    """sha256 over the compiler's Python sources and runtime header."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".cuh", ".h") and path.is_file():
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@cache
def _toolchain() -> dict[str, str]:
    from phobos.compile.toolchain import toolchain_versions

    return toolchain_versions()


def _file_digest(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def compile_cached(
    module: ast.Module,
    kernel: str,
    values: Mapping[str, int],
    *,
    arch: str,
    spec: Specialization | None = None,
    cache: Cache | None = None,
) -> CachedKernel:
    """Compile one variant, or take it from the cache (``phobos.cache.Cache``; default root)."""
    from phobos.cache import CONTRACT_FILE, CUBIN_FILE, PTX_FILE, cache_key, kernel_record

    store = cache if cache is not None else _default_cache()
    spec = spec if spec is not None else default_specialization(module, kernel)
    source_file = module.kernel(kernel).span.file
    record = kernel_record(
        program=format_module(module),
        kernel=kernel,
        arch=arch,
        compiler=f"phobos-compile {compiler_fingerprint()}",
        values=dict(values),
        specialisation=asdict(spec),
        toolchain=_toolchain(),
        options=(f"lineinfo:{source_file}:{_file_digest(source_file)}",),
    )
    key = cache_key(record)

    def build() -> dict[str, bytes]:
        compiled = compile_kernel(module, kernel, values, arch=arch, spec=spec)
        return {
            PTX_FILE: compiled.ptx.encode(),
            CUBIN_FILE: compiled.cubin,
            CONTRACT_FILE: compiled.contract.to_json().encode(),
        }

    entry, built = store.get_or_build(key, record, build)
    try:
        return _from_entry(entry, key, built)
    except _UNREADABLE as exc:
        if built:
            raise
        # Files that passed their sha256 but are not a kernel this compiler reads (a foreign
        # or damaged writer's): a miss, rebuilt, as for any corrupt entry (docs/cache.md).
        import warnings

        from phobos.cache import CacheWarning

        removed = store.remove(key)
        warnings.warn(
            f"phobos cache: entry {key} holds no kernel this compiler can read "
            f"({type(exc).__name__}: {str(exc)[:200]}); "
            + ("removed it, compiling it again" if removed else "compiling it again"),
            CacheWarning,
            stacklevel=2,
        )
        if removed:
            entry, built = store.get_or_build(key, record, build)
        else:  # a shared, read-only cache: this process keeps its own build in memory
            entry, built = store.put(key, record, build()), True
        return _from_entry(entry, key, built)


_UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, RecursionError)


def _from_entry(entry: Entry, key: str, built: bool) -> CachedKernel:
    from phobos.cache import CONTRACT_FILE, CUBIN_FILE, PTX_FILE

    return CachedKernel(
        ptx=entry.read(PTX_FILE).decode(),
        cubin=entry.read(CUBIN_FILE),
        contract=Contract.from_json(entry.read(CONTRACT_FILE).decode()),
        key=key,
        from_cache=not built,
    )


@cache
def _default_cache() -> Cache:
    from phobos.cache import Cache

    return Cache()
