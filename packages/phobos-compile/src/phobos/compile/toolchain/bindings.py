"""Import NVRTC from cuda-bindings, or say how to install it.

The imports happen on first use so that everything but compiling (parsing,
checking, the interpreter) works without the CUDA wheels.  cuda-bindings loads
the shared library lazily, so asking it its version is what proves that the
library itself (the nvidia-cuda-nvrtc wheel) is there.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from phobos.compile.toolchain.errors import INSTALL_HINT, ToolchainMissingError


def nvrtc() -> ModuleType:
    module = _import("cuda.bindings.nvrtc", "NVRTC")
    nvrtc_version(module)
    return module


def nvrtc_version(module: ModuleType) -> tuple[int, int]:
    try:
        _, major, minor = module.nvrtcVersion()
    except (OSError, RuntimeError) as exc:
        raise _missing_library("NVRTC", exc) from exc
    return major, minor


def _import(module: str, tool: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ToolchainMissingError(
            f"compiling for a GPU needs {tool} from cuda-bindings, which is not installed "
            f"({exc}); install it with: {INSTALL_HINT}"
        ) from exc


def _missing_library(tool: str, exc: Exception) -> ToolchainMissingError:
    return ToolchainMissingError(
        f"the {tool} library could not be loaded ({exc}); install it with: {INSTALL_HINT}"
    )
