"""Scalar arguments: Python and NumPy numbers read as the kernel's scalar types.

NumPy is never imported: a NumPy scalar is read through ``float()``, ``operator.index()``
or ``bool()``, and a ctypes number through its ``.value``.  A scalar of the wrong kind
(a float for an integer parameter, a string, an array) is refused rather than
silently converted.  Range is checked when the parameter block is packed: a value
that does not fit its slot type fails there, and ``fits`` says which one.
"""

from __future__ import annotations

import ctypes
import operator
import struct
from collections.abc import Callable
from typing import Any

from phobos.launch.arrays import has_cai, is_torch_tensor
from phobos.launch.dtypes import SLOT_STRUCT_CODE

ScalarReader = Callable[[Any], Any]


class ScalarError(TypeError):
    """A scalar argument of the wrong kind; the text says what was expected and given."""


def scalar_reader(dtype: str) -> ScalarReader:
    """The function that turns an argument into the value packed for a ``dtype`` slot."""
    if dtype == "bool":
        return _read_bool
    if dtype == "bf16":
        return lambda value: bf16_bits(_read_float(value, dtype))
    if dtype.startswith("f"):
        return lambda value: _read_float(value, dtype)
    return lambda value: _read_int(value, dtype)


def _read_float(value: Any, dtype: str) -> float:
    if type(value) is float:
        return value
    value = _unwrap(value, dtype)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
        raise ScalarError(_expected(dtype, "a real number", value))
    return float(value)


def _read_int(value: Any, dtype: str) -> int:
    if type(value) is int:
        return value
    value = _unwrap(value, dtype)
    try:
        return operator.index(value)
    except TypeError:
        raise ScalarError(_expected(dtype, "an integer", value)) from None


def _read_bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    value = _unwrap(value, "bool")
    if type(value).__name__ in ("bool_", "bool") or (
        hasattr(value, "__index__") and operator.index(value) in (0, 1)
    ):
        return bool(value)
    raise ScalarError(_expected("bool", "True or False", value))


def _unwrap(value: Any, dtype: str) -> Any:
    if isinstance(value, ctypes._SimpleCData):
        return value.value
    if is_torch_tensor(value) or has_cai(value):
        raise ScalarError(
            f"expected a {dtype} scalar (a Python or NumPy number), got an array; pass a number "
            "(.item() reads one back from the GPU, waiting for it)"
        )
    return value


def _expected(dtype: str, kind: str, value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 40 else text[:37] + "..."
    return f"expected a {dtype} scalar ({kind}), got {type(value).__name__} {text}"


def bf16_bits(value: float) -> int:
    """The 16 bits of ``value`` as a bfloat16, rounded to nearest even (NaN stays NaN)."""
    (bits,) = struct.unpack("<I", struct.pack("<f", value))
    if value != value:
        return 0x7FC0 | (bits >> 16 & 0x8000)
    return (bits + 0x7FFF + (bits >> 16 & 1)) >> 16 & 0xFFFF


def fits(dtype: str, value: Any) -> bool:
    """Whether ``value`` (already read) can be packed into a ``dtype`` slot."""
    try:
        struct.pack("<" + SLOT_STRUCT_CODE[dtype], value)
    except (struct.error, OverflowError):
        return False
    return True
