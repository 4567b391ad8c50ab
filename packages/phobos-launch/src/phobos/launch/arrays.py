"""Reading an argument as a GPU array: ``__cuda_array_interface__`` or torch's accessors.

A reader returns one plain tuple (cheap to build on every launch)::

    (ptr, shape, strides, dtype, device, readonly, stream)

``ptr`` the address of element 0; ``shape`` a tuple of ints; ``strides`` in elements
(never ``None``); ``dtype`` the Phobos name (or the array's own spelling when the
launcher has no name for it); ``device`` the GPU ordinal, or ``None`` when the array
does not say (the binder then asks the driver); ``readonly``; ``stream`` the CAI v3
stream the producer works on, or ``None``.

Torch tensors take a faster path than their ``__cuda_array_interface__`` (which
builds a dict on every access): ``data_ptr()``, ``shape``, ``stride()``, ``dtype``.
torch is recognised by the module of the argument's type and never imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from phobos.launch.dtypes import from_torch, from_typestr

ArrayFields = tuple[int, tuple[int, ...], tuple[int, ...], str, "int | None", bool, "int | None"]
Reader = Callable[[Any], ArrayFields]


class ArrayProtocolError(ValueError):
    """The argument is not a GPU array the launcher can read; the text says why and what to do."""


def reader_for(arg: Any) -> Reader | None:
    """The reader for arguments of this one's type, or ``None`` if it is not a GPU array."""
    if is_torch_tensor(arg):
        return read_torch
    if hasattr(arg, "__cuda_array_interface__"):
        return read_cai
    return None


def is_torch_tensor(arg: Any) -> bool:
    module = type(arg).__module__
    return (module == "torch" or module.startswith("torch.")) and hasattr(arg, "data_ptr")


def read_torch(t: Any) -> ArrayFields:
    if not t.is_cuda:
        raise ArrayProtocolError(not_a_gpu_array(t))
    return (t.data_ptr(), t.shape, t.stride(), from_torch(t.dtype), t.get_device(), False, None)


def read_cai(a: Any) -> ArrayFields:
    cai = a.__cuda_array_interface__
    if cai.get("mask") is not None:
        raise ArrayProtocolError("arrays with a mask are not supported; pass the unmasked data")
    ptr, readonly = cai["data"]
    shape = tuple(cai["shape"])
    typestr = cai["typestr"]
    byte_strides = cai.get("strides")
    if byte_strides is None:
        strides = contiguous_strides(shape)
    else:
        strides = element_strides(tuple(byte_strides), _typestr_itemsize(typestr))
    stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
    return (ptr or 0, shape, strides, from_typestr(typestr), None, bool(readonly), stream)


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array (what a ``None`` CAI stride means)."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def element_strides(byte_strides: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    if any(s % itemsize for s in byte_strides):
        raise ArrayProtocolError(
            f"strides {byte_strides} (bytes) are not whole elements of {itemsize} bytes; "
            "pass a copy with element-aligned strides"
        )
    return tuple(s // itemsize for s in byte_strides)


def _typestr_itemsize(typestr: str) -> int:
    digits = typestr[2:]
    return int(digits) if digits.isdigit() and int(digits) > 0 else 1


def not_a_gpu_array(arg: Any) -> str:
    """Why ``arg`` cannot be a tensor argument, and what to pass instead."""
    if is_torch_tensor(arg):
        place = str(getattr(arg, "device", "the CPU"))
        return f"got a torch tensor on {place}; move it to the GPU first (.cuda() or .to('cuda'))"
    if hasattr(arg, "__array_interface__"):
        return (
            f"got a host array ({type(arg).__module__}.{type(arg).__qualname__}) in CPU memory; "
            "pass a GPU array (torch, CuPy, Numba) — with numpy arrays, phobos.lang runs the "
            "kernel in the CPU interpreter instead"
        )
    return (
        f"got {type(arg).__name__} {_short_repr(arg)}, which is not a GPU array "
        "(an object with __cuda_array_interface__)"
    )


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def element_span(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """A bound on the distance, in elements, of any element from element 0."""
    span = 0
    for n, s in zip(shape, strides):
        if n > 1:
            span += (n - 1) * (s if s >= 0 else -s)
    return span
