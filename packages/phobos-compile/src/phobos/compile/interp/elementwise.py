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

The math functions compute f16 in f32 and round once, as the GPU runtime does (numpy's
own f16 loops do so for each single function); ``fma`` rounds once, exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from phobos.compile.interp import philox


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


def _through_f32(fn: Callable) -> Callable:
    """``fn`` computed in f32 for f16 operands, its result rounded to f16 once."""

    def apply(*operands):
        if np.result_type(*operands) != np.float16:
            return fn(*operands)
        return fn(*(o.astype(np.float32) for o in operands)).astype(np.float16)

    return apply


def rsqrt(x):
    return np.reciprocal(np.sqrt(x))


@_through_f32
def sigmoid(x):
    return 1 / (1 + np.exp(-x))


_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    """math.erf in f64, rounded to the operand's type (numpy has no erf)."""
    return np.asarray(_ERF(np.asarray(x, np.float64)), np.float64).astype(x.dtype)[()]


def sign(x):
    """-1 below zero, 1 above; a zero (of either sign) and NaN are themselves."""
    one = x.dtype.type(1)
    if x.dtype.kind == "u":
        return np.where(x > 0, one, x)[()]
    return np.where(x > 0, one, np.where(x < 0, -one, x))[()]


def power(a, b):
    """numpy's power, the same for every shape: with a scalar (or stride-0) exponent of 2 numpy
    squares (``x * x``) where it calls libm's ``pow`` for an array of exponents, 1 ulp apart, so
    the interpreter (whole tiles) and the GPU-IR executor (a thread's registers) would differ.
    Every exponent is given as its own element."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    exponents = np.array(b.reshape(-1), copy=True)
    return np.power(np.array(a.reshape(-1), copy=True), exponents).reshape(a.shape)[()]


def popcount(x):
    """The number of set bits of the two's-complement pattern, as i32."""
    bits = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    return np.bitwise_count(bits).astype(np.int32)


def umulhi(a, b):
    """The high half of the exact (double-width) product of two u32 or two u64."""
    if a.dtype == np.uint32:
        wide = a.astype(np.uint64) * b.astype(np.uint64)
        return (wide >> np.uint64(32)).astype(np.uint32)
    low, half = np.uint64(0xFFFFFFFF), np.uint64(32)
    a_low, a_high, b_low, b_high = a & low, a >> half, b & low, b >> half
    middle = a_high * b_low
    # Each partial product of 32-bit halves fits 64 bits, and so does this sum.
    carry = ((a_low * b_low) >> half) + (middle & low) + a_low * b_high
    return a_high * b_high + (middle >> half) + (carry >> half)


@_through_f32
def fma(a, b, c):
    """``a * b + c`` rounded once (f16: to f32, then to f16, as the GPU runtime computes it)."""
    if np.result_type(a, b, c) == np.float64:
        return _fma_f64(a, b, c)
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(invalid="ignore"):  # inf * 0 and inf - inf: NaN, as IEEE says
        product = a * b  # exact: 24 + 24 significant bits
        total = product + c
        back = total - product
        error = (product - (total - back)) + (c - back)  # total's rounding error (2Sum)
    # Round to odd: an inexact total with an even last bit becomes its neighbour toward the
    # exact sum; rounding that to f32 is then the f32 nearest the exact sum (53 >= 24 + 2).
    even = (total.view(np.uint64) & np.uint64(1)) == 0
    odd = np.nextafter(total, np.where(error > 0, np.inf, -np.inf))
    total = np.where(np.isfinite(total) & (error != 0) & even, odd, total)
    return total.astype(np.float32)[()]


def _fma_f64(a, b, c):
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c))
    values = [_fma_exact(*map(float, abc)) for abc in np.broadcast(a, b, c)]
    return np.array(values, np.float64).reshape(shape)[()]


def _fma_exact(a: float, b: float, c: float) -> float:
    """One f64 fma through exact rationals (IEEE's result for zeros, infinities and NaN)."""
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0 or b == 0:
        return a * b + c  # the product is exact here (a zero, an infinity or NaN)
    if not math.isfinite(c):
        return c  # a finite product does not change an infinite or NaN c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return 0.0  # an exact zero sum of nonzero terms is +0 when rounding to nearest
    try:
        return float(exact)  # correctly rounded
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


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
    "expm1": np.expm1,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "sigmoid": sigmoid,
    "erf": erf,
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,  # ties to even, as the GPU's rint
    "trunc": np.trunc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "abs": np.abs,
    "sign": sign,
    "popcount": popcount,
    "pow": power,
    "fma": fma,
    "umulhi": umulhi,
    "rand": philox.rand,
    "randn": philox.randn,
    "randint": philox.randint,
}


def binary(op: str, operand_dtype: np.dtype) -> Callable:
    """The function for ``op`` on operands of ``operand_dtype``."""
    if op == "div":
        return np.true_divide if operand_dtype.kind == "f" else c_int_divide
    if op == "mod" and operand_dtype.kind in "iu":
        return c_int_remainder
    return BINARY[op]
