"""The elementwise operations, with C semantics where numpy's differ.

Integer ``div`` truncates toward zero and ``mod`` takes the dividend's sign (as in
C and on the GPU), where numpy's ``//`` and ``%`` floor.  Division by zero is
defined (docs/language.md, section 4): ``a / 0`` is 0 and ``a % 0`` is ``a``;
``MIN / -1`` wraps to ``MIN`` and ``MIN % -1`` is 0.  ``max`` and ``min`` give NaN
when either operand is NaN (numpy's ``maximum``; the GPU runtime's ``phobos::max``
does the same).  A float converts to an integer type by truncating toward zero
and saturating at the type's limits, NaN giving 0 (``cast``), as PTX's
``cvt.rzi.sat`` does.  Every function works on numpy arrays and numpy scalars
alike; integers wrap at their width.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def c_int_divide(a, b):
    """Integer division truncating toward zero (``a - rem`` is an exact multiple of ``b``);
    ``a / 0`` is 0, and ``MIN / -1`` wraps to ``MIN`` (numpy's result, too)."""
    zero = b == 0
    if not np.any(zero):
        return np.floor_divide(a - np.fmod(a, b), b)
    safe = np.where(zero, np.ones_like(b), b)
    quotient = np.where(zero, np.zeros_like(a), np.floor_divide(a - np.fmod(a, safe), safe))
    return _scalar_if(quotient, a, b)


def c_int_remainder(a, b):
    """The remainder with the dividend's sign; ``a % 0`` is ``a``, so that
    ``a == (a / b) * b + a % b`` holds for every ``b``."""
    zero = b == 0
    if not np.any(zero):
        return np.fmod(a, b)
    safe = np.where(zero, np.ones_like(b), b)
    return _scalar_if(np.where(zero, a, np.fmod(a, safe)), a, b)


def _scalar_if(result: np.ndarray, *operands):
    """A numpy scalar when every operand is one (``np.where`` makes 0-d arrays)."""
    if all(np.ndim(o) == 0 for o in operands):
        return result[()]
    return result


def cast(target: np.dtype, source: np.dtype) -> Callable:
    """The conversion of values of ``source`` to ``target`` (numpy's, but for float→int).

    Float to integer truncates toward zero and saturates: values beyond the type's
    range give its minimum or maximum, NaN gives 0.  Every other conversion is
    numpy's: integers wrap to a narrower integer type, floats round to the nearest
    value of a narrower float type (beyond its range: inf), bools are 0 and 1, and a
    number is a true bool unless it is 0.
    """
    if source.kind != "f" or target.kind not in "iu":
        return lambda values: values.astype(target)
    info = np.iinfo(target)
    signed = target.kind == "i"
    # Exact powers of two in float64: the first value past the top, the lowest value kept.
    past_top = 2.0 ** (info.bits - 1 if signed else info.bits)
    bottom = -(2.0 ** (info.bits - 1)) if signed else 0.0

    def saturate(values):
        whole = np.trunc(np.asarray(values, dtype=np.float64))
        inside = (whole >= bottom) & (whole < past_top)  # False for NaN
        out = np.where(inside, whole, 0.0).astype(target)
        out = np.where(whole >= past_top, target.type(info.max), out)
        out = np.where(whole < bottom, target.type(info.min), out)
        return out[()] if np.ndim(values) == 0 else out

    return saturate


def rsqrt(x):
    return np.reciprocal(np.sqrt(x))


BINARY: dict[str, Callable] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    # fmod's remainder has the dividend's sign, for integers too.
    "mod": np.fmod,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "shl": np.left_shift,
    "shr": np.right_shift,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "land": np.logical_and,
    "lor": np.logical_or,
    "max": np.maximum,
    "min": np.minimum,
}

UNARY: dict[str, Callable] = {
    "neg": np.negative,
    "not": np.logical_not,
    "bitnot": np.invert,
}

MATH: dict[str, Callable] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "rsqrt": rsqrt,
    "abs": np.abs,
}


def binary(op: str, operand_dtype: np.dtype) -> Callable:
    """The function for ``op`` on operands of ``operand_dtype``."""
    if op == "div":
        return np.true_divide if operand_dtype.kind == "f" else c_int_divide
    if op == "mod" and operand_dtype.kind in "iu":
        return c_int_remainder
    return BINARY[op]
