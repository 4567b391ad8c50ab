"""Phobos dtypes as C++ types and literals of the runtime header (``phobos::f32`` ...)."""

from __future__ import annotations

import math

from phobos.compile.ir.nodes import DTYPE_BYTES, FLOAT_DTYPES, SIGNED_DTYPES

INDEX_CTYPE = "index_t"  # a typedef the kernel makes for int32 or int64


def ctype(dtype: str) -> str:
    if dtype == "bool":
        return "bool"
    if dtype == "index":
        return INDEX_CTYPE
    return f"phobos::{dtype}"


def byte_size(dtype: str, index_width: int) -> int:
    return index_width // 8 if dtype == "index" else DTYPE_BYTES[dtype]


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def is_signed(dtype: str) -> bool:
    return dtype in SIGNED_DTYPES or dtype == "index"


def literal(value: int | float | bool, dtype: str) -> str:
    """A C++ expression of type ``dtype`` for ``value``."""
    if dtype == "bool":
        return "true" if value else "false"
    if is_float(dtype):
        value = float(value)
        if math.isnan(value):
            return f"phobos::quiet_nan<{ctype(dtype)}>()"
        if math.isinf(value):
            sign = "-" if value < 0 else ""
            return f"{sign}phobos::infinity<{ctype(dtype)}>()"
        text = repr(value)
        if dtype == "f64":
            return text
        if dtype == "f32":
            return f"{text}f"
        return f"{ctype(dtype)}({text}f)"
    value = int(value)
    suffix = "ULL" if dtype == "u64" else "LL" if abs(value) >= 2**31 else ""
    if value in (-(2**31), -(2**63)):  # the literal's magnitude alone would not fit
        return f"{ctype(dtype)}({value + 1}{suffix} - 1)"
    if dtype in ("i32", "index") and not suffix and value >= 0:
        return str(value)
    return f"{ctype(dtype)}({value}{suffix})"


def lowest(dtype: str, index_width: int) -> str:
    """The identity of max: -inf for floats, the smallest value for integers."""
    if is_float(dtype):
        return literal(-math.inf, dtype)
    if dtype == "bool":
        return "false"
    if is_signed(dtype):
        return literal(-(2 ** (8 * byte_size(dtype, index_width) - 1)), dtype)
    return literal(0, dtype)


def highest(dtype: str, index_width: int) -> str:
    """The identity of min: +inf for floats, the largest value for integers."""
    if is_float(dtype):
        return literal(math.inf, dtype)
    if dtype == "bool":
        return "true"
    bits = 8 * byte_size(dtype, index_width)
    return literal(2 ** (bits - 1) - 1 if is_signed(dtype) else 2**bits - 1, dtype)
