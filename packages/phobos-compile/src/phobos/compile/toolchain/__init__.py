"""The CUDA toolchain: generated CUDA C++ → cubin and PTX for the card (NVRTC)."""

from phobos.compile.toolchain.build import Build, compile_cuda, toolchain_versions
from phobos.compile.toolchain.errors import (
    INSTALL_HINT,
    CudaCompileError,
    ToolchainError,
    ToolchainMissingError,
)
from phobos.compile.toolchain.headers import cuda_include_dir
from phobos.compile.toolchain.resources import Resources, parse_ptxas_info

__all__ = [
    "INSTALL_HINT",
    "Build",
    "CudaCompileError",
    "Resources",
    "ToolchainError",
    "ToolchainMissingError",
    "compile_cuda",
    "cuda_include_dir",
    "parse_ptxas_info",
    "toolchain_versions",
]
