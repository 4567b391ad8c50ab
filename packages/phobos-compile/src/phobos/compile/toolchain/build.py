"""Generated CUDA C++ → PTX and cubin, with no GPU and no CUDA toolkit.

NVRTC compiles the source to PTX for the card's virtual architecture
(``compute_90`` for ``sm_90``); nvJitLink assembles that PTX into a cubin for the
card.  Both come from PyPI wheels, so CI compiles every example on a CPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phobos.compile.toolchain import bindings
from phobos.compile.toolchain.cubin import ptx_to_cubin
from phobos.compile.toolchain.errors import ToolchainError
from phobos.compile.toolchain.headers import cuda_include_dir
from phobos.compile.toolchain.ptx import cuda_to_ptx
from phobos.compile.toolchain.resources import Resources, parse_ptxas_info


@dataclass(frozen=True)
class Build:
    """What the toolchain made of one CUDA source.

    ``resources`` is ptxas' report on the kernel (only when built with
    ``verbose``); ``log`` holds whatever NVRTC and nvJitLink printed.
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
    """Compile ``source`` (one ``extern "C" __global__`` kernel) to PTX and a cubin for ``arch``.

    ``name`` labels the source in the tools' messages and, with ``verbose``, names
    the kernel whose ptxas report becomes ``resources``.  The CUDA headers are
    always on the include path, after ``include_paths``.
    """
    paths = [*include_paths, str(cuda_include_dir())]
    ptx, compile_log = cuda_to_ptx(
        source, name=name, arch=arch, include_paths=paths, line_info=line_info
    )
    cubin, link_log = ptx_to_cubin(ptx, name=name, arch=arch, line_info=line_info, verbose=verbose)
    resources = _kernel_resources(link_log, name) if verbose else None
    log = "\n".join(part for part in (compile_log, link_log) if part)
    return Build(ptx=ptx, cubin=cubin, log=log, resources=resources)


def toolchain_versions() -> dict[str, str]:
    """The NVRTC and nvJitLink versions, for cache keys and results files."""
    nvrtc_major, nvrtc_minor = bindings.nvrtc_version(bindings.nvrtc())
    link_major, link_minor = bindings.nvjitlink_version(bindings.nvjitlink())
    return {"nvrtc": f"{nvrtc_major}.{nvrtc_minor}", "nvjitlink": f"{link_major}.{link_minor}"}


def _kernel_resources(ptxas_log: str, name: str) -> Resources:
    found = parse_ptxas_info(ptxas_log)
    if name in found:
        return found[name]
    if len(found) == 1:
        return next(iter(found.values()))
    raise ToolchainError(
        f"ptxas reported no kernel named {name!r} (it reported {sorted(found)}):\n{ptxas_log}"
    )
