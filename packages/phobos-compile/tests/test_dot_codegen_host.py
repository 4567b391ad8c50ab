"""The pipelined tensor-core k-loop, run on the host against the CPU interpreter.

The tutorial's matmul at the tile sizes it tunes over (warps sharing a and b
fragments across their tiles, several k-steps so every cp.async stage is
reused), and a loop whose result has absent lanes, with and without iterations.
The emulation of the CUDA execution model is ``test_codegen_host``'s.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.codegen import Specialization, generate
from phobos.compile.codegen.specialization import TensorSpecialization
from phobos.compile.interp import run
from phobos.compile.pipeline import parse_file
from phobos.compile.syntax import parse

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

ROOT = Path(__file__).resolve().parents[3]


def _host_harness():
    path = Path(__file__).with_name("test_codegen_host.py")
    spec = importlib.util.spec_from_file_location("_codegen_host_harness", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generated(kernel):
    facts = TensorSpecialization(16, True)
    spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
    return generate(kernel, spec, "sm_90")


PARTIAL = """\
@autotune(BM in [16, 128], BN in [16, 128], BK in [16, 64])
kernel partial(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[P, Q], steps: i32) {
    let m = ctx.block.y * BM
    let n = ctx.block.x * BN
    var acc = zeros<f32>[BM, BN] + 0.5
    for k in 0 .. steps * BK step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    c[m :+ BM, n :+ BN] = fill(acc, -7.0)
}
"""


def _matmul_launch(rng, values, m, n, k):
    kernel = lower(parse_file(ROOT / "examples" / "matmul.ph"), "matmul", values)
    args = [
        rng.standard_normal((m, k)).astype(np.float16),
        rng.standard_normal((k, n)).astype(np.float16),
        np.zeros((m, n), np.float16),
    ]
    grid = (-(-m // values["BM"]) * -(-n // values["BN"]),)
    return kernel, grid, args


def _partial_launch(rng, values, steps):
    kernel = lower(parse(PARTIAL, "partial.ph"), "partial", values)
    args = [
        rng.standard_normal((40, 70)).astype(np.float16),
        rng.standard_normal((70, 24)).astype(np.float16),
        np.zeros((48, 32), np.float32),
        np.int32(steps),
    ]
    return kernel, (2, 3), args


def test_pipelined_dot_loops_compute_what_the_interpreter_does(tmp_path):
    rng = np.random.default_rng(11)
    tile = {"GROUP_M": 8, "ACTIVATION": 0}
    made = [
        _matmul_launch(
            rng, {"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256, **tile}, 150, 140, 330
        ),
        _matmul_launch(
            rng, {"BM": 64, "BN": 64, "BK": 32, "NUM_THREADS": 128, **tile}, 70, 72, 200
        ),
        _matmul_launch(
            rng,
            {"BM": 128, "BN": 64, "BK": 32, "NUM_THREADS": 256, "GROUP_M": 8, "ACTIVATION": 1},
            130,
            64,
            96,
        ),
        _partial_launch(rng, {"BM": 32, "BN": 16, "BK": 16}, 4),
        _partial_launch(rng, {"BM": 32, "BN": 16, "BK": 16}, 0),
        _partial_launch(rng, {"BM": 32, "BN": 16, "BK": 16}, 6),  # a k-step past K: absent
    ]
    launches, checks = [], []
    for number, (kernel, grid, expected) in enumerate(made):
        generated = _generated(kernel)
        entry = f"{generated.entry}_{number}"
        source = generated.source.replace(generated.entry, entry)
        generated = dataclasses.replace(generated, source=source, entry=entry)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in expected]
        run(kernel, grid, expected)
        launches.append((generated, grid, got))
        checks.append((entry, expected, got))
    _host_harness().run_on_host(launches, tmp_path)
    for name, expected, got in checks:
        for want, have in zip(expected, got):
            if isinstance(want, np.ndarray):
                np.testing.assert_allclose(
                    have.astype(np.float32),
                    want.astype(np.float32),
                    rtol=2e-3,
                    atol=2e-3,
                    err_msg=name,
                )
