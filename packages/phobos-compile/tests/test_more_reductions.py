"""``prod``, ``any``, ``all`` and ``xor_sum`` (docs/language.md, section 5;
``ir/reduction_ops.py``).

The interpreter against numpy on odd sizes, with NaN, infinities and absent lanes (a window
past the tensor's end), for each dtype class and in both spellings; the checker's errors at
their line; the GPU back end through the GPU-IR executor, which must compute what the
interpreter does, for sm_80 and sm_90a, on every layout the reductions take (a row inside a
thread, across lanes, across warps); the printed C++ run on the host under
``host/emulation.py`` (its shuffles are block-wide barriers, so a lane that skips one
hangs or misreads); and NVRTC accepts it.

Float data are products of powers of two (and 0, ±inf, NaN) whose partial products stay
inside f32's range, so every order of combining gives the same bits: the tests compare
exactly.
"""

from __future__ import annotations

import subprocess
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
from phobos.compile.ir import reduction_ops
from phobos.compile.pipeline import compile_kernel
from phobos.compile.specialization import Specialization, TensorSpecialization
from phobos.compile.syntax import parse
from phobos.frontend import translate_source

from .gpu_ir.conftest import execute, specialisation
from .host.emulation import COMPILER, run_on_host

BF16 = np.dtype(ml_dtypes.bfloat16)
NUMPY = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "u16": np.dtype(np.uint16),
    "i32": np.dtype(np.int32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": BF16,
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i8", "u16", "i32", "u64")

# A reduction along each axis of a window [R, C] (rows and columns past the tensor's end
# absent): ``op`` along axis 1 into ``out`` and along axis 0 into ``col`` (block 0), and
# ``any``/``all`` of the same tile (numbers read as != 0).
ROWS_TEXT = """
@autotune(R in {{4}}, C in {{16}})
kernel rows(x: tensor<{dtype}>[M, N], out: tensor<{result}>[M], some: tensor<bool>[M],
            every: tensor<bool>[M], col: tensor<{result}>[N]) {{
    let r = ctx.block.x * R
    let t = x[r :+ R, 0 :+ C]
    out[r :+ R] = {op}(t, axis=1)
    some[r :+ R] = any(t, axis=1)
    every[r :+ R] = all(t, axis=-1)
    if ctx.block.x == 0 {{
        col[0 :+ C] = {op}(t, axis=0)
    }}
}}
"""
# Reductions to a scalar: a window of 40 from 0 (past the end where N < 40) and one wholly
# past the end, whose results are the identities.
SCALARS_PY = """
import phobos.lang as ph

@ph.kernel
def scalars(x: ph.tensor[ph.i32][N], out: ph.tensor[ph.i32][N], flags: ph.tensor[ph.bool][N]):
    t: ph.let = x[0:+40]
    out[0] = ph.prod(t)
    out[1] = ph.xor_sum(t, axis=0)
    flags[0] = ph.any(t > 5)
    flags[1] = ph.all(t, axis=-1)
    gone: ph.let = x[N:+16]
    out[2] = ph.prod(gone)
    out[3] = ph.xor_sum(gone)
    flags[2] = ph.any(gone)
    flags[3] = ph.all(gone > 5)
"""
SCALARS_PH = """
kernel scalars(x: tensor<i32>[N], out: tensor<i32>[N], flags: tensor<bool>[N]) {
    let t = x[0 :+ 40]
    out[0] = prod(t)
    out[1] = xor_sum(t, axis=0)
    flags[0] = any(t > 5)
    flags[1] = all(t, axis=-1)
    let gone = x[N :+ 16]
    out[2] = prod(gone)
    out[3] = xor_sum(gone)
    flags[2] = any(gone)
    flags[3] = all(gone > 5)
}
"""


def ops_of(dtype: str) -> tuple[str, ...]:
    """The reductions ``out``/``col`` take for ``dtype``."""
    if dtype == "bool":
        return ("any", "all")
    return ("prod", "xor_sum") if dtype in INTS else ("prod",)


def text_of(dtype: str, op: str, rows: int = 4, cols: int = 16) -> str:
    result = "bool" if op in ("any", "all") else dtype
    text = ROWS_TEXT.format(dtype=dtype, result=result, op=op)
    return text.replace("R in {4}", f"R in {{{rows}}}").replace("C in {16}", f"C in {{{cols}}}")


def kernel_of(dtype: str, op: str, rows: int = 4, cols: int = 16) -> ir.Kernel:
    module = parse(text_of(dtype, op, rows, cols), "rows.ph")
    return lower(module, "rows", {"R": rows, "C": cols})


def data(rng: np.random.Generator, m: int, n: int, dtype: str, specials: bool = True):
    """Values for ``dtype``: ints over the whole range (products wrap; half the rows odd, so
    that their products do not wrap to 0), floats ±1, ±2, ±0.5 (with NaN, ±inf in about a
    third of the rows where ``specials``), bools; each row has its own share of zeros (none,
    few, half, all), so that ``any`` and ``all`` see both answers."""
    share = rng.choice([0.0, 0.002, 0.5, 1.0], (m, 1))
    zero = rng.random((m, n)) < share
    if dtype == "bool":
        return ~zero
    if dtype in INTS:
        info = np.iinfo(NUMPY[dtype])
        x = rng.integers(info.min, info.max, (m, n), dtype=NUMPY[dtype], endpoint=True)
        x |= (rng.random((m, 1)) < 0.5).astype(NUMPY[dtype])
        x[zero] = 0
        return x
    x = rng.choice([1.0, -1.0, 2.0, -2.0, 0.5, -0.5], (m, n))
    x[zero] = 0.0
    if specials:
        special = np.where(rng.random((m, 1)) < 0.3, rng.random((m, n)), 1.0)
        x[special < 0.01] = np.nan
        x[(special >= 0.01) & (special < 0.02)] = np.inf
        x[(special >= 0.02) & (special < 0.03)] = -np.inf
    return x.astype(NUMPY[dtype])


def reference(op: str, x: np.ndarray, axis: int, dtype: str) -> np.ndarray:
    """numpy's answer: products of f16/bf16 in f32, rounded once; integers wrap."""
    if op in ("any", "all"):
        truth = x if dtype == "bool" else x.astype(np.float64) != 0
        return getattr(np, op)(truth, axis=axis)
    if op == "xor_sum":
        return np.bitwise_xor.reduce(x, axis=axis)
    accumulate = np.float32 if dtype in ("f16", "bf16") else NUMPY[dtype]
    with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf; f16 past its range
        return np.prod(x.astype(accumulate), axis=axis, dtype=accumulate).astype(NUMPY[dtype])


SENTINEL = 7


def outputs(m: int, n: int, dtype: str, op: str) -> list[np.ndarray]:
    result = NUMPY["bool" if op in ("any", "all") else dtype]
    return [
        np.full(m, SENTINEL, result),
        np.zeros(m, np.bool_),
        np.zeros(m, np.bool_),
        np.full(n, SENTINEL, result),
    ]


def expected(x: np.ndarray, dtype: str, op: str, rows: int, cols: int) -> list[np.ndarray]:
    """What a launch writes: rows over the lanes a block sees (columns past ``cols`` it never
    reads), and block 0's columns; a row with no present lane is not stored."""
    m, n = x.shape
    seen = x[:, :cols]
    out, some, every, col = outputs(m, n, dtype, op)
    if seen.shape[1]:
        out[:] = reference(op, seen, 1, dtype)
        some[:] = reference("any", seen, 1, dtype)
        every[:] = reference("all", seen, 1, dtype)
    first = seen[:rows]
    if first.shape[0]:
        col[: seen.shape[1]] = reference(op, first, 0, dtype)
    return [out, some, every, col]


def interpret(kernel: ir.Kernel, x: np.ndarray, dtype: str, op: str, rows: int):
    args = [x, *outputs(*x.shape, dtype, op)]
    run(kernel, (-(-x.shape[0] // rows), 1, 1), args)
    return args[1:]


def assert_same(got: list[np.ndarray], want: list[np.ndarray], what: str = "") -> None:
    for have, expect in zip(got, want):
        if expect.dtype == BF16:
            have, expect = have.astype(np.float32), expect.astype(np.float32)
        np.testing.assert_array_equal(have, expect, err_msg=what)


# ---------------------------------------------------------------------------- the table


def test_the_table_gives_each_identity():
    identity = reduction_ops.identity
    assert identity("prod", "f16") == 1.0 and identity("prod", "u8") == 1
    assert identity("any", "bool") is False and identity("all", "bool") is True
    assert identity("xor_sum", "i64") == 0 and identity("xor_sum", "index") == 0
    assert identity("max", "i8") == -128 and identity("min", "u16") == 65535
    assert identity("max", "f32") == float("-inf") and identity("min", "bool") is True
    assert [reduction_ops.accumulator(op, "f16") for op in ("sum", "prod", "max")] == [
        "f32",
        "f32",
        "f16",
    ]
    assert reduction_ops.accumulator("xor_sum", "i8") == "i8"
    assert reduction_ops.accumulator("prod", "u16") == "u32"


# ---------------------------------------------------------------------------- the checker


@pytest.mark.parametrize(
    ("dtype", "op", "result"),
    [("f16", "prod", "f16"), ("i8", "prod", "i8"), ("u64", "xor_sum", "u64")]
    + [(d, op, "bool") for d in ("f32", "i32", "bool") for op in ("any", "all")],
)
def test_the_result_types(dtype, op, result):
    text = (
        f"kernel k(x: tensor<{dtype}>[N, N]) {{\n    let v = {op}(x[0 :+ 4, 0 :+ 8], axis=1)\n}}\n"
    )
    kernel = lower(parse(text, "k.ph"), "k", {})
    define = kernel.body[0]
    assert define.value.type == ir.TileT(result, (4,), True)


@pytest.mark.parametrize(
    ("line", "at", "message", "help"),
    [
        (
            "xor_sum(x[0 :+ 4, 0 :+ 4], axis=1)",
            "xor_sum(",
            "xor_sum() needs integers, got f32",
            "xor_sum combines the bits of integers; cast first: "
            "`xor_sum(i32(x[0 :+ 4, 0 :+ 4]), axis=1)` (a cast converts the value, not its bits)",
        ),
        (
            "xor_sum(h[0 :+ 4], axis=0)",
            "xor_sum(",
            "xor_sum() needs integers, got f64",
            "xor_sum combines the bits of integers; cast first: "
            "`xor_sum(i64(h[0 :+ 4]), axis=0)` (a cast converts the value, not its bits)",
        ),
        (
            "xor_sum(x[0 :+ 4, 0 :+ 4] > 0.0, axis=0)",
            "xor_sum(",
            "xor_sum() needs integers, got bool",
            "for the parity of the true lanes write "
            "`xor_sum(i32(x[0 :+ 4, 0 :+ 4] > 0.0), axis=0)` (1 where an odd number hold true)",
        ),
        (
            "prod(x[0 :+ 4, 0 :+ 4] > 0.0, axis=1)",
            "prod(",
            "prod() needs numbers, got bool",
            "the product of bools is `all(x[0 :+ 4, 0 :+ 4] > 0.0, axis=1)`",
        ),
        (
            "max(h[0 :+ 4] > 0.0)",
            "max(",
            "max() needs numbers, got bool",
            "the largest of bools is `any(h[0 :+ 4] > 0.0)`",
        ),
        (
            "sum(h[0 :+ 4] > 0.0, axis=0)",
            "sum(",
            "sum() needs numbers, got bool",
            "count the true lanes with `sum(i32(h[0 :+ 4] > 0.0), axis=0)`",
        ),
        (
            "prod(x[0 :+ 4, 0 :+ 4])",
            "prod(",
            "prod() of a rank-2 tile needs an axis",
            "write `prod(x[0 :+ 4, 0 :+ 4], axis=0)`",
        ),
        (
            "any(x[0 :+ 4, 0 :+ 4], axis=2)",
            "axis=2",
            "axis 2 is out of range for a rank-2 tile",
            "use an axis from 0 to 1",
        ),
        ("all(a)", "a)", "all() needs a tile, got f32", None),
        ("xor_sum(n[0 :+ 4], keep=1)", "keep=1", "xor_sum() has no keyword 'keep'", None),
    ],
)
def test_errors_at_their_line(line: str, at: str, message: str, help: str | None):
    text = (
        "kernel k(x: tensor<f32>[N, N], h: tensor<f64>[N], n: tensor<i32>[N], a: f32) {\n"
        f"    let v = {line}\n}}\n"
    )
    with pytest.raises(PhobosError) as caught:
        lower(parse(text, "k.ph"), "k", {})
    d = caught.value.diagnostics[0]
    assert d.message == message
    if help is not None:
        assert d.help == help
    col = 4 + len("let v = ") + line.index(at) + 1
    assert (d.span.file, d.span.line, d.span.col) == ("k.ph", 2, col)
    first, shown, caret = str(caught.value).splitlines()[:3]
    assert first == f"k.ph:2:{col}: error: {message}"
    assert shown.strip() == f"let v = {line}"
    assert caret.index("^") == shown.index(at)


def test_a_python_error_names_the_python_line_and_spells_the_help_in_python():
    source = SCALARS_PY.replace("ph.xor_sum(t, axis=0)", "ph.xor_sum(ph.f32(t), axis=0)")
    with pytest.raises(PhobosError) as caught:
        lower(translate_source(source, "/work/k.py").module, "scalars", {})
    d = caught.value.diagnostics[0]
    assert (d.span.file, d.span.line, d.span.col) == ("/work/k.py", 8, 14)
    assert d.message == "xor_sum() needs integers, got f32"
    assert "`ph.xor_sum(ph.i32(ph.f32(t)), axis=0)`" in d.help
    rendered = str(caught.value).splitlines()
    assert rendered[2].index("^") == rendered[1].index("ph.xor_sum")


def test_python_builtins_any_and_all_point_at_the_phobos_spelling():
    source = SCALARS_PY.replace("ph.any(t > 5)", "any(t > 5)")
    with pytest.raises(PhobosError) as caught:
        translate_source(source, "/work/k.py")
    d = caught.value.diagnostics[0]
    assert d.span.line == 9 and d.help == "write ph.any(t, axis=k)"


# ---------------------------------------------------------------------------- the interpreter


@pytest.mark.parametrize("dtype", sorted(NUMPY))
def test_the_interpreter_agrees_with_numpy(dtype):
    """13 rows (the last block's 3 past the end) of 13 columns in a window of 16."""
    rng = np.random.default_rng(len(dtype) + sum(map(ord, dtype)))
    x = data(rng, 13, 13, dtype)
    for op in ops_of(dtype):
        got = interpret(kernel_of(dtype, op), x, dtype, op, 4)
        assert_same(got, expected(x, dtype, op, 4, 16), f"{dtype} {op}")


def test_prod_propagates_nan_and_meets_zero_times_inf_as_nan():
    x = np.array(
        [[2.0, np.nan, 0.5], [0.0, np.inf, 1.0], [-np.inf, -2.0, 1.0], [0.0, -1.0, 3.0]],
        np.float32,
    )
    out, some, every, col = interpret(kernel_of("f32", "prod"), x, "f32", "prod", 4)
    assert np.isnan(out[0]) and np.isnan(out[1])
    assert out[2] == np.inf and out[3] == 0.0 and np.signbit(out[3])
    assert some.tolist() == [True, True, True, True]  # NaN and inf are != 0
    assert every.tolist() == [True, False, True, False]
    assert np.isnan(col[0]) and np.isnan(col[1]) and col[2] == 1.5


def test_f16_products_round_once_from_f32():
    """Row 0 passes 2^20 (past f16's range) on its way back to 1; row 1 passes 2^-25, which
    f16 would round to 0, on its way back to its smallest subnormal; 2^16 is past the range
    and 2^-16 a subnormal."""
    x = np.ones((4, 16), np.float16)
    x[0, :4] = [1024.0, 1024.0, 2.0**-10, 2.0**-10]
    x[1, :3] = [2.0**-24, 0.5, 2.0]
    x[2, :] = 2.0
    x[3, :] = 0.5
    out, *_ = interpret(kernel_of("f16", "prod"), x, "f16", "prod", 4)
    assert out.tolist() == [1.0, 2.0**-24, np.inf, 2.0**-16]
    with np.errstate(over="ignore", under="ignore"):
        stepwise = [np.float16(1.0), np.float16(1.0)]
        for j in range(16):  # rounded to f16 after every step, the two would be lost
            stepwise = [np.float16(acc * row[j]) for acc, row in zip(stepwise, x)]
    assert stepwise == [np.inf, 0.0]


def test_narrow_integers_wrap_as_their_type():
    x = np.array([[16, 16, 2, 1], [-128, -1, 1, 1], [3, 5, 7, 11], [0x55, 0x0F, 0x33, 0]], np.int8)
    out, *_ = interpret(kernel_of("i8", "prod"), x, "i8", "prod", 4)
    assert out.tolist() == [0, -128, 1155 % 256 - 256, 0]
    out, *_ = interpret(kernel_of("i8", "xor_sum"), x, "i8", "xor_sum", 4)
    assert out.tolist() == [2 ^ 1, (-128 ^ -1), 3 ^ 5 ^ 7 ^ 11, 0x55 ^ 0x0F ^ 0x33]


def test_a_row_with_no_present_lane():
    """A tile's row of absent lanes is absent (not stored); a scalar's is the identity."""
    empty = np.zeros((5, 0), np.float32)
    got = interpret(kernel_of("f32", "prod"), empty, "f32", "prod", 4)
    assert got[0].tolist() == [SENTINEL] * 5  # out: never stored
    assert not got[1].any() and not got[2].any()  # some, every: never stored
    kernel = lower(parse(SCALARS_PH, "scalars.ph"), "scalars", {})
    x = np.array([3, 6, 5, 9], np.int32)
    out, flags = np.zeros(4, np.int32), np.zeros(4, np.bool_)
    run(kernel, (1, 1, 1), [x, out, flags])
    assert out.tolist() == [3 * 6 * 5 * 9, 3 ^ 6 ^ 5 ^ 9, 1, 0]
    assert flags.tolist() == [True, True, False, True]


@pytest.mark.parametrize(
    ("spelling", "text"), [("python", SCALARS_PY), ("phobos", SCALARS_PH)], ids=str
)
def test_both_spellings(spelling, text):
    if spelling == "python":
        module = translate_source(text, "/work/scalars.py").module
    else:
        module = parse(text, "scalars.ph")
    kernel = lower(module, "scalars", {})
    x = np.array([2, -3, 7, 0, 5, 5], np.int32)
    out, flags = np.zeros(6, np.int32), np.zeros(6, np.bool_)
    run(kernel, (1, 1, 1), [x, out, flags])
    assert out[:4].tolist() == [0, 2 ^ -3 ^ 7 ^ 5 ^ 5, 1, 0]
    assert flags[:4].tolist() == [True, False, False, True]


def test_the_python_spelling_prints_as_the_phobos_text():
    program = translate_source(SCALARS_PY, "/work/scalars.py")
    assert "out[0] = prod(t)" in program.text
    assert "flags[1] = all(t, axis=-1)" in program.text
    assert "out[3] = xor_sum(gone)" in program.text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 13),
    n=st.integers(0, 40),
    seed=st.integers(0, 2**16),
    layout=st.sampled_from([(4, 16), (2, 32), (1, 8)]),
    dtype=st.sampled_from(["f32", "f16", "i8", "u64", "bool"]),
)
def test_the_interpreter_agrees_with_numpy_on_any_size(m, n, seed, layout, dtype):
    rows, cols = layout
    x = data(np.random.default_rng(seed), m, n, dtype)
    for op in ops_of(dtype):
        got = interpret(kernel_of(dtype, op, rows, cols), x, dtype, op, rows)
        assert_same(got, expected(x, dtype, op, rows, cols), f"{dtype} {op}")


# ---------------------------------------------------------------------------- the GPU back end


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize(("rows", "cols"), [(4, 16), (2, 256), (8, 1024)])
@pytest.mark.parametrize("dtype", ["f32", "f16", "i8", "u64", "bool"])
def test_the_gpu_ir_executor_computes_what_the_interpreter_does(arch, rows, cols, dtype):
    """A 16-wide row sits in a thread's registers and a few lanes; 256 across a warp's
    lanes; 1024 across warps (shared memory between them)."""
    rng = np.random.default_rng(cols + len(dtype))
    x = data(rng, 3 * rows - 1, cols - 3, dtype)
    for op in ops_of(dtype):
        kernel = kernel_of(dtype, op, rows, cols)
        want = interpret(kernel, x, dtype, op, rows)
        assert_same(want, expected(x, dtype, op, rows, cols), "the interpreter")
        gpu = pipeline.build(kernel, arch=arch, **specialisation(kernel, False))
        args = [x, *outputs(*x.shape, dtype, op)]
        execute(gpu, (-(-x.shape[0] // rows), 1, 1), args)
        assert_same(args[1:], want, f"{dtype} {op}")


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_the_gpu_ir_executor_gives_scalars_and_identities(arch):
    kernel = lower(parse(SCALARS_PH, "scalars.ph"), "scalars", {})
    x = np.arange(1, 38, dtype=np.int32) * 3  # 37 of the 40 lanes present
    want = [x, np.zeros(37, np.int32), np.zeros(37, np.bool_)]
    run(kernel, (1, 1, 1), want)
    gpu = pipeline.build(kernel, arch=arch, **specialisation(kernel, True))
    got = [x, np.zeros(37, np.int32), np.zeros(37, np.bool_)]
    execute(gpu, (1, 1, 1), got)
    assert_same(got[1:], want[1:])
    assert want[1][2:4].tolist() == [1, 0] and want[2][2:4].tolist() == [False, True]


HOST_CASES = [
    ("f32", "prod", 8, 1024),
    ("f16", "prod", 2, 256),
    ("i8", "prod", 4, 16),
    ("i8", "xor_sum", 8, 1024),
    ("u64", "xor_sum", 2, 256),
    ("bool", "all", 8, 1024),
    ("bool", "any", 2, 256),
]


def _specialised(kernel: ir.Kernel) -> Specialization:
    facts = TensorSpecialization(16, True)
    return Specialization.of(32, **{t.name: facts for t in kernel.tensors})


@pytest.mark.skipif(COMPILER is None, reason="needs g++")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_the_printed_code_computes_what_the_interpreter_does(tmp_path: Path, arch):
    """Threads, lanes and warps as above; ``any`` and ``all`` combine with ``||`` and
    ``&&``, which must not skip a shuffle."""
    launches, checks = [], []
    for index, (dtype, op, rows, cols) in enumerate(HOST_CASES):
        kernel = kernel_of(dtype, op, rows, cols)
        x = data(np.random.default_rng(index), 3 * rows - 1, cols - 3, dtype)
        grid = (-(-x.shape[0] // rows),)
        generated = generate(kernel, _specialised(kernel), arch)
        entry = f"{generated.entry}_{index}"  # one program holds every case
        source = generated.source.replace(f"{generated.entry}(", f"{entry}(")
        generated = GeneratedKernel(source, entry, generated.contract, generated.gpu_ir)
        want = interpret(kernel, x, dtype, op, rows)
        got = [x.copy(), *outputs(*x.shape, dtype, op)]
        launches.append((generated, grid, got))
        checks.append((f"{dtype} {op} {rows}x{cols}", want, got[1:]))
    try:
        run_on_host(launches, tmp_path)
    except subprocess.CalledProcessError as failed:  # pragma: no cover (a failure's report)
        pytest.fail(f"the host program failed: {failed}")
    for name, want, got in checks:
        assert_same(got, want, name)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize(("dtype", "op"), [("f16", "prod"), ("i8", "xor_sum"), ("bool", "all")])
def test_nvrtc_compiles_it(arch, dtype, op):
    module = parse(text_of(dtype, op, 8, 1024), "rows.ph")
    compiled = compile_kernel(module, "rows", {"R": 8, "C": 1024}, arch=arch)
    assert compiled.cubin.startswith(b"\x7fELF")
    assert "shfl.sync.bfly" in compiled.ptx
