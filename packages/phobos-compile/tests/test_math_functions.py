"""The elementwise math functions and the integer shifts (docs/language.md, sections 4 and 5).

The checker's types and errors; the CPU interpreter against references written here from
the definitions (Python's ``math``, exact rationals and integers, numpy in f64), on odd
sizes with absent lanes, NaN, infinities and signed zeros, for every float type; and one
kernel using them all through the GPU back end: the GPU-IR executor and the printed C++
(run on the host under ``host/emulation.py``) must compute what the interpreter does, and
NVRTC must accept it for sm_80 and sm_90a.
"""

from __future__ import annotations

import math
import tempfile
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.gpu import GeneratedKernel, generate, pipeline
from phobos.compile.interp import run
from phobos.compile.ir import nodes as ir
from phobos.compile.specialization import Specialization, TensorSpecialization
from phobos.compile.syntax import parse

from .gpu_ir.conftest import execute, specialisation
from .host.emulation import COMPILER, run_on_host

BF16 = np.dtype(ml_dtypes.bfloat16)
NUMPY = {"f16": np.float16, "bf16": BF16, "f32": np.float32, "f64": np.float64}
LANES = 64


def lowered(text: str, **values: int) -> ir.Kernel:
    module = parse(text, "math.ph")
    return lower(module, module.kernels[0].name, values)


# ---------------------------------------------------------------------------- the checker

HEADER = (
    "kernel k(x: tensor<f32>[N], h: tensor<f16>[N], n: tensor<i32>[N], c: tensor<i8>[N], "
    "u: tensor<u32>[N], a: f32, m: i32, j: index) {\n"
)


def defined(line: str) -> ir.Define:
    (stmt,) = lowered(HEADER + f"    let v = {line}\n}}\n").body
    assert isinstance(stmt, ir.Define)
    return stmt


def failure(line: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        lowered(HEADER + f"    let v = {line}\n}}\n")
    return caught.value


def tile(dtype: str, partial: bool = True) -> ir.TileT:
    return ir.TileT(dtype, (8,), partial)


@pytest.mark.parametrize(
    ("line", "type"),
    [
        ("tanh(x[0 :+ 8])", tile("f32")),
        ("sigmoid(h[0 :+ 8])", tile("f16")),
        ("erf(a)", ir.ScalarT("f32")),
        ("round(2)", ir.ScalarT("f32")),  # a lone literal is f32 for a float function
        ("pow(x[0 :+ 8], 2)", tile("f32")),  # the literal adapts
        ("pow(2, 3)", ir.ScalarT("f32")),
        ("fma(h[0 :+ 8], h[0 :+ 8], 1.0)", tile("f16")),
        ("fma(a, x[0 :+ 8], a)", tile("f32")),  # scalars broadcast
        ("isnan(x[0 :+ 8])", tile("bool")),
        ("isfinite(a)", ir.ScalarT("bool")),
        ("sign(n[0 :+ 8])", tile("i32")),
        ("abs(3)", ir.ScalarT("i32")),
        ("popcount(c[0 :+ 8])", tile("i32")),
        ("popcount(m)", ir.ScalarT("i32")),
        ("umulhi(u[0 :+ 8], 2654435769)", tile("u32")),
        ("clamp(n[0 :+ 8], 0, 7)", tile("i32")),
        ("clamp(a, 0.0, 1.0)", ir.ScalarT("f32")),
    ],
)
def test_result_types(line: str, type: ir.IRType):
    assert defined(line).var.type == type


def test_clamp_is_a_maximum_then_a_minimum():
    value = defined("clamp(x[0 :+ 8], -1.0, 1.0)").value
    assert isinstance(value, ir.Binary) and value.op == "min"
    assert isinstance(value.left, ir.Binary) and value.left.op == "max"


@pytest.mark.parametrize(
    ("line", "message", "help"),
    [
        ("tanh(m)", "tanh() needs a float operand, got i32", "cast it: `tanh(f32(m))`"),
        ("pow(m, m)", "pow() needs float operands, got i32", "cast them: `pow(f32(m), f32(m))`"),
        ("floor(m)", "floor() needs a float operand, got i32", "an integer is already whole"),
        ("isnan(n[0 :+ 8])", "isnan() needs a float operand", "an integer is never NaN"),
        (
            "popcount(a)",
            "popcount() needs an integer of i8 to u64 (not index)",
            "`popcount(i32(a))`",
        ),
        ("popcount(j)", "got index", "cast it: `popcount(i32(j))`"),
        ("umulhi(m, m)", "umulhi() needs u32 or u64 operands, got i32", "`umulhi(u32(m), u32(m))`"),
        ("sign(true)", "sign() needs a number, got bool", "cast it"),
        ("fma(a, a)", "fma() takes 3 arguments, got 2", None),
        ("tanh(a, axis=0)", "tanh() has no keyword 'axis'", None),
        ("pow(a, m)", "mismatched types f32 and i32", "`f32(m)`"),
        ("clamp(true, false, true)", "clamp() needs numbers, got bool", None),
    ],
)
def test_errors_say_what_to_write(line: str, message: str, help: str | None):
    err = failure(line)
    assert message in err.message
    if help is not None:
        assert help in (err.diagnostics[0].help or "")


# ---------------------------------------------------------------------------- the interpreter


def interpret(op: str, args: list[np.ndarray], result: str, fill: str) -> np.ndarray:
    """``out[0 :+ 64] = fill(op(a0[0 :+ 64], ...), fill)`` on inputs shorter than 64 lanes:
    the lanes past them are absent, and must take the fill value."""
    params = ", ".join(f"a{k}: tensor<{_dtype(a)}>[N]" for k, a in enumerate(args))
    operands = ", ".join(f"a{k}[0 :+ {LANES}]" for k in range(len(args)))
    text = (
        f"kernel k({params}, out: tensor<{result}>[M]) {{\n"
        f"    out[0 :+ {LANES}] = fill({op}({operands}), {fill})\n}}\n"
    )
    out = np.zeros(LANES, _numpy(result))
    run(lowered(text), (1,), [*args, out])
    return out


def interpret_scalar(op: str, args: list[np.generic], result: str) -> np.generic:
    """``out[0] = op(s0, ...)`` on scalar parameters."""
    params = ", ".join(f"s{k}: {_dtype(np.asarray(a))}" for k, a in enumerate(args))
    operands = ", ".join(f"s{k}" for k in range(len(args)))
    text = f"kernel k({params}, out: tensor<{result}>[M]) {{\n    out[0] = {op}({operands})\n}}\n"
    out = np.zeros(1, _numpy(result))
    run(lowered(text), (1,), [*args, out])
    return out[0]


DTYPES = {
    **NUMPY,
    "bool": np.dtype(np.bool_),
    **{f"i{b}": np.dtype(f"int{b}") for b in (8, 16, 32, 64)},
    **{f"u{b}": np.dtype(f"uint{b}") for b in (8, 16, 32, 64)},
}


def _dtype(array: np.ndarray) -> str:
    return next(name for name, dtype in DTYPES.items() if dtype == array.dtype)


def _numpy(dtype: str) -> np.dtype:
    return np.dtype(DTYPES[dtype])


def wrapped(value: int, dtype: str) -> int:
    """``value`` modulo 2**bits, read in ``dtype``'s signedness."""
    info = np.iinfo(_numpy(dtype))
    value %= 1 << info.bits
    return value - (1 << info.bits) if value > info.max else value


SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 1e-30, -1e-30, 1e30, -1e30, np.inf, -np.inf]
SPECIAL += [np.nan, 3.0, -7.25, 0.1, 100.0, -100.0, 88.7, -88.7, 1e-8, 0.999, -0.999]


def floats(dtype: str) -> np.ndarray:
    """The special values and random ones: 45 lanes (64 in the kernel: 19 absent)."""
    rng = np.random.default_rng(5)
    values = np.concatenate([SPECIAL, 3 * rng.standard_normal(45 - len(SPECIAL))])
    with np.errstate(over="ignore"):  # 1e30 is inf in f16
        return values.astype(NUMPY[dtype])


def _round_half_even(v: float) -> float:
    if not math.isfinite(v):
        return v
    return math.copysign(float(round(Fraction(v))), v)  # Fraction rounds ties to even


def _sign(v: float) -> float:
    return v if v == 0 or math.isnan(v) else math.copysign(1.0, v)


APPROXIMATE = {
    "tanh": math.tanh,
    "sigmoid": lambda v: 1 / (1 + math.exp(-v)) if not v < -700 else 0.0,
    "erf": math.erf,
    "expm1": lambda v: math.expm1(v) if not v > 700 else math.inf,
    "log1p": lambda v: math.log1p(v) if v > -1 else (-math.inf if v == -1 else math.nan),
    "sin": lambda v: math.sin(v) if math.isfinite(v) else math.nan,
    "cos": lambda v: math.cos(v) if math.isfinite(v) else math.nan,
}
EXACT = {
    "floor": lambda v: float(math.floor(v)) if math.isfinite(v) and v != 0 else v,
    "ceil": lambda v: math.copysign(float(math.ceil(v)), v) if math.isfinite(v) and v != 0 else v,
    "trunc": lambda v: math.copysign(float(math.trunc(v)), v) if math.isfinite(v) else v,
    "round": _round_half_even,
    "sign": _sign,
    "abs": abs,
}
TESTS = {"isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite}


def reference(fn, values: np.ndarray, dtype: str) -> np.ndarray:
    """``fn`` of each value (as a Python float), rounded to ``dtype``."""
    wide = [fn(float(v)) for v in values.astype(np.float64)]
    with np.errstate(over="ignore"):  # beyond the type's range: inf, as the type rounds it
        return np.array(wide, np.float64).astype(NUMPY[dtype])


def same(got: np.ndarray, want: np.ndarray, ulps: float = 0) -> None:
    """Equal (the sign of a zero too; any NaN for NaN), or within ``ulps`` of ``want``'s type
    (and within its smallest normal, below which a formula such as sigmoid's flushes)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), (got, want)
    numbers = ~np.isnan(w)
    if ulps == 0:
        assert np.array_equal(g[numbers], w[numbers]), (got, want)
        assert np.array_equal(np.signbit(g[numbers]), np.signbit(w[numbers])), (got, want)
        return
    info = ml_dtypes.finfo(want.dtype)
    np.testing.assert_allclose(g, w, rtol=ulps * float(info.eps), atol=float(info.tiny))


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("fn", [*APPROXIMATE, *EXACT])
def test_unary_float_functions_against_references(fn, dtype):
    values = floats(dtype)
    got = interpret(fn, [values], dtype, "7.0")
    assert (got[len(values) :] == 7).all()  # absent lanes stay absent
    exact = fn in EXACT
    ulps = 0 if exact else (2 if dtype in ("f16", "bf16") else 4)
    same(got[: len(values)], reference({**APPROXIMATE, **EXACT}[fn], values, dtype), ulps)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
@pytest.mark.parametrize("fn", TESTS)
def test_nan_and_infinity_tests(fn, dtype):
    values = floats(dtype)
    at_zero = TESTS[fn](0.0)
    got = interpret(fn, [values], "bool", "false" if at_zero else "true")
    assert (got[len(values) :] == (not at_zero)).all()
    assert got[: len(values)].tolist() == [TESTS[fn](float(v)) for v in values.astype(np.float64)]


def test_round_ties_to_even_and_keeps_the_sign_of_zero():
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 8388609.0], np.float32)
    got = interpret("round", [values], "f32", "7.0")[: len(values)]
    same(got, np.array([0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 8388609.0], np.float32))


def test_pow_follows_c():
    pairs = [
        (0.0, 0.0, 1.0), (np.nan, 0.0, 1.0), (1.0, np.nan, 1.0), (-8.0, 1 / 3, np.nan),
        (2.0, 10.0, 1024.0), (-2.0, 3.0, -8.0), (0.0, -1.0, np.inf), (-0.0, -1.0, -np.inf),
        (np.inf, -1.0, 0.0), (-1.0, np.inf, 1.0), (0.5, np.inf, 0.0), (4.0, 0.5, 2.0),
    ]  # fmt: skip
    base, exponent, want = (np.array(column, np.float32) for column in zip(*pairs))
    got = interpret("pow", [base, exponent], "f32", "7.0")
    same(got[: len(pairs)], want)
    assert (got[len(pairs) :] == 7).all()


def nearest_f32(value: Fraction) -> np.float32:
    """The f32 nearest ``value`` (ties to even), by comparing the neighbours exactly."""
    guess = np.float32(float(value))
    candidates = [
        np.nextafter(guess, np.float32(-np.inf)),
        guess,
        np.nextafter(guess, np.float32(np.inf)),
    ]
    return min(
        candidates, key=lambda c: (abs(Fraction(float(c)) - value), int(c.view(np.uint32)) & 1)
    )


def exact_fma(a: float, b: float, c: float) -> Fraction | float:
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c
    return Fraction(a) * Fraction(b) + Fraction(c)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64"])
def test_fma_rounds_once(dtype):
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(45).astype(NUMPY[dtype]) for _ in range(3))
    a[0] = b[0] = 1 + 2.0 ** -(8 if dtype == "bf16" else 11 if dtype == "f16" else 12)
    c[0] = -(a[0].astype(np.float64) * b[0].astype(np.float64))  # a * b - a * b: the error
    c[1] = np.inf
    got = interpret("fma", [a, b, c], dtype, "7.0")
    assert (got[45:] == 7).all()
    want = []
    for x, y, z in zip(*(v.astype(np.float64) for v in (a, b, c))):
        exact = exact_fma(float(x), float(y), float(z))
        if not isinstance(exact, Fraction) or exact == 0 or dtype == "f64":
            want.append(float(exact))
        else:  # f16 and bf16 compute in f32, then round to their type
            want.append(float(nearest_f32(exact)))
    same(got[:45], np.array(want, np.float64).astype(NUMPY[dtype]))
    if dtype == "f32":
        assert got[0] != 0  # fused: a separate product and sum would give 0


def test_f64_fma_is_exact_beyond_f64s_range_of_products():
    a = np.array([1e308, 1e308, 0.1])
    b = np.array([10.0, 2.0, 10.0])
    c = np.array([-np.inf, -1.5e308, -1.0])
    got = interpret("fma", [a, b, c], "f64", "7.0")[:3]
    assert got[0] == -np.inf  # the exact product is finite: -inf plus it is -inf, not NaN
    assert got[1] == float(Fraction(1e308) * 2 - Fraction(1.5e308))  # a * b alone is inf
    assert got[2] == float(Fraction(0.1) * 10 - 1)  # 2**-54, where 0.1 * 10 - 1 is 0


@pytest.mark.parametrize("dtype", ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"])
def test_popcount_counts_the_twos_complement_bits(dtype):
    info = np.iinfo(_numpy(dtype))
    values = np.array([0, 1, 5, info.max, info.min, info.max // 3], _numpy(dtype))
    if info.min < 0:
        values = np.concatenate([values, np.array([-1, -2], _numpy(dtype))])
    got = interpret("popcount", [values], "i32", "77")
    assert (got[len(values) :] == 77).all()
    mask = (1 << info.bits) - 1
    assert got[: len(values)].tolist() == [bin(int(v) & mask).count("1") for v in values]


@pytest.mark.parametrize("dtype", ["u32", "u64"])
def test_umulhi_is_the_high_half_of_the_exact_product(dtype):
    bits = 32 if dtype == "u32" else 64
    rng = np.random.default_rng(11)
    a = rng.integers(0, 2**bits, 45, dtype=np.uint64, endpoint=False).astype(_numpy(dtype))
    b = rng.integers(0, 2**bits, 45, dtype=np.uint64, endpoint=False).astype(_numpy(dtype))
    a[0] = b[0] = 2**bits - 1
    a[1], b[1] = 0, 2**bits - 1
    got = interpret("umulhi", [a, b], dtype, "77")
    assert (got[45:] == 77).all()
    assert got[:45].tolist() == [(int(x) * int(y)) >> bits for x, y in zip(a, b)]


@pytest.mark.parametrize("dtype", ["i8", "u8", "i32", "u64"])
def test_sign_and_abs_of_integers(dtype):
    info = np.iinfo(_numpy(dtype))
    values = np.array([0, 1, info.max, info.min, 7], _numpy(dtype))
    sign = interpret("sign", [values], dtype, "77")
    assert sign[:5].tolist() == [(v > 0) - (v < 0) for v in map(int, values)]
    magnitude = interpret("abs", [values], dtype, "77")
    assert magnitude[:5].tolist() == [wrapped(abs(v), dtype) for v in map(int, values)]


def test_clamp_of_tiles_propagates_nan_and_gives_hi_when_lo_is_above_it():
    t = np.array([-2.0, 0.25, 2.0, np.nan, 0.0, 5.0], np.float32)
    lo = np.array([-1.0, -1.0, -1.0, -1.0, np.nan, 3.0], np.float32)
    hi = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 2.0], np.float32)
    got = interpret("clamp", [t, lo, hi], "f32", "7.0")
    same(got[:6], np.array([-1.0, 0.25, 1.0, np.nan, np.nan, 2.0], np.float32))
    assert (got[6:] == 7).all()


@pytest.mark.parametrize(
    ("op", "args", "want"),
    [
        ("tanh", [np.float32(0.5)], np.tanh(np.float32(0.5))),
        ("round", [np.float64(-2.5)], -2.0),
        ("sign", [np.float32(-0.0)], -0.0),
        ("fma", [np.float32(2), np.float32(3), np.float32(1)], 7.0),
        ("pow", [np.float16(3), np.float16(2)], 9.0),
        ("isinf", [np.float32(-np.inf)], True),
        ("popcount", [np.int64(-1)], 64),
        ("umulhi", [np.uint32(2**31), np.uint32(6)], 3),
        ("clamp", [np.int32(9), np.int32(0), np.int32(7)], 7),
    ],
)
def test_on_scalars(op, args, want):
    result = {"isinf": "bool", "popcount": "i32"}.get(op, _dtype(np.asarray(args[0])))
    got = interpret_scalar(op, args, result)
    assert got == want and math.copysign(1, float(got)) == math.copysign(1, float(want))


# ---------------------------------------------------------------------------- shifts

COUNTS = [-1, 0, 1, 3, 7, 8, 15, 31, 32, 40, 63, 64, 100]


@pytest.mark.parametrize("dtype", ["i8", "u8", "i32", "u32", "i64"])
def test_shift_counts_outside_the_width_shift_every_bit_out(dtype):
    info = np.iinfo(_numpy(dtype))
    counts = [n for n in COUNTS if info.min <= n <= info.max]
    values = [v for v in (1, -8, info.max, info.min, 5) if info.min <= v <= info.max]
    a = np.array([v for v in values for _ in counts], _numpy(dtype))
    n = np.array([c for _ in values for c in counts], _numpy(dtype))
    size = len(a)
    for op, shift in (("<<", lambda v, c: v << c), (">>", lambda v, c: v >> c)):
        text = (
            f"kernel k(a: tensor<{dtype}>[N], n: tensor<{dtype}>[N], out: tensor<{dtype}>[N]) {{\n"
            f"    out[0 :+ 128] = a[0 :+ 128] {op} n[0 :+ 128]\n}}\n"
        )
        out = np.zeros(size, _numpy(dtype))
        run(lowered(text), (1,), [a, n, out])
        want = [
            wrapped(shift(v, c), dtype) if 0 <= c < info.bits else -(op == ">>" and v < 0)
            for v, c in zip(map(int, a), map(int, n))
        ]
        assert out.tolist() == want, op


# ---------------------------------------------------------------------------- the GPU back end

PROGRAM = """\
kernel math(x: tensor<f32>[N], y: tensor<f32>[N], h: tensor<f16>[N], b: tensor<bf16>[N],
            d: tensor<f64>[N], n: tensor<i32>[N], s: tensor<i8>[N], u: tensor<u32>[N],
            w: tensor<u64>[N], approx: tensor<f32>[M, 10], exact: tensor<f32>[M, 10],
            half: tensor<f16>[M, 4], brain: tensor<bf16>[M, 4], double: tensor<f64>[M, 4],
            flags: tensor<bool>[M, 3], ints: tensor<i32>[M, 6], words: tensor<u32>[M],
            longs: tensor<u64>[M]) {
    let i = ctx.block.x * 32
    let a = x[i :+ 32]
    let e = y[i :+ 32]
    approx[i :+ 32, 0] = tanh(a)
    approx[i :+ 32, 1] = sigmoid(a)
    approx[i :+ 32, 2] = erf(a)
    approx[i :+ 32, 3] = expm1(a)
    approx[i :+ 32, 4] = log1p(a)
    approx[i :+ 32, 5] = sin(a)
    approx[i :+ 32, 6] = cos(a)
    approx[i :+ 32, 7] = pow(abs(a), e)
    approx[i :+ 32, 8] = pow(a, 3.0)
    approx[i :+ 32, 9] = fill(tanh(a), 9.0)
    exact[i :+ 32, 0] = floor(a)
    exact[i :+ 32, 1] = ceil(a)
    exact[i :+ 32, 2] = round(a * 2.0)
    exact[i :+ 32, 3] = trunc(a)
    exact[i :+ 32, 4] = sign(a)
    exact[i :+ 32, 5] = clamp(a, -0.5, e)
    exact[i :+ 32, 6] = fma(a, e, 0.25)
    exact[i :+ 32, 7] = abs(a)
    exact[i :+ 32, 8] = fill(round(a), 7.0)
    exact[i :+ 32, 9] = sqrt(abs(a))
    let hh = h[i :+ 32]
    half[i :+ 32, 0] = tanh(hh)
    half[i :+ 32, 1] = round(hh * 4.0)
    half[i :+ 32, 2] = fma(hh, hh, hh)
    half[i :+ 32, 3] = sign(hh)
    let bb = b[i :+ 32]
    brain[i :+ 32, 0] = sigmoid(bb)
    brain[i :+ 32, 1] = floor(bb * 4.0)
    brain[i :+ 32, 2] = fma(bb, bb, bb)
    brain[i :+ 32, 3] = clamp(bb, -1.0, 1.0)
    let dd = d[i :+ 32]
    double[i :+ 32, 0] = erf(dd)
    double[i :+ 32, 1] = round(dd * 2.0)
    double[i :+ 32, 2] = fma(dd, dd, -1.0)
    double[i :+ 32, 3] = pow(dd, 2.0)
    flags[i :+ 32, 0] = isnan(a)
    flags[i :+ 32, 1] = isinf(a)
    flags[i :+ 32, 2] = isfinite(a * e)
    let k = n[i :+ 32]
    let c = i32(s[i :+ 32])
    ints[i :+ 32, 0] = popcount(k)
    ints[i :+ 32, 1] = popcount(s[i :+ 32])
    ints[i :+ 32, 2] = sign(k) + clamp(k, -100, 100)
    ints[i :+ 32, 3] = k << c
    ints[i :+ 32, 4] = k >> c
    ints[i :+ 32, 5] = (~k & 7 | 16) ^ (k >> 40)
    words[i :+ 32] = umulhi(u[i :+ 32], 2654435769)
    longs[i :+ 32] = umulhi(w[i :+ 32], w[i :+ 32])
}
"""
APPROX_OUTPUTS = ("approx", "half", "brain", "double")


def program_inputs(rng: np.random.Generator, n: int = 45, m: int = 64) -> list:
    """Inputs of ``n`` lanes with the special values first; outputs of ``m`` rows, poisoned:
    rows past ``n`` are absent in every column but the filled ones."""
    x = np.resize(floats("f32"), n)
    x[len(SPECIAL) :] = 3 * rng.standard_normal(n - len(SPECIAL))
    y = rng.standard_normal(n).astype(np.float32)
    y[:3] = [np.inf, np.nan, -0.0]
    return [
        x,
        y,
        (2 * rng.standard_normal(n)).astype(np.float16),
        (2 * rng.standard_normal(n)).astype(BF16),
        (2 * rng.standard_normal(n)),
        rng.integers(-(2**31), 2**31, n).astype(np.int32),
        rng.integers(-128, 128, n).astype(np.int8),
        rng.integers(0, 2**32, n).astype(np.uint32),
        rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
        np.full((m, 10), np.nan, np.float32),
        np.full((m, 10), np.nan, np.float32),
        np.full((m, 4), np.nan, np.float16),
        np.full((m, 4), np.nan, BF16),
        np.full((m, 4), np.nan),
        np.ones((m, 3), bool),
        np.full((m, 6), -999, np.int32),
        np.full(m, 12345, np.uint32),
        np.full(m, 12345, np.uint64),
    ]


NAMES = ("x", "y", "h", "b", "d", "n", "s", "u", "w", "approx", "exact", "half", "brain")
NAMES += ("double", "flags", "ints", "words", "longs")


def grid(args: list) -> tuple[int]:
    return (-(-len(args[0]) // 32),)


def assert_agree(expected: list, got: list, approx_ulps: float = 0) -> None:
    for name, want, have in zip(NAMES, expected, got):
        if name in APPROX_OUTPUTS and approx_ulps:
            same(have, want, approx_ulps)
        else:
            assert np.array_equal(
                want.astype(np.float64), have.astype(np.float64), equal_nan=True
            ), name


def interpreted(args: list) -> list:
    expected = [a.copy() for a in args]
    run(lowered(PROGRAM), grid(args), expected)
    return expected


def test_the_program_leaves_absent_rows_alone_but_the_filled_columns():
    expected = interpreted(program_inputs(np.random.default_rng(1)))
    approx, exact = expected[9], expected[10]
    assert np.isnan(approx[45:, :9]).all() and (approx[45:, 9] == 9).all()
    assert np.isnan(exact[45:, :8]).all() and (exact[45:, 8] == 7).all()
    assert (expected[15][45:] == -999).all() and (expected[16][45:] == 12345).all()
    assert not np.isnan(exact[:45, 0][np.isfinite(expected[0])]).any()


@pytest.fixture(scope="module")
def built() -> dict[tuple[str, bool], object]:
    kernel = lowered(PROGRAM)
    return {
        (arch, specialised): pipeline.build(
            kernel, arch=arch, index_width=32, **specialisation(kernel, specialised)
        )
        for arch, specialised in (("sm_90a", True), ("sm_80", False))
    }


@pytest.mark.parametrize(("arch", "specialised"), [("sm_90a", True), ("sm_80", False)])
def test_the_gpu_ir_executor_computes_what_the_interpreter_does(built, arch, specialised):
    args = program_inputs(np.random.default_rng(2))
    got = [a.copy() for a in args]
    execute(built[arch, specialised], grid(args), got)
    assert_agree(interpreted(args), got)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    n=st.integers(1, 64),
    seed=st.integers(0, 2**32 - 1),
    special=st.lists(st.sampled_from(SPECIAL), max_size=8),
)
def test_the_executor_agrees_on_any_length_and_values(built, n, seed, special):
    rng = np.random.default_rng(seed)
    args = program_inputs(rng, n=max(n, len(SPECIAL)), m=64)
    args = [a[:n] if k < 9 else a for k, a in enumerate(args)]
    args[0][: len(special[:n])] = special[:n]
    got = [a.copy() for a in args]
    execute(built["sm_80", False], grid(args), got)
    assert_agree(interpreted(args), got)


@pytest.mark.skipif(COMPILER is None, reason="needs g++")
def test_the_printed_cpp_computes_what_the_interpreter_does():
    """Under the host's math library: the exact functions exactly, the others to 4 ulps."""
    kernel = lowered(PROGRAM)
    args = program_inputs(np.random.default_rng(3))
    expected = interpreted(args)
    launches, results = [], []
    for arch in ("sm_90a", "sm_80"):
        facts = TensorSpecialization(16, True)
        spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
        generated = generate(kernel, spec, arch)
        entry = f"{generated.entry}_{arch}"
        source = generated.source.replace(f"{generated.entry}(", f"{entry}(")
        got = [a.copy() for a in args]
        launches.append(
            (GeneratedKernel(source, entry, generated.contract, generated.gpu_ir), grid(args), got)
        )
        results.append(got)
    with tempfile.TemporaryDirectory(prefix="phobos-math-") as work:
        run_on_host(launches, Path(work))
    for got in results:
        assert_agree(expected, got, approx_ulps=4)


# One small kernel per group (NVVM's time grows fast with a kernel's size): each function once,
# each of the runtime's templates at the types that take another branch of it.
NVRTC_KERNELS = {
    "f32": (
        "x: tensor<f32>[N], out: tensor<f32>[N]",
        "let v = x[i :+ 32]\n"
        "out[i :+ 32] = tanh(v) + sigmoid(v) + erf(v) + expm1(v) + log1p(v) + sin(v) + cos(v)"
        " + pow(v, v) + floor(v) + ceil(v) + round(v) + trunc(v) + sign(v) + clamp(v, 0.0, 1.0)"
        " + fma(v, v, v)",
    ),
    "f16": (
        "x: tensor<f16>[N], out: tensor<f16>[N]",
        "let v = x[i :+ 32]\nout[i :+ 32] = tanh(v) + pow(v, v) + fma(v, v, v) + sign(v)",
    ),
    "bf16": (
        "x: tensor<bf16>[N], out: tensor<bf16>[N]",
        "let v = x[i :+ 32]\nout[i :+ 32] = sigmoid(v) + pow(v, v) + fma(v, v, v) + sign(v)",
    ),
    "f64": (
        "x: tensor<f64>[N], out: tensor<f64>[N]",
        "let v = x[i :+ 32]\nout[i :+ 32] = round(v) + fma(v, v, v) + sign(v) + erf(v)",
    ),
    "tests": (
        "h: tensor<f16>[N], b: tensor<bf16>[N], d: tensor<f64>[N], out: tensor<bool>[N]",
        "out[i :+ 32] = isnan(h[i :+ 32]) || isinf(b[i :+ 32]) || isfinite(d[i :+ 32])",
    ),
    "narrow integers": (
        "c: tensor<i8>[N], out: tensor<i32>[N]",
        "let v = c[i :+ 32]\nout[i :+ 32] = popcount(v) + i32(sign(v) + (v << v) + (v >> v))",
    ),
    "wide integers": (
        "w: tensor<u64>[N], u: tensor<u32>[N], out: tensor<u64>[N]",
        "let v = w[i :+ 32]\nlet n = u[i :+ 32]\n"
        "out[i :+ 32] = umulhi(v, v) + u64(umulhi(n, n) + u32(popcount(n)) + sign(n))"
        " + (v << v) + (v >> v) + u64(popcount(v))",
    ),
}
INSTRUCTIONS = {
    "f32": ("fma.rn.f32", "cvt.rni.f32.f32"),
    "f64": ("fma.rn.f64", "cvt.rni.f64.f64"),
    "narrow integers": ("popc.b32",),
    "wide integers": ("mul.hi.u64", "mul.hi.u32", "popc.b64"),
}


@pytest.mark.parametrize("group", NVRTC_KERNELS)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvrtc_compiles_each_function(arch, group):
    pytest.importorskip(
        "cuda.bindings.nvrtc", reason="needs NVRTC (pip install phobos-compile[cuda])"
    )
    from phobos.compile.pipeline import compile_kernel

    params, body = NVRTC_KERNELS[group]
    lines = "".join(f"    {line}\n" for line in ["let i = ctx.block.x * 32", *body.split("\n")])
    text = f"kernel k({params}) {{\n{lines}}}\n"
    built = compile_kernel(parse(text, "math.ph"), "k", {}, arch=arch)
    assert built.cubin.startswith(b"\x7fELF")
    for instruction in INSTRUCTIONS.get(group, ()):
        assert instruction in built.ptx, instruction
