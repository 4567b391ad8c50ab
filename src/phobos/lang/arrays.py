"""Where a launch's arrays live: host memory (numpy → the CPU interpreter) or a GPU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def is_device_array(obj: Any) -> bool:
    """True for any object offering ``__cuda_array_interface__`` (torch CUDA tensors, CuPy, Numba)."""
    if type(obj).__module__.startswith("torch"):
        return bool(getattr(obj, "is_cuda", False))
    return hasattr(obj, "__cuda_array_interface__")


def is_host_array(obj: Any) -> bool:
    """numpy arrays and CPU torch tensors."""
    if type(obj).__module__.startswith("torch"):
        return not getattr(obj, "is_cuda", True)
    return hasattr(obj, "__array_interface__")


def host_view(obj: Any) -> Any:
    """A numpy view sharing the array's memory (so the interpreter's writes land in it)."""
    return obj.numpy() if type(obj).__module__.startswith("torch") else obj


def placement(args: Sequence[Any]) -> str:
    """ "device" if any argument is a GPU array, else "host"; a mix is refused."""
    device = [i for i, a in enumerate(args) if is_device_array(a)]
    host = [i for i, a in enumerate(args) if is_host_array(a)]
    if device and host:
        raise TypeError(
            f"argument {host[0] + 1} is in host memory but argument {device[0] + 1} is on a GPU; "
            "pass every array on the same device (numpy arrays run in the CPU interpreter)"
        )
    return "device" if device else "host"
