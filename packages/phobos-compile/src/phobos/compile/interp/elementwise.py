"""The elementwise operations, with C semantics where numpy's differ.

Integer ``div`` truncates toward zero and ``mod`` takes the dividend's sign (as in
C and on the GPU), where numpy's ``//`` and ``%`` floor.  ``max`` and ``min``
give NaN when either operand is NaN (numpy's ``maximum``; the GPU runtime's
``phobos::max`` does the same).  Every function works on numpy arrays and numpy
scalars alike; integers wrap at their width.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def c_int_divide(a, b):
    """Integer division truncating toward zero: ``a - rem`` is an exact multiple of ``b``."""
    return np.floor_divide(a - np.fmod(a, b), b)


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
    return BINARY[op]
