"""Toolchain failures.

These are not ``PhobosError``s: the user's program is checked before any CUDA is
generated, so a CUDA compile error is a bug in Phobos, and a missing toolchain is
an installation problem.  Both carry everything needed to act on them.
"""

from __future__ import annotations

INSTALL_HINT = "pip install 'phobos-compile[cuda]'"


class ToolchainError(RuntimeError):
    """The CUDA toolchain could not turn generated code into PTX or a cubin."""


class ToolchainMissingError(ToolchainError):
    """cuda-bindings, NVRTC or the CUDA headers are not installed."""


class CudaCompileError(ToolchainError):
    """NVRTC rejected generated code; ``log`` is the tool's own message."""

    def __init__(self, tool: str, name: str, log: str) -> None:
        self.tool = tool
        self.name = name
        self.log = log
        super().__init__(
            f"internal compiler error: {tool} rejected the generated code for {name!r}; "
            f"please report this with the kernel.\n{log.rstrip()}"
        )
