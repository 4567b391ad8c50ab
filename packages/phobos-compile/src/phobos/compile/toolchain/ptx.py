"""CUDA C++ → a cubin for the card (and its PTX) with NVRTC, in one compile.

NVRTC compiling for the card itself (``sm_90a``, not ``compute_90a``) runs ptxas
and gives the cubin directly: that keeps ``setmaxnreg``, which linking PTX with
nvJitLink drops (ptxas warning C7504), and is not slower.  The PTX of the same
compile rides along for ``--emit ptx`` and ``-o``; a driver older than the NVRTC
refuses such PTX but loads the cubin, which is what a launcher loads.
"""

from __future__ import annotations

from collections.abc import Sequence

from phobos.compile.toolchain import bindings
from phobos.compile.toolchain.arch import arch_number, real_arch
from phobos.compile.toolchain.errors import CudaCompileError, ToolchainError


def cuda_to_cubin(
    source: str,
    *,
    name: str,
    arch: str,
    include_paths: Sequence[str],
    line_info: bool,
    verbose: bool,
) -> tuple[bytes, str, str]:
    """The cubin and PTX of ``source`` for ``arch``, and NVRTC's log (its warnings, and
    ptxas' report when ``verbose``)."""
    nvrtc = bindings.nvrtc()
    _require_supported(nvrtc, arch)
    options = [f"--gpu-architecture={real_arch(arch)}", "--std=c++17"]
    if line_info:
        options.append("-lineinfo")
    if verbose:
        options.append("--ptxas-options=-v")
    options += [f"--include-path={path}" for path in include_paths]
    encoded = [option.encode() for option in options]

    program = _check(
        nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], [])
    )
    try:
        (status,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        log = _program_log(nvrtc, program)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CudaCompileError("NVRTC", name, f"options: {' '.join(options)}\n{log}")
        size = _check(nvrtc, nvrtc.nvrtcGetCUBINSize(program))
        cubin = b" " * size
        _check(nvrtc, nvrtc.nvrtcGetCUBIN(program, cubin))
        size = _check(nvrtc, nvrtc.nvrtcGetPTXSize(program))
        ptx = b" " * size
        _check(nvrtc, nvrtc.nvrtcGetPTX(program, ptx))
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return cubin, ptx.rstrip(b"\0").decode(), log


def _require_supported(nvrtc, arch: str) -> None:
    supported = _check(nvrtc, nvrtc.nvrtcGetSupportedArchs())
    if arch_number(arch) not in supported:
        major, minor = bindings.nvrtc_version(nvrtc)
        listed = ", ".join(f"sm_{n}" for n in supported)
        raise ToolchainError(
            f"NVRTC {major}.{minor} cannot compile for {arch}; it supports {listed}"
        )


def _program_log(nvrtc, program) -> str:
    size = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(program))
    buffer = b" " * size
    _check(nvrtc, nvrtc.nvrtcGetProgramLog(program, buffer))
    return buffer.rstrip(b"\0").decode(errors="replace").strip()


def _check(nvrtc, result: tuple):
    """Unpack an NVRTC call's (status, value...) result, raising on a failed status."""
    status, *values = result
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(status)
        raise ToolchainError(f"NVRTC call failed: {text.decode()}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)
