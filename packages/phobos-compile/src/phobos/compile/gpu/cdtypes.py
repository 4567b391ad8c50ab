"""Phobos dtypes as C++ types and literals of the runtime header (``phobos::f32`` ...)."""

from __future__ import annotations

import math

import numpy as np

_FLOATS = ("f16", "bf16", "f32", "f64")


def ctype(dtype: str) -> str:
    return "bool" if dtype == "bool" else f"phobos::{dtype}"


def element_bits(dtype: str) -> int:
    return {"bool": 8, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "f16": 16, "bf16": 16}.get(
        dtype, 64 if dtype in ("i64", "u64", "f64") else 32
    )


def literal(value: int | float | bool, dtype: str) -> str:
    """A C++ expression of type ``dtype`` for ``value`` (rounded to the type first: a literal
    below its type's smallest subnormal is a signed zero, as the interpreter has it)."""
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in _FLOATS:
        value = float(value)
        if math.isnan(value):
            return f"phobos::quiet_nan<{ctype(dtype)}>()"
        if math.isinf(value):
            return f"{'-' if value < 0 else ''}phobos::infinity<{ctype(dtype)}>()"
        if dtype == "f64":
            return repr(value)
        rounded = float(np.float32(value))
        if math.isinf(rounded):
            return f"{'-' if value < 0 else ''}phobos::infinity<{ctype(dtype)}>()"
        text = repr(rounded)
        if dtype == "f32":
            return f"{text}f"
        return f"{ctype(dtype)}({text}f)"
    value = int(value)
    bits = element_bits(dtype)
    if dtype.startswith("u"):
        value %= 1 << bits
        return f"{ctype(dtype)}({value}ULL)" if bits == 64 else f"{ctype(dtype)}({value}u)"
    value = (value + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
    if value == -(1 << (bits - 1)):  # the literal's magnitude alone would not fit
        suffix = "LL" if bits == 64 else ""
        return f"{ctype(dtype)}({value + 1}{suffix} - 1)"
    suffix = "LL" if bits == 64 else ""
    if dtype == "i32" and value >= 0:
        return str(value)
    return f"{ctype(dtype)}({value}{suffix})"
