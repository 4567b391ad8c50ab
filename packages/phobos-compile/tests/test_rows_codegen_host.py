"""Rows held 64 lanes a thread, run on the host against the CPU interpreter.

A 16384-wide tile on 256 threads gives each thread 64 lanes of its row: the
in-thread reduction keeps one running partial per lane of a group and folds
them at the end.  Rows of 1, 12288, 16383, 16384 and 16385 columns cover a
window wholly inside the row, one with its last quarter absent, one whose last
group straddles the row's end, and a row wider than the window.  A NaN anywhere
in a row makes its max and min NaN, as numpy's do.  Groups wholly past a
row's end skip computing and storing the lanes they would store.  The emulation of the CUDA
execution model is ``test_codegen_host``'s.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.codegen import Specialization, generate
from phobos.compile.codegen.specialization import TensorSpecialization
from phobos.compile.interp import run
from phobos.compile.syntax import parse

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

WIDTHS = (1, 12288, 16383, 16384, 16385)

SOFTMAX = """\
@autotune(BLOCK_N in [16, 16384])
kernel NAME(x: tensor<f32>[M, N], out: tensor<f32>[M, N], top: tensor<f32>[M],
            low: tensor<f32>[M]) {
    let row = ctx.block.x
    let t = x[row, 0 :+ BLOCK_N]
    let biggest = max(t)
    top[row] = biggest
    low[row] = min(t)
    let e = exp(t - biggest)
    out[row, 0 :+ BLOCK_N] = e / sum(e)
}
"""

LAYER_NORM = """\
@autotune(BLOCK_N in [16, 16384])
kernel NAME(x: tensor<f16>[M, N], w: tensor<f16>[N], y: tensor<f16>[M, N],
            mean: tensor<f32>[M]) {
    let row = ctx.block.x
    let values = f32(x[row, 0 :+ BLOCK_N])
    let mu = sum(values) / f32(N)
    mean[row] = mu
    y[row, 0 :+ BLOCK_N] = f16((values - mu) * f32(w[0 :+ BLOCK_N]))
}
"""

MAXIMUM = """\
@autotune(BLOCK in [16, 1024])
kernel NAME(a: tensor<f32>[N], b: tensor<f32>[N], big: tensor<f32>[N], small: tensor<f32>[N]) {
    let start = ctx.block.x * BLOCK
    big[start :+ BLOCK] = maximum(a[start :+ BLOCK], b[start :+ BLOCK])
    small[start :+ BLOCK] = minimum(a[start :+ BLOCK], b[start :+ BLOCK])
}
"""


def _harness():
    path = Path(__file__).with_name("test_codegen_host.py")
    spec = importlib.util.spec_from_file_location("_rows_codegen_host_harness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernel(template: str, name: str, values: dict[str, int]):
    kernel = lower(parse(template.replace("NAME", name), f"{name}.ph"), name, values)
    facts = TensorSpecialization(16, True)
    spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
    return kernel, generate(kernel, spec, "sm_90")


def _run_all(cases, tmp_path):
    """cases: (kernel, generated, grid, arrays); the arrays the GPU code wrote, per case."""
    launches, outcomes = [], []
    for kernel, generated, grid, arrays in cases:
        expected = [a.copy() for a in arrays]
        run(kernel, grid, expected)
        got = [a.copy() for a in arrays]
        launches.append((generated, grid, got))
        outcomes.append((expected, got))
    _harness().run_on_host(launches, tmp_path)
    return outcomes


def test_rows_of_64_lanes_a_thread_match_the_interpreter(tmp_path):
    rng = np.random.default_rng(11)
    cases = []
    for n in WIDTHS:
        kernel, generated = _kernel(SOFTMAX, f"softmax_{n}", {"BLOCK_N": 16384})
        assert generated.contract.block[0] == 256
        assert "_l[1][4];" in generated.source  # four running partials a row
        assert "if (present != 0u)" in generated.source  # groups past N skip the division
        x = rng.standard_normal((2, n)).astype(np.float32)
        x[1, n // 2] = np.nan  # the second row's max, min and softmax are NaN
        empty = [np.zeros((2, n), np.float32), np.zeros(2, np.float32), np.zeros(2, np.float32)]
        cases.append((kernel, generated, (2,), [x, *empty]))
    for (expected, got), n in zip(_run_all(cases, tmp_path), WIDTHS):
        for want, have in zip(expected[1:], got[1:]):
            np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-7, err_msg=f"N={n}")
        assert np.isnan(got[2][1]) and np.isnan(got[3][1]), f"N={n}: a NaN in the row"


def test_f16_rows_of_64_lanes_a_thread_match_the_interpreter(tmp_path):
    rng = np.random.default_rng(12)
    cases = []
    for n in (12288, 16385):
        values = {"BLOCK_N": 16384, "NUM_THREADS": 256}
        kernel, generated = _kernel(LAYER_NORM, f"norm_{n}", values)
        assert "_l[1][8];" in generated.source  # eight running partials a row
        x = rng.standard_normal((2, n)).astype(np.float16)
        w = rng.standard_normal(n).astype(np.float16)
        outputs = [np.zeros((2, n), np.float16), np.zeros(2, np.float32)]
        cases.append((kernel, generated, (2,), [x, w, *outputs]))
    for (expected, got), n in zip(_run_all(cases, tmp_path), (12288, 16385)):
        np.testing.assert_allclose(got[2], expected[2], rtol=2e-3, atol=2e-3, err_msg=f"N={n}")
        np.testing.assert_allclose(got[3], expected[3], rtol=1e-4, atol=1e-6, err_msg=f"N={n}")


def test_maximum_and_minimum_give_nan_for_a_nan_on_either_side(tmp_path):
    a = np.array([1.0, np.nan, 3.0, -np.inf, np.nan, 0.5], np.float32)
    b = np.array([np.nan, 2.0, -1.0, np.nan, np.nan, 0.25], np.float32)
    kernel, generated = _kernel(MAXIMUM, "extremes", {"BLOCK": 16})
    outputs = [np.zeros(6, np.float32), np.zeros(6, np.float32)]
    [(expected, got)] = _run_all([(kernel, generated, (1,), [a, b, *outputs])], tmp_path)
    np.testing.assert_array_equal(got[2], np.maximum(a, b))
    np.testing.assert_array_equal(got[3], np.minimum(a, b))
    np.testing.assert_array_equal(expected[2], np.maximum(a, b))
