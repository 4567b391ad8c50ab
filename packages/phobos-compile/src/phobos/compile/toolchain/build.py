"""Generated CUDA C++ → cubin and PTX, with no GPU and no CUDA toolkit.

NVRTC compiles the source for the card (``sm_90a``): the cubin a launcher loads and
the PTX of the same compile.  It comes from a PyPI wheel, so CI compiles every
example on a CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phobos.compile.toolchain import bindings
from phobos.compile.toolchain.errors import ToolchainError
from phobos.compile.toolchain.headers import cuda_include_dir
from phobos.compile.toolchain.ptx import cuda_to_cubin
from phobos.compile.toolchain.resources import Resources, parse_ptxas_info


@dataclass(frozen=True)
class Build:
    """What the toolchain made of one CUDA source.

    ``resources`` is ptxas' report on the kernel (only when built with
    ``verbose``); ``log`` holds whatever NVRTC printed.
    """

    ptx: str
    cubin: bytes
    log: str
    resources: Resources | None


def compile_cuda(
    source: str,
    *,
    arch: str,
    name: str,
    include_paths: Sequence[str] = (),
    line_info: bool = True,
    verbose: bool = False,
) -> Build:
    """Compile ``source`` (one ``extern "C" __global__`` kernel) to a cubin and PTX for ``arch``.

    ``name`` labels the source in the tools' messages and, with ``verbose``, names
    the kernel whose ptxas report becomes ``resources``.  The CUDA headers are
    always on the include path, after ``include_paths``.
    """
    paths = [*include_paths, str(cuda_include_dir())]
    cubin, ptx, log = cuda_to_cubin(
        source, name=name, arch=arch, include_paths=paths, line_info=line_info, verbose=verbose
    )
    resources = _kernel_resources(log, name) if verbose else None
    return Build(ptx=ptx, cubin=cubin, log=log, resources=resources)


def toolchain_versions() -> dict[str, str]:
    """The NVRTC version, for cache keys and results files."""
    major, minor = bindings.nvrtc_version(bindings.nvrtc())
    return {"nvrtc": f"{major}.{minor}"}


def _kernel_resources(ptxas_log: str, name: str) -> Resources:
    found = parse_ptxas_info(ptxas_log)
    if name in found:
        return found[name]
    if len(found) == 1:
        return next(iter(found.values()))
    raise ToolchainError(
        f"ptxas reported no kernel named {name!r} (it reported {sorted(found)}):\n{ptxas_log}"
    )
