"""The one array adapter: ``__cuda_array_interface__``, torch's accessors and ``__array_interface__``.

A reader returns one plain tuple (cheap to build on every launch)::

    (ptr, shape, strides, dtype, device, readonly, stream)

``ptr`` the address of element 0; ``shape`` a tuple of ints; ``strides`` in elements
(never ``None``); ``dtype`` the Phobos name (or the array's own spelling when the
launcher has no name for it); ``device`` the GPU ordinal, ``HOST`` for host memory, or
``None`` when the array does not say (the binder then asks the driver); ``readonly``;
``stream`` the CAI v3 stream the producer works on, or ``None``.

Torch tensors take a faster path than their ``__cuda_array_interface__`` (which
builds a dict on every access): ``data_ptr()``, ``shape``, ``stride()``, ``dtype``.
torch is recognised by the module of the argument's type and never imported.  The
launcher reads GPU arrays only (``reader_for``); ``read_arguments`` reads host arrays
too, for a caller deciding where a launch runs (phobos.lang: numpy runs in the CPU
interpreter), and what the arguments allow a variant to assume (``specialization_of``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from phobos.launch.dtypes import ITEMSIZE, from_torch, from_typestr
from phobos.launch.errors import LaunchError

ArrayFields = tuple[int, tuple[int, ...], tuple[int, ...], str, "int | None", bool, "int | None"]
Reader = Callable[[Any], ArrayFields]

HOST = -1  # the device of an array in host memory (what torch's get_device() says of one)
INDEX32_LIMIT = 2**31
MAX_ALIGN = 16  # the widest vector access the compiler emits


class ArrayProtocolError(ValueError):
    """The argument is not a GPU array the launcher can read; the text says why and what to do."""


def reader_for(arg: Any) -> Reader | None:
    """The reader for arguments of this one's type, or ``None`` if it is not a GPU array."""
    if is_torch_tensor(arg):
        return read_torch
    return read_cai if has_cai(arg) else None


def has_cai(arg: Any) -> bool:
    """Whether ``arg`` offers ``__cuda_array_interface__``, without reading it (CuPy and Numba
    build the dict each time it is read)."""
    name = "__cuda_array_interface__"
    return hasattr(type(arg), name) or name in getattr(arg, "__dict__", ())


def is_torch_tensor(arg: Any) -> bool:
    module = type(arg).__module__
    return (module == "torch" or module.startswith("torch.")) and hasattr(arg, "data_ptr")


def read_torch(t: Any) -> ArrayFields:
    if not t.is_cuda:
        raise ArrayProtocolError(not_a_gpu_array(t))
    return (t.data_ptr(), t.shape, t.stride(), from_torch(t.dtype), t.get_device(), False, None)


def read_cai(a: Any) -> ArrayFields:
    return cai_fields(a.__cuda_array_interface__)


def cai_fields(cai: dict[str, Any]) -> ArrayFields:
    """The fields of a ``__cuda_array_interface__`` dict (v2 or v3)."""
    if cai.get("mask") is not None:
        raise ArrayProtocolError("arrays with a mask are not supported; pass the unmasked data")
    ptr, readonly = cai["data"]
    shape = tuple(cai["shape"])
    strides = _strides(shape, cai.get("strides"), cai["typestr"])
    stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
    return (ptr or 0, shape, strides, from_typestr(cai["typestr"]), None, bool(readonly), stream)


def read_host(a: Any) -> ArrayFields:
    """An array in host memory: numpy's ``__array_interface__``, or a CPU torch tensor."""
    if is_torch_tensor(a):
        return (a.data_ptr(), a.shape, a.stride(), from_torch(a.dtype), HOST, False, None)
    interface = a.__array_interface__
    ptr, readonly = interface.get("data") or (0, False)
    shape = tuple(interface.get("shape", ()))
    typestr = interface.get("typestr", "")
    dtype = from_typestr(typestr)
    if dtype == typestr and str(getattr(a, "dtype", "")) == "bfloat16":  # ml_dtypes: "<V2"
        dtype = "bf16"
    return (ptr or 0, shape, _strides(shape, interface.get("strides"), typestr), dtype, HOST,
            bool(readonly), None)  # fmt: skip


def read_arguments(
    args: Sequence[Any], names: Sequence[str] = (), kernel: str = ""
) -> list[ArrayFields | None]:
    """Each argument read once: GPU arrays, host arrays (device ``HOST``), ``None`` for scalars.

    Raises ``LaunchError`` naming the argument (``kernel: names[i]``, else its position)
    when an array cannot be read.
    """
    read: list[ArrayFields | None] = []
    for position, arg in enumerate(args):
        try:
            if is_torch_tensor(arg):
                read.append(read_torch(arg) if arg.is_cuda else read_host(arg))
            elif has_cai(arg):
                read.append(cai_fields(arg.__cuda_array_interface__))
            else:
                numpy = sys.modules.get("numpy")  # a NumPy scalar has an __array_interface__ too
                scalar = numpy is not None and isinstance(arg, numpy.generic)
                host = hasattr(arg, "__array_interface__") and not scalar
                read.append(read_host(arg) if host else None)
        except (ArrayProtocolError, KeyError, TypeError) as exc:
            if position < len(names):
                raise LaunchError(f"{kernel}: {names[position]}: {exc}", names[position]) from None
            raise LaunchError(f"argument {position + 1}: {exc}") from None
    return read


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array (what a ``None`` CAI stride means)."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _strides(shape: tuple[int, ...], byte_strides: Any, typestr: str) -> tuple[int, ...]:
    if byte_strides is None:
        return contiguous_strides(shape)
    digits = typestr[2:]
    itemsize = int(digits) if digits.isdigit() and int(digits) > 0 else 1
    if any(s % itemsize for s in byte_strides):
        raise ArrayProtocolError(
            f"strides {tuple(byte_strides)} (bytes) are not whole elements of {itemsize} bytes; "
            "pass a copy with element-aligned strides"
        )
    return tuple(s // itemsize for s in byte_strides)


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
    text = repr(arg)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"got {type(arg).__name__} {text}, which is not a GPU array (an object with __cuda_array_interface__)"


def element_span(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """A bound on the distance, in elements, of any element from element 0."""
    span = 0
    for n, s in zip(shape, strides):
        if n > 1:
            span += (n - 1) * (s if s >= 0 else -s)
    return span


# What the arguments allow a variant to assume.  The compiler specialises a variant on the
# alignment of each base address, a unit last stride and the index width; a launch refuses
# arguments that break them, so a caller reads them first and picks a variant that fits.


def alignment_of(ptr: int) -> int:
    """The largest power of two up to 16 that divides ``ptr``."""
    return MAX_ALIGN if ptr % MAX_ALIGN == 0 else ptr & -ptr


def unit_stride_of(fields: ArrayFields) -> bool:
    """Whether the last axis has stride 1 (or at most one element)."""
    shape, strides = fields[1], fields[2]
    return not shape or shape[-1] <= 1 or strides[-1] == 1


def row_alignment_of(fields: ArrayFields) -> int:
    """The largest power of two up to 16 that divides every row's stride in bytes (the
    strides of the axes but the last, where the axis has more than one element); 1 for an
    empty array, which no TMA descriptor (what the fact is for) can describe."""
    shape, strides, itemsize = fields[1], fields[2], ITEMSIZE.get(fields[3], 1)
    if 0 in shape:
        return 1
    align = MAX_ALIGN
    for n, s in zip(shape[:-1], strides[:-1]):
        if n > 1:
            align = min(align, alignment_of(s * itemsize) if s else MAX_ALIGN)
    return align


def index64_of(fields: ArrayFields) -> bool:
    """Whether an extent or an element offset of the array reaches 2^31."""
    shape = fields[1]
    return any(n >= INDEX32_LIMIT for n in shape) or element_span(shape, fields[2]) >= INDEX32_LIMIT


def specialization_of(args: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """Each GPU array argument's facts, keyed by its position: ``{"align": bytes (a power of
    two up to 16), "unit_stride": bool, "row_align": bytes (a power of two up to 16),
    "dtype": str, "rank": int}``.  Scalars are left out."""
    return {
        p: {"align": alignment_of(f[0]), "unit_stride": unit_stride_of(f),
            "row_align": row_alignment_of(f), "dtype": f[3], "rank": len(f[1])}
        for p, f in _read_gpu(args)
    }  # fmt: skip


def needs_index64(args: Sequence[Any]) -> bool:
    """Whether any GPU array has an extent or an element offset of 2^31 or more."""
    return any(index64_of(f) for _, f in _read_gpu(args))


def _read_gpu(args: Sequence[Any]) -> list[tuple[int, ArrayFields]]:
    read = []
    for position, arg in enumerate(args):
        reader = reader_for(arg)
        try:
            read += [(position, reader(arg))] if reader else []
        except ArrayProtocolError as exc:
            raise LaunchError(f"argument {position}: {exc}") from None
    return read


# Where an array lives, for callers that run on host copies (the CPU interpreter, tuning).


def array_library(arg: Any) -> str | None:
    """ "torch", "cupy", "numba" or "numpy" for an array of that library, else ``None``."""
    root = type(arg).__module__.partition(".")[0]
    if root in ("torch", "cupy", "numba"):
        return root
    numpy = sys.modules.get("numpy")
    return "numpy" if numpy is not None and isinstance(arg, numpy.ndarray) else None


def host_view(arg: Any) -> Any:
    """A numpy array sharing a host array's memory (a CPU torch tensor's ``.numpy()``)."""
    return arg.numpy() if is_torch_tensor(arg) else arg


def host_copy(arg: Any) -> Any:
    """A numpy copy of a GPU array (torch, CuPy, Numba); anything else as it is."""
    if is_torch_tensor(arg):
        return arg.detach().cpu().numpy()
    if hasattr(arg, "copy_to_host"):
        return arg.copy_to_host()
    if hasattr(arg, "get") and has_cai(arg):
        return arg.get()
    return arg
