"""PTX → cubin with nvJitLink, for the card itself.

A driver refuses PTX from an NVRTC newer than itself, but loads a cubin; so the
cubin is what a launcher loads, and the PTX rides along for inspection.
"""

from __future__ import annotations

from phobos.compile.toolchain import bindings
from phobos.compile.toolchain.errors import CudaCompileError


def ptx_to_cubin(
    ptx: str, *, name: str, arch: str, line_info: bool, verbose: bool
) -> tuple[bytes, str]:
    """The cubin for ``arch`` and nvJitLink's info log (ptxas' report when ``verbose``)."""
    nvjitlink = bindings.nvjitlink()
    options = [f"-arch={arch}"]
    if line_info:
        options.append("-lineinfo")
    if verbose:
        options.append("-Xptxas=-v")
    data = ptx.encode()
    handle = nvjitlink.create(len(options), options)
    try:
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), f"{name}.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            log = _log(nvjitlink.get_error_log_size, nvjitlink.get_error_log, handle)
            raise CudaCompileError("nvJitLink", name, f"{exc}\n{log}") from exc
        cubin = bytearray(nvjitlink.get_linked_cubin_size(handle))
        nvjitlink.get_linked_cubin(handle, cubin)
        info = _log(nvjitlink.get_info_log_size, nvjitlink.get_info_log, handle)
    finally:
        nvjitlink.destroy(handle)
    return bytes(cubin), info


def _log(size_of, read, handle: int) -> str:
    buffer = bytearray(size_of(handle))
    read(handle, buffer)
    return bytes(buffer).rstrip(b"\0").decode(errors="replace").strip()
