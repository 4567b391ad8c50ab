"""Where the headers that generated CUDA includes come from.

NVRTC ships no CUDA headers (``cuda_fp16.h``, ``cuda_bf16.h``, ...).  The
``nvidia-cuda-runtime`` wheel carries them under ``nvidia/cu13/include`` (CUDA 12
wheels used ``nvidia/cuda_runtime/include``); a CUDA toolkit has them under
``$CUDA_HOME/include``.  The first folder that holds ``cuda_fp16.h`` wins, wheels
first, so a pip-only install needs nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from phobos.compile.toolchain.errors import INSTALL_HINT, ToolchainMissingError

_MARKER = "cuda_fp16.h"
_WHEEL_LAYOUTS = (("cu13", "include"), ("cuda_runtime", "include"), ("cu12", "include"))
_TOOLKIT_VARIABLES = ("CUDA_HOME", "CUDA_PATH")
_TOOLKIT_DEFAULT = "/usr/local/cuda"


def cuda_include_dir() -> Path:
    """The folder holding the CUDA headers, or a ToolchainMissingError saying how to get it."""
    candidates = list(_candidates())
    for folder in candidates:
        if (folder / _MARKER).is_file():
            return folder
    looked = "\n".join(f"  {folder}" for folder in candidates)
    raise ToolchainMissingError(
        f"the CUDA headers ({_MARKER} and friends) were not found; looked in:\n{looked}\n"
        f"install them with: {INSTALL_HINT} (the nvidia-cuda-runtime wheel), "
        "or set CUDA_HOME to a CUDA toolkit"
    )


def _candidates() -> Iterator[Path]:
    for root in _nvidia_wheel_roots():
        for layout in _WHEEL_LAYOUTS:
            yield root.joinpath(*layout)
    for variable in _TOOLKIT_VARIABLES:
        home = os.environ.get(variable)
        if home:
            yield Path(home) / "include"
    yield Path(_TOOLKIT_DEFAULT) / "include"


def _nvidia_wheel_roots() -> list[Path]:
    try:
        import nvidia
    except ImportError:
        return []
    return [Path(p) for p in nvidia.__path__]
