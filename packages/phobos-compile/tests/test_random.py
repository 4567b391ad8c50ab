"""Counter-based random numbers: ``rand``, ``randn`` and ``randint`` (docs/language.md, section 5).

Philox 4x32-10 is written again here from its definition (Salmon et al., SC 2011) on Python
integers, checked against the known-answer vectors of the paper's Random123 library, and the
interpreter must give its bits exactly (``randint``), its bits made floats exactly as
docs/language.md defines (``rand``), and Box-Muller computed in float64 to a few units in the
last place (``randn``, whose own f32 definition the GPU follows to the bit).  The draws pass
tests of their moments with tolerances from the sample size; absent lanes stay absent; the
checker's errors say what to write.  Through the GPU back end, the GPU-IR executor and the
printed C++ (run on the host under ``host/emulation.py``) must give the interpreter's bits,
randn's included, and NVRTC must accept the runtime's functions for sm_80 and sm_90a.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

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
from phobos.frontend import translate_source

from .gpu_ir.conftest import execute, specialisation
from .host.emulation import COMPILER, run_on_host

ROOT = Path(__file__).resolve().parents[3]
MASK = 0xFFFFFFFF


# ---------------------------------------------------------------------------- the reference


def philox_reference(counter: tuple[int, int, int, int], key: tuple[int, int]) -> list[int]:
    """Philox 4x32 with 10 rounds, on Python integers, from the paper's definition."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(10):
        a = 0xD2511F53 * c0  # the exact 64-bit products
        b = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (b >> 32) ^ c1 ^ k0, b & MASK, (a >> 32) ^ c3 ^ k1, a & MASK
        k0, k1 = (k0 + 0x9E3779B9) & MASK, (k1 + 0xBB67AE85) & MASK
    return [c0, c1, c2, c3]


def reference_words(seed: int, offset: int) -> list[int]:
    """The key is the seed's two words, the counter the offset's two words then zeros (each as
    a 64-bit two's-complement integer, low word first)."""
    s, o = seed % 2**64, offset % 2**64
    return philox_reference((o & MASK, o >> 32, 0, 0), (s & MASK, s >> 32))


def reference_uniform(bits: int) -> np.float32:
    """The bits folded to 31, rounded to f32, times (1 - 2^-24) 2^-31 rounded once to f32."""
    folded = bits if bits < 2**31 else MASK - bits
    value = float(np.float32(folded))  # folded < 2^31 is exact in a float64, rounded once
    exact = value * (1 - 2**-24) * 2**-31  # exact in float64: 24 + 24 significant bits
    return np.float32(exact)


def reference_normal(first: int, second: int) -> float:
    """Box-Muller in float64 on the two uniforms the definition draws from two words."""
    u = ((first >> 8) + 1) * 2.0**-24
    v = (second >> 8) * 2.0**-24
    return math.sqrt(-2 * math.log(u)) * math.cos(2 * math.pi * v)


# The known-answer vectors of Random123 (kat_vectors, philox4x32 with 10 rounds): counter,
# key, the four output words.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK,) * 4, (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("counter", "key", "want"), KNOWN_ANSWERS)
def test_the_reference_gives_random123s_known_answers(counter, key, want):
    assert philox_reference(counter, key) == list(want)


# (seed, offset, randint, rand's bits): what the definition gives, written out so that a
# change to the reference and the implementation together still fails.  Triton's tl.randint
# keys and counts the same way, so for these non-negative seeds and offsets it gives these bits.
TABLE = [
    (0, 0, 0x6627E8D5, 0x3F4C4FD1),
    (0, 1, 0xF8E4CCA4, 0x3D63666A),
    (42, 0, 0x9CEAF053, 0x3F462A1E),
    (42, 12345, 0xEF322867, 0x3E066EBC),
    (2**32 + 7, 2**40 + 3, 0x5B8283B0, 0x3F370506),
]


@pytest.mark.parametrize(("seed", "offset", "bits", "uniform"), TABLE)
def test_the_reference_gives_the_table(seed, offset, bits, uniform):
    assert reference_words(seed, offset)[0] == bits
    assert int(reference_uniform(bits).view(np.uint32)) == uniform


def test_the_uniform_never_reaches_one():
    top = reference_uniform(2**31 - 1)  # 2^31 - 1 rounds up to 2^31
    assert float(top) == 1 - 2**-24 and reference_uniform(2**31) == top  # ~2^31 = 2^31 - 1
    assert reference_uniform(0) == 0 and reference_uniform(MASK) == 0


# ---------------------------------------------------------------------------- the checker


def lowered(text: str, file: str = "random.ph", **values: int) -> ir.Kernel:
    module = parse(text, file)
    return lower(module, module.kernels[0].name, values)


HEADER = (
    "kernel k(x: tensor<f32>[N], n: tensor<i32>[N], c: tensor<i8>[N], w: tensor<u64>[N], "
    "a: f32, s: i64, m: i32, j: index) {\n"
)


def defined(line: str) -> ir.Define:
    (stmt,) = lowered(HEADER + f"    let v = {line}\n}}\n").body
    assert isinstance(stmt, ir.Define)
    return stmt


def failure(line: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        lowered(HEADER + f"    let v = {line}\n}}\n")
    return caught.value


@pytest.mark.parametrize(
    ("line", "type"),
    [
        ("rand(s, n[0 :+ 8])", ir.TileT("f32", (8,), True)),
        ("randn(m, arange(8))", ir.TileT("f32", (8,), False)),
        ("randint(7, w[0 :+ 8])", ir.TileT("u32", (8,), True)),
        ("rand(j, c[0 :+ 8])", ir.TileT("f32", (8,), True)),
        ("rand(s, 5)", ir.ScalarT("f32")),
        ("randint(-1, m)", ir.ScalarT("u32")),
        ("rand(s, arange(4)[:, newaxis] * 4 + arange(4))", ir.TileT("f32", (4, 4), False)),
    ],
)
def test_result_types(line, type):
    assert defined(line).var.type == type


def test_the_seed_becomes_u64_and_narrow_offsets_i32():
    value = defined("rand(m, c[0 :+ 8])").value
    assert isinstance(value, ir.Math) and value.fn == "rand"
    seed, offsets = value.operands
    assert isinstance(seed, ir.Splat) and seed.type.dtype == "u64"
    assert isinstance(seed.operand, ir.Cast) and seed.operand.operand.type.dtype == "i32"
    assert isinstance(offsets, ir.Cast) and offsets.type == ir.TileT("i32", (8,), True)
    wide = defined("rand(18446744073709551615, 9223372036854775807)").value
    assert [o.type.dtype for o in wide.operands] == ["u64", "i64"]


@pytest.mark.parametrize(
    ("line", "message", "help"),
    [
        ("rand(s, x[0 :+ 8])", "rand() needs integer offsets, got tile<f32>[8]", "`rand(s, i64(x[0 :+ 8]))`"),
        ("randn(s, 2.5)", "randn() needs integer offsets, got float literal", "arange(BLOCK)"),
        ("rand(s, n[0 :+ 8] > 0)", "rand() needs integer offsets, got tile<bool>[8]", None),
        ("rand(a, n[0 :+ 8])", "rand() needs an integer seed, got f32", "`rand(i64(a), n[0 :+ 8])`"),
        ("randint(1.5, m)", "randint() needs an integer seed, got float literal", None),
        ("rand(n[0 :+ 8], n[0 :+ 8])", "rand() takes one seed, a scalar, got tile<i32>[8]", "`seed: i64`"),
        ("rand(s)", "rand() takes 2 arguments, got 1", None),
        ("rand(s, m, axis=0)", "rand() has no keyword 'axis'", None),
        ("rand(-9223372036854775809, m)", "out of range for i64", None),
    ],
)  # fmt: skip
def test_errors_say_what_to_write(line, message, help):
    err = failure(line)
    assert message in err.message
    if help is not None:
        assert help in (err.diagnostics[0].help or "")


def test_an_error_names_the_file_line_and_column_with_a_caret():
    text = "kernel k(x: tensor<f32>[N], s: i64) {\n    x[0 :+ 8] = rand(s, x[0 :+ 8])\n}\n"
    with pytest.raises(PhobosError) as caught:
        lowered(text, "drop.ph")
    rendered = caught.value.render()
    assert "drop.ph:2:25" in rendered
    assert "x[0 :+ 8] = rand(s, x[0 :+ 8])" in rendered and "^^^^^^^^^" in rendered


PYTHON = """\
import phobos.lang as ph


@ph.kernel
def k(x: ph.tensor[ph.f32][N], s: ph.i64):
    x[0:+8] = ph.rand(s, x[0:+8])
"""


def test_the_python_spelling_has_the_same_error_spelled_in_python():
    module = translate_source(PYTHON, "/work/drop.py").module
    with pytest.raises(PhobosError) as caught:
        lower(module, "k", {})
    diagnostic = caught.value.diagnostics[0]
    assert diagnostic.message == "rand() needs integer offsets, got tile<f32>[8]"
    assert "`ph.rand(s, ph.i64(x[0:+8]))`" in (diagnostic.help or "")
    span = diagnostic.span
    assert (span.file, span.line, span.col) == ("/work/drop.py", 6, 26)


# ---------------------------------------------------------------------------- the interpreter

KERNEL = """\
kernel draws(o: tensor<{dtype}>[N], bits: tensor<u32>[M], uniform: tensor<f32>[M],
             normal: tensor<f32>[M], seed: {seed}) {{
    let i = ctx.block.x * 64
    let offsets = o[i :+ 64]
    bits[i :+ 64] = fill(randint(seed, offsets), 7u32)
    uniform[i :+ 64] = fill(rand(seed, offsets), 7.0)
    normal[i :+ 64] = fill(randn(seed, offsets), 7.0)
}}
"""
OFFSET_TYPES = ["i8", "u16", "i32", "u32", "i64", "u64", "index"]
NUMPY = {"index": np.int64, **{t: np.dtype(t.replace("i", "int").replace("u", "uint")) for t in OFFSET_TYPES[:-1]}}  # fmt: skip


def draws_inputs(offsets: np.ndarray, m: int) -> list:
    return [offsets, np.zeros(m, np.uint32), np.zeros(m, np.float32), np.zeros(m, np.float32)]


def interpret_draws(dtype: str, offsets: np.ndarray, seed, seed_type: str, m: int) -> list:
    args = [*draws_inputs(offsets, m), seed]
    run(lowered(KERNEL.format(dtype=dtype, seed=seed_type)), (-(-m // 64),), args)
    return args[1:4]


def offsets_of(dtype: str, count: int, rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(NUMPY[dtype] if dtype != "index" else np.int32)
    values = rng.integers(
        info.min, int(info.max) + 1, count, dtype=np.int64 if info.min < 0 else np.uint64
    )
    values[:3] = [0, 1, info.max] if info.min == 0 else [0, -1, info.min]
    return values.astype(NUMPY[dtype])


def assert_normals_close(got: np.ndarray, words: list[list[int]]) -> None:
    """randn against float64 Box-Muller: within 4 f32 ulps of |z|, or 2^-23 near a zero of the
    cosine (whose own error is absolute)."""
    want = np.array([reference_normal(w[0], w[1]) for w in words])
    tolerance = np.maximum(
        4 * np.spacing(np.abs(want).astype(np.float32)).astype(np.float64), 2.0**-23
    )
    assert (np.abs(got.astype(np.float64) - want) <= tolerance).all(), np.abs(got - want).max()


@pytest.mark.parametrize("dtype", OFFSET_TYPES)
def test_the_interpreter_gives_the_definitions_values(dtype):
    rng = np.random.default_rng(len(dtype))
    offsets = offsets_of(dtype, 100, rng)  # 128 lanes: the last 28 absent
    seed = -1234567  # an i32 seed below zero: the key is its sign-extended 64 bits
    bits, uniform, normal = interpret_draws(dtype, offsets, np.int32(seed), "i32", 128)
    words = [reference_words(seed, int(o)) for o in offsets]
    assert bits[:100].tolist() == [w[0] for w in words]
    want = np.array([reference_uniform(w[0]) for w in words], np.float32)
    assert np.array_equal(uniform[:100].view(np.uint32), want.view(np.uint32))
    assert_normals_close(normal[:100], words)
    assert (bits[100:] == 7).all() and (uniform[100:] == 7).all() and (normal[100:] == 7).all()


def test_a_value_is_its_offsets_whatever_its_type():
    """i32(-1), i64(-1) and index(-1) count the same; a u32 offset is its own value."""
    small = np.array([-1, 0, 5, -(2**31)], np.int32)
    results = [
        interpret_draws(t, small.astype(NUMPY[t]), np.uint64(9), "u64", 64)
        for t in ("i32", "i64", "index")
    ]
    for other in results[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(results[0], other))
    unsigned = interpret_draws("u32", small.view(np.uint32), np.uint64(9), "u64", 64)
    assert unsigned[0][0] == reference_words(9, 2**32 - 1)[0] != results[0][0][0]


def test_on_scalars_and_literals():
    text = (
        "kernel k(out: tensor<u32>[M], f: tensor<f32>[K], s: i64) {\n"
        "    out[0] = randint(s, 5)\n    out[1] = randint(-1, 2i8)\n"
        "    out[2] = randint(18446744073709551615, -1)\n    f[0] = rand(s, 5)\n"
        "    f[1] = randn(s, 5)\n}\n"
    )
    out, f = np.zeros(3, np.uint32), np.zeros(2, np.float32)
    run(lowered(text), (1,), [out, f, np.int64(3)])
    assert out.tolist() == [
        reference_words(3, 5)[0],
        reference_words(-1, 2)[0],
        reference_words(-1, -1)[0],
    ]
    assert f[0] == reference_uniform(reference_words(3, 5)[0])
    assert_normals_close(f[1:], [reference_words(3, 5)])


def test_randn_is_box_muller_on_every_angle_and_radius():
    """The f32 logarithm and cosine over their whole domains (2^24 steps each)."""
    from phobos.compile.interp import philox

    steps = np.arange(2**24, dtype=np.uint32)
    got = philox.log_of_steps(steps + np.uint32(1)).astype(np.float64)
    want = np.log((steps.astype(np.float64) + 1) * 2.0**-24)
    assert got[-1] == 0 and (got[:-1] < 0).all()
    assert (np.abs(got - want) <= 2 * np.spacing(np.abs(want).astype(np.float32))).all()
    cosine = philox.cos_of_steps(steps).astype(np.float64)
    assert (
        np.abs(cosine - np.cos(2 * np.pi * steps.astype(np.float64) * 2.0**-24)).max()
        < 2 * 2.0**-24
    )


# ---------------------------------------------------------------------------- statistics

STATS = """\
kernel k(u: tensor<f32>[N], z: tensor<f32>[N], b: tensor<u32>[N], seed: u32) {
    let i = ctx.block.x * 8192
    let offsets = i + arange(8192)
    u[i :+ 8192] = rand(seed, offsets)
    z[i :+ 8192] = randn(seed, offsets)
    b[i :+ 8192] = randint(seed, offsets)
}
"""
DRAWS = 1 << 20


@pytest.fixture(scope="module")
def many() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    u, z, b = np.zeros(DRAWS, np.float32), np.zeros(DRAWS, np.float32), np.zeros(DRAWS, np.uint32)
    run(lowered(STATS), (DRAWS // 8192,), [u, z, b, np.uint32(2024)])
    return u.astype(np.float64), z.astype(np.float64), b


SIGMAS = 6  # each check fails by chance with probability about 2e-9 (for these fixed draws: never)


def test_uniform_moments(many):
    u = many[0]
    assert u.min() >= 0 and u.max() < 1
    # mean 1/2 with standard error sqrt(1/12 / n); variance 1/12 with sqrt((1/80 - 1/144) / n).
    assert abs(u.mean() - 0.5) < SIGMAS * math.sqrt(1 / 12 / DRAWS)
    assert abs(u.var() - 1 / 12) < SIGMAS * math.sqrt((1 / 80 - 1 / 144) / DRAWS)
    # Each tenth of [0, 1) holds a tenth of the draws: binomial standard error sqrt(0.09 n).
    counts = np.bincount((u * 10).astype(int), minlength=10)
    assert (np.abs(counts - DRAWS / 10) < SIGMAS * math.sqrt(0.09 * DRAWS)).all(), counts
    # Neighbouring offsets are uncorrelated: the sample correlation's error is 1/sqrt(n).
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < SIGMAS / math.sqrt(DRAWS)


def test_normal_moments(many):
    z = many[1]
    # mean 0 (error 1/sqrt(n)), variance 1 (sqrt(2/n)), skewness 0 (sqrt(15/n): E z^6 = 15),
    # kurtosis E z^4 = 3 (sqrt((105 - 9)/n): E z^8 = 105).
    assert abs(z.mean()) < SIGMAS / math.sqrt(DRAWS)
    assert abs(z.var() - 1) < SIGMAS * math.sqrt(2 / DRAWS)
    assert abs((z**3).mean()) < SIGMAS * math.sqrt(15 / DRAWS)
    assert abs((z**4).mean() - 3) < SIGMAS * math.sqrt(96 / DRAWS)
    # The share below -1 is Phi(-1) = 0.158655...: binomial error sqrt(p (1 - p) / n).
    p = 0.5 * math.erfc(1 / math.sqrt(2))
    assert abs((z < -1).mean() - p) < SIGMAS * math.sqrt(p * (1 - p) / DRAWS)
    assert np.abs(z).max() <= math.sqrt(48 * math.log(2))


def test_every_bit_is_a_fair_coin(many):
    b = many[2]
    ones = np.array([((b >> np.uint32(k)) & np.uint32(1)).sum() for k in range(32)])
    assert (np.abs(ones - DRAWS / 2) < SIGMAS * math.sqrt(DRAWS / 4)).all(), ones
    assert len(np.unique(b)) > DRAWS - 1000  # 2^20 draws of 2^32 values: ~128 collisions


# ---------------------------------------------------------------------------- dropout


def test_the_dropout_example_keeps_what_the_mask_says():
    from phobos.compile.pipeline import parse_file

    module = parse_file(ROOT / "examples" / "dropout.ph")
    kernel = lower(module, "dropout", {"BLOCK": 256})
    rng = np.random.default_rng(4)
    n, p, seed = 1000, np.float32(0.3), 77
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    run(kernel, (-(-n // 256),), [x, out, p, np.int64(seed)])
    keep = np.array([reference_uniform(reference_words(seed, k)[0]) > p for k in range(n)])
    want = np.where(keep, x / (np.float32(1) - p), np.float32(0))
    assert np.array_equal(out, want)
    assert abs(keep.mean() - 0.7) < SIGMAS * math.sqrt(0.21 / n)


def test_the_dropout_example_is_one_program_in_both_spellings():
    import runpy

    script = runpy.run_path(str(ROOT / "examples" / "dropout.py"))
    text = (ROOT / "examples" / "dropout.ph").read_text()
    assert script["dropout"].source.strip() == text.strip()  # its comments too


# ---------------------------------------------------------------------------- the GPU back end

PROGRAM = """\
kernel draws(o: tensor<i32>[N], w: tensor<u64>[N], bits: tensor<u32>[M, 3],
             uniform: tensor<f32>[M, 3], normal: tensor<f32>[M, 3], seed: i64) {
    let i = ctx.block.x * 32
    let a = o[i :+ 32]
    let b = w[i :+ 32]
    let lane = i + arange(32)
    bits[i :+ 32, 0] = randint(seed, a)
    bits[i :+ 32, 1] = randint(seed, b)
    bits[i :+ 32, 2] = fill(randint(seed, lane), 5u32) ^ randint(seed, 3)
    uniform[i :+ 32, 0] = rand(seed, a)
    uniform[i :+ 32, 1] = rand(seed, b)
    uniform[i :+ 32, 2] = where(rand(seed, lane) > 0.5, rand(seed, lane), 0.0)
    normal[i :+ 32, 0] = randn(seed, a)
    normal[i :+ 32, 1] = randn(seed, b)
    normal[i :+ 32, 2] = randn(seed, lane) * 2.0 + 1.0
}
"""


def program_inputs(rng: np.random.Generator, n: int = 45, m: int = 64, seed: int = -77) -> list:
    o = rng.integers(-(2**31), 2**31, n).astype(np.int32)
    w = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    o[:2], w[:2] = [0, -1][:n], [0, 2**64 - 1][:n]
    return [
        o,
        w,
        np.full((m, 3), 123, np.uint32),
        np.full((m, 3), np.nan, np.float32),
        np.full((m, 3), np.nan, np.float32),
        np.int64(seed),
    ]


def grid(args: list) -> tuple[int]:
    return (-(-len(args[0]) // 32),)


def interpreted(args: list) -> list:
    expected = [a.copy() for a in args]
    run(lowered(PROGRAM), grid(args), expected)
    return expected


def assert_bits_equal(expected: list, got: list) -> None:
    for want, have in zip(expected[2:5], got[2:5]):
        assert np.array_equal(want.view(np.uint32), have.view(np.uint32))


def test_the_program_leaves_absent_rows_alone():
    expected = interpreted(program_inputs(np.random.default_rng(1)))
    assert (expected[2][45:, :2] == 123).all() and np.isnan(expected[3][45:, :2]).all()
    assert not np.isnan(expected[4][:45]).any()


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
def test_the_gpu_ir_executor_gives_the_interpreters_bits(built, arch, specialised):
    args = program_inputs(np.random.default_rng(2))
    got = [a.copy() for a in args]
    execute(built[arch, specialised], grid(args), got)
    assert_bits_equal(interpreted(args), got)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    n=st.integers(1, 64),
    rng_seed=st.integers(0, 2**32 - 1),
    seed=st.integers(-(2**63), 2**63 - 1),
)
def test_the_executor_agrees_on_any_length_offsets_and_seed(built, n, rng_seed, seed):
    args = program_inputs(np.random.default_rng(rng_seed), n=n, seed=seed)
    got = [a.copy() for a in args]
    execute(built["sm_80", False], grid(args), got)
    assert_bits_equal(interpreted(args), got)


# Many draws: a change to randn's last bits (a coefficient one ulp off) shows in some of them.
MANY = """\
kernel many(u: tensor<f32>[N], z: tensor<f32>[N], seed: u64) {
    let i = ctx.block.x * 1024
    let offsets = i + arange(1024)
    u[i :+ 1024] = rand(seed, offsets)
    z[i :+ 1024] = randn(seed, offsets)
}
"""


@pytest.mark.skipif(COMPILER is None, reason="needs g++")
def test_the_printed_cpp_gives_the_interpreters_bits():
    """randn too: its f32 operations round as numpy's do, and it calls no library function."""
    kernel = lowered(PROGRAM)
    args = program_inputs(np.random.default_rng(3))
    expected = interpreted(args)
    many = lowered(MANY)
    n = 32 * 1024
    draws = [np.zeros(n, np.float32), np.zeros(n, np.float32), np.uint64(2**63 + 11)]
    many_expected = [a.copy() for a in draws]
    run(many, (32,), many_expected)
    spec = Specialization.of(32, **{t.name: TensorSpecialization(16, True) for t in many.tensors})
    generated = generate(many, spec, "sm_90a")
    many_got = [a.copy() for a in draws]
    launches, results = [(generated, (32,), many_got)], []
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
    with tempfile.TemporaryDirectory(prefix="phobos-random-") as work:
        run_on_host(launches, Path(work))
    for got in results:
        assert_bits_equal(expected, got)
    for want, have in zip(many_expected[:2], many_got[:2]):
        assert np.array_equal(want.view(np.uint32), have.view(np.uint32))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_nvrtc_compiles_the_generators(arch):
    pytest.importorskip(
        "cuda.bindings.nvrtc", reason="needs NVRTC (pip install phobos-compile[cuda])"
    )
    from phobos.compile.pipeline import compile_kernel

    text = (
        "kernel k(o: tensor<i64>[N], c: tensor<u8>[N], out: tensor<f32>[N], bits: tensor<u32>[N], "
        "seed: u32) {\n    let i = ctx.block.x * 32\n    let offsets = o[i :+ 32]\n"
        "    out[i :+ 32] = randn(seed, offsets) + rand(seed, c[i :+ 32])\n"
        "    bits[i :+ 32] = randint(seed, i + arange(32))\n}\n"
    )
    built = compile_kernel(parse(text, "random.ph"), "k", {}, arch=arch)
    assert built.cubin.startswith(b"\x7fELF")
    assert "mul.hi.u32" in built.ptx and "sqrt.rn.f32" in built.ptx and "div.rn.f32" in built.ptx
    # Every float operation rounded on its own (none contracted), no approximate instruction.
    assert "fma.rn.f32" not in built.ptx
    assert not any(f"{op}.approx" in built.ptx for op in ("sin", "cos", "lg2", "ex2", "rcp"))
