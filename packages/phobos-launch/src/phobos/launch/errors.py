"""The launcher's exceptions: what went wrong, named in the user's terms."""

from __future__ import annotations


class LaunchError(ValueError):
    """The arguments, grid or device do not fit the compiled kernel; nothing was launched.

    The message names the kernel and the parameter, what the kernel expects and
    what was given; ``param`` is that parameter's name when one is to blame, so a
    caller holding the kernel's source can point at its declaration.
    """

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class LaunchWarning(UserWarning):
    """Something the launcher worked around, e.g. a native extension it would not load."""


class ContractError(ValueError):
    """A launch contract that this launcher cannot use (wrong format version, malformed)."""


class CudaError(RuntimeError):
    """A CUDA driver call failed; ``name`` is the driver's name for ``code``."""

    def __init__(self, call: str, code: int | None, name: str, detail: str) -> None:
        self.call = call
        self.code = code
        self.name = name
        self.detail = detail
        super().__init__(f"{call} failed: {name}: {detail}")


class DriverNotFound(CudaError):
    """No CUDA driver library on this machine (libcuda.so.1 cannot be loaded)."""

    def __init__(self, detail: str) -> None:
        super().__init__("loading libcuda.so.1", None, "CUDA_DRIVER_NOT_FOUND", detail)
