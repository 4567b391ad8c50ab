"""``argmax`` and ``argmin`` (docs/language.md, section 5; ``check/reductions.py``).

The interpreter against numpy on odd sizes, with NaN, ties and absent lanes (a window past
the tensor's end; -1 where a row has no present lane), in both spellings; the GPU back end
through the GPU-IR executor, which must compute what the interpreter does, for sm_80 and
sm_90a, on every layout the reductions take (a row inside a thread, across lanes, across
warps); and NVRTC accepts it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.gpu import pipeline
from phobos.compile.interp import run
from phobos.compile.ir import nodes as ir
from phobos.compile.pipeline import compile_kernel
from phobos.compile.syntax import parse
from phobos.frontend import translate_source

from .gpu_ir.conftest import execute, specialisation

ROWS_TEXT = """
@autotune(R in {{4}}, C in {{16}})
kernel rows(x: tensor<{dtype}>[M, N], hi: tensor<i32>[M], lo: tensor<i32>[M], col: tensor<i32>[N]) {{
    let r = ctx.block.x * R
    let t = x[r :+ R, 0 :+ C]
    hi[r :+ R] = argmax(t, axis=1)
    lo[r :+ R] = argmin(t, axis=-1)
    if ctx.block.x == 0 {{
        col[0 :+ C] = argmax(t, axis=0)
    }}
}}
"""
ROW_PY = """
import phobos.lang as ph

@ph.kernel
def row(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.i32][N]):
    t: ph.let = x[0:+32]
    out[0] = ph.argmax(t)
    out[1] = ph.argmin(t, axis=0)
"""


def kernel_of(dtype: str = "f32", rows: int = 4, cols: int = 16) -> ir.Kernel:
    text = ROWS_TEXT.format(dtype=dtype).replace("R in {4}", f"R in {{{rows}}}")
    text = text.replace("C in {16}", f"C in {{{cols}}}")
    module = parse(text, "rows.ph")
    return lower(module, "rows", {"R": rows, "C": cols})


def outputs(m: int, n: int) -> list[np.ndarray]:
    return [np.full(m, 99, np.int32), np.full(m, 99, np.int32), np.full(n, 99, np.int32)]


def expected(x: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, ...]:
    """numpy's answer on the lanes a block sees: columns past ``cols`` it never reads."""
    seen = x[:, :cols]
    col = np.full(x.shape[1], 99, np.int32)
    first = seen[:rows]
    col[: min(cols, x.shape[1])] = np.argmax(first, axis=0) if first.size else -1
    return np.argmax(seen, axis=1), np.argmin(seen, axis=1), col


def interpret(kernel: ir.Kernel, x: np.ndarray, rows: int) -> list[np.ndarray]:
    args = [x, *outputs(*x.shape)]
    run(kernel, (-(-x.shape[0] // rows), 1, 1), args)
    return args[1:]


def with_specials(rng: np.random.Generator, m: int, n: int, dtype) -> np.ndarray:
    x = rng.integers(-3, 4, (m, n)).astype(dtype)  # few values: many ties
    if np.dtype(dtype).kind == "f":
        x[rng.random((m, n)) < 0.05] = np.nan
        x[rng.random((m, n)) < 0.05] = np.inf
        x[rng.random((m, n)) < 0.05] = -np.inf
    return x


# ---------------------------------------------------------------------------- the checker


def test_the_result_is_i32_and_never_absent():
    kernel = kernel_of()
    stores = [s for s in kernel.body if isinstance(s, ir.Store)]
    assert all(s.value.type == ir.TileT("i32", (4,), False) for s in stores)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("argmax(x[0 :+ 4, 0 :+ 4])", "argmax() of a rank-2 tile needs an axis"),
        ("argmin(x[0 :+ 4, 0 :+ 4], axis=2)", "axis 2 is out of range for a rank-2 tile"),
        ("argmax(x[0 :+ 4, 0 :+ 4] > 0.0, axis=0)", "argmax() needs numbers, got bool"),
        ("argmax(a)", "argmax() needs a tile, got f32"),
    ],
)
def test_errors(line: str, message: str):
    text = (
        f"kernel k(x: tensor<f32>[N, N], out: tensor<i32>[N], a: f32) {{\n    let v = {line}\n}}\n"
    )
    with pytest.raises(PhobosError) as caught:
        lower(parse(text, "k.ph"), "k", {})
    assert caught.value.diagnostics[0].message == message


# ---------------------------------------------------------------------------- the interpreter


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8])
def test_the_interpreter_gives_numpys_first_index(dtype):
    rng = np.random.default_rng(0)
    x = with_specials(rng, 10, 16, dtype)
    name = {np.float32: "f32", np.float16: "f16", np.int32: "i32", np.uint8: "u8"}[dtype]
    got = interpret(kernel_of(name), x, 4)
    for have, want in zip(got, expected(x, 4, 16)):
        assert np.array_equal(have, want)


def test_absent_lanes_are_skipped_and_an_empty_row_gives_minus_one():
    x = np.array([[5.0, 1.0, 9.0], [2.0, 2.0, -1.0]], np.float32)  # 3 of 16 columns present
    hi, lo, col = interpret(kernel_of(), x, 4)
    assert hi.tolist() == [2, 0] and lo.tolist() == [1, 2]
    assert col.tolist() == [0, 1, 0]  # rows 2 and 3 of the window are past M: absent
    empty = np.zeros((2, 0), np.float32)
    hi, lo, _ = interpret(kernel_of(), empty, 4)
    assert hi.tolist() == [-1, -1] and lo.tolist() == [-1, -1]


def test_a_nan_is_found_first_and_ties_give_the_first_index():
    x = np.array([[1.0, np.nan, 7.0, np.nan], [3.0, 3.0, 3.0, 3.0]], np.float32)
    hi, lo, _ = interpret(kernel_of(), x, 4)
    assert hi.tolist() == [1, 0] and lo.tolist() == [1, 0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 13),
    n=st.integers(1, 40),
    seed=st.integers(0, 2**16),
    layout=st.sampled_from([(4, 16), (2, 32), (1, 8)]),
)
def test_the_interpreter_agrees_with_numpy_on_any_size(m, n, seed, layout):
    rows, cols = layout
    x = with_specials(np.random.default_rng(seed), m, n, np.float32)
    got = interpret(kernel_of("f32", rows, cols), x, rows)
    hi, lo, col = expected(x, rows, cols)
    if n == 0 or cols == 0:
        return
    assert np.array_equal(got[0], hi) and np.array_equal(got[1], lo)
    assert np.array_equal(got[2][: min(cols, n)], col[: min(cols, n)])


def test_the_python_spelling():
    module = translate_source(ROW_PY, "/work/k.py").module
    kernel = lower(module, "row", {})
    x = np.array([3.0, -1.0, 8.0, 8.0, -1.0, np.nan][:5], np.float32)
    out = np.full(5, 99, np.int32)
    run(kernel, (1, 1, 1), [x, out])
    assert out[:2].tolist() == [2, 1]


# ---------------------------------------------------------------------------- the GPU back end


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize(("rows", "cols"), [(4, 16), (2, 256), (8, 1024)])
def test_the_gpu_ir_executor_computes_what_the_interpreter_does(arch, rows, cols):
    """A 16-wide row sits in a thread's registers and a few lanes; 256 across a warp's
    lanes; 1024 across warps (shared memory between them)."""
    kernel = kernel_of("f32", rows, cols)
    x = with_specials(np.random.default_rng(cols), 3 * rows - 1, cols - 3, np.float32)
    want = interpret(kernel, x, rows)
    gpu = pipeline.build(kernel, arch=arch, **specialisation(kernel, False))
    args = [x, *outputs(*x.shape)]
    execute(gpu, (-(-x.shape[0] // rows), 1, 1), args)
    for have, expect in zip(args[1:], want):
        assert np.array_equal(have, expect)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_nvrtc_compiles_it(arch):
    module = parse(ROWS_TEXT.format(dtype="f16"), "rows.ph")
    compiled = compile_kernel(module, "rows", {"R": 4, "C": 16}, arch=arch)
    assert compiled.cubin.startswith(b"\x7fELF")
