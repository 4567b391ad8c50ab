"""The recommended shape of a compiled kernel's entry, which the inference runtime relies on.

The cache itself reads no field of a key record; these names are a convention between the
compiler, which writes entries, and a runtime that finds a kernel's cubin by ``kernel`` and
``arch`` (docs/cache.md).  Use ``kernel_record`` so both sides spell them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PTX_FILE = "kernel.ptx"
CUBIN_FILE = "kernel.cubin"
CONTRACT_FILE = "contract.json"


def kernel_record(
    *,
    program: str,
    kernel: str,
    arch: str,
    compiler: str,
    values: Mapping[str, int] | None = None,
    specialisation: Mapping[str, Any] | None = None,
    toolchain: Mapping[str, str] | None = None,
    options: Sequence[str] = (),
) -> dict[str, Any]:
    """The key record of one compiled kernel variant: everything its PTX and cubin depend on.

    ``program`` is the whole Phobos text compiled (not only the kernel: it may call helpers);
    ``values`` the variant's compile-time values; ``specialisation`` what the code assumes of
    its arguments (alignment, unit strides, index width); ``compiler`` the Phobos compiler and
    its version; ``toolchain`` the versions of NVRTC, the PTX ISA and the like;
    ``arch`` the target (``"sm_90a"``); ``options`` the compiler options that change code."""
    return {
        "program": program,
        "kernel": kernel,
        "arch": arch,
        "compiler": compiler,
        "values": dict(values or {}),
        "specialisation": dict(specialisation or {}),
        "toolchain": dict(toolchain or {}),
        "options": list(options),
    }
