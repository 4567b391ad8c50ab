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


def _generated(kernel, arch="sm_90"):
    facts = TensorSpecialization(16, True)
    spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
    return generate(kernel, spec, arch)


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


TRANSPOSED = """\
@autotune(BM in {16, 32}, BN in {24, 16}, BK in {32, 16})
kernel transposed(a: tensor<f16>[M, K], b: tensor<f16>[N, K], c: tensor<f32>[M, N], d: tensor<f32>[M, N], e: tensor<f32>[M, N], f: tensor<f32>[M, N], g: tensor<f32>[M, N]) {
    let m = ctx.block.y * BM
    let n = ctx.block.x * BN
    let rows = a[m :+ BM, 0 :+ BK]
    let columns = b[n :+ BN, 0 :+ BK]
    c[m :+ BM, n :+ BN] = fill(dot(rows, trans(columns)), -7.0)
    d[m :+ BM, n :+ BN] = fill(dot(f32(rows), trans(f32(columns))), -7.0)
    e[m :+ BM, n :+ BN] = fill(dot(f16(f32(rows) * 2.0), trans(b[n :+ BN, 0 :+ BK])), -7.0)
    f[m :+ BM, n :+ BN] = fill(dot(a[m :+ BM, 0 :+ BK], trans(f16(f32(columns) * 2.0))), -7.0)
    // the register operand's present k (16-19) and the window's (0-15) never meet: absent
    let late = f16(f32(a[m :+ BM, 16 :+ BK]))
    g[m :+ BM, n :+ BN] = fill(dot(late, trans(b[n :+ BN, 0 - 16 :+ BK])), -7.0)
}
"""


def _transposed_launch(rng, values):
    """``dot(a, trans(b))`` over windows past the tensors' ends (K = 20 < BK): copied ``b``
    read as it lies on the tensor cores, staged from registers for the CUDA cores, and one
    operand copied beside the other staged from registers (its k bits meet the window's
    k range)."""
    kernel = lower(parse(TRANSPOSED, "transposed.ph"), "transposed", values)
    args = [
        rng.standard_normal((40, 20)).astype(np.float16),
        rng.standard_normal((30, 20)).astype(np.float16),
        *(np.zeros((40, 30), np.float32) for _ in range(5)),
    ]
    return kernel, (-(-30 // values["BN"]), -(-40 // values["BM"])), args


def _matmul_launch(rng, values, m, n, k):
    kernel = lower(parse_file(ROOT / "examples" / "matmul.ph"), "matmul", values)
    args = [
        rng.standard_normal((m, k)).astype(np.float16),
        rng.standard_normal((k, n)).astype(np.float16),
        np.zeros((m, n), np.float16),
    ]
    grid = (-(-m // values["BM"]) * -(-n // values["BN"]),)
    return kernel, grid, args


def _attention_launch(rng, kernel_name, values, inputs):
    """One of the attention tutorial's kernels over 2 heads of 80 positions."""
    kernel = lower(parse_file(ROOT / "examples" / "attention.ph"), kernel_name, values)
    heads, positions, d = 2, 80, values["D"]
    shapes = {"BH": heads, "S": positions, "D": d}
    args = []
    for tensor in kernel.tensors:
        shape = tuple(shapes[dim] if isinstance(dim, str) else dim for dim in tensor.dims)
        dtype = np.float16 if tensor.dtype == "f16" else np.float32
        data = rng.standard_normal(shape) if tensor.name in inputs else np.zeros(shape)
        args.append(data.astype(dtype))
    block = values["BLOCK_N"] if kernel_name == "attention_backward_dkdv" else values["BLOCK_M"]
    return kernel, (-(-positions // block), heads), [*args, np.float32(d**-0.5)]


# ``y``, a window of a tensor the kernel never writes, is read only by dots: each dot copies
# it again (reload.py); ``x``'s tensor is written in the loop, so ``x`` is held as loaded.
LOOP_LETS = """\
@autotune(BM in {16}, BK in {16})
kernel loop_lets(a: tensor<f16>[M, K], b: tensor<f16>[M, K], c: tensor<f32>[M, N], steps: i32) {
    let m = ctx.block.x * BM
    var acc = zeros<f32>[BM, BM]
    for s in 0 .. steps {
        let x = a[m :+ BM, 0 :+ BK]
        let y = b[m + s :+ BM, 0 :+ BK]
        acc = dot(x, trans(y), acc)
        a[m :+ BM, 0 :+ BK] = f16(f32(b[m :+ BM, 0 :+ BK]) * 0.5 + 1.0)
        acc = dot(y, trans(x), acc)
    }
    c[m :+ BM, 0 :+ BM] = fill(acc, -7.0)
}
"""


def _loop_lets_launch(rng, steps):
    kernel = lower(parse(LOOP_LETS, "loop_lets.ph"), "loop_lets", {"BM": 16, "BK": 16})
    args = [
        rng.standard_normal((40, 16)).astype(np.float16),
        rng.standard_normal((40, 16)).astype(np.float16),
        np.zeros((40, 16), np.float32),
        np.int32(steps),
    ]
    return kernel, (3, 1), args


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
        # rows 16-byte aligned: whole windows go group by group without tests
        _matmul_launch(
            rng, {"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256, **tile}, 150, 136, 320
        ),
        _matmul_launch(
            rng, {"BM": 64, "BN": 64, "BK": 32, "NUM_THREADS": 128, **tile}, 70, 72, 200
        ),
        # rows off 16 bytes (K = 90): every group tested, copied lane by lane
        _matmul_launch(
            rng,
            {"BM": 128, "BN": 64, "BK": 32, "NUM_THREADS": 256, "GROUP_M": 8, "ACTIVATION": 1},
            130,
            60,
            90,
        ),
        _partial_launch(rng, {"BM": 32, "BN": 16, "BK": 16}, 4),
        _partial_launch(rng, {"BM": 32, "BN": 16, "BK": 16}, 0),
        _partial_launch(rng, {"BM": 32, "BN": 16, "BK": 16}, 6),  # a k-step past K: absent
        _transposed_launch(rng, {"BM": 16, "BN": 24, "BK": 32}),  # one warp, 3 tile columns
        _transposed_launch(rng, {"BM": 32, "BN": 16, "BK": 16}),
        _loop_lets_launch(rng, 3),
    ]
    attention = {"D": 32, "NUM_THREADS": 256}
    made += [
        _attention_launch(
            rng,
            "attention_forward",
            {**attention, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": 1},
            ("q", "k", "v"),
        ),
        _attention_launch(  # the benchmarked tile: 2 row tiles a warp, two blocks an SM
            rng,
            "attention_forward",
            {**attention, "D": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": 0},
            ("q", "k", "v"),
        ),
        _attention_launch(
            rng,
            "attention_backward_dq",
            {**attention, "BLOCK_M": 64, "BLOCK_N": 32, "CAUSAL": 0},
            ("q", "k", "v", "do", "lse", "delta"),
        ),
        _attention_launch(
            rng,
            "attention_backward_dkdv",
            {**attention, "BLOCK_M": 32, "BLOCK_N": 64, "CAUSAL": 1},
            ("q", "k", "v", "do", "lse", "delta"),
        ),
    ]
    launches, checks = [], []
    for number, (kernel, grid, expected) in enumerate(made):
        generated = _generated(kernel)
        entry = f"{generated.entry}_{number}"
        source = generated.source.replace(generated.entry, entry)
        generated = dataclasses.replace(generated, source=source, entry=entry)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in expected]
        run(kernel, grid, expected)
        written = [
            not np.array_equal(w, g) for w, g in zip(expected, got) if isinstance(w, np.ndarray)
        ]
        assert any(written), f"{entry} writes nothing: the comparison would be vacuous"
        launches.append((generated, grid, got))
        checks.append((entry, expected, got))
    _host_harness().run_on_host(launches, tmp_path)
    for name, expected, got in checks:
        for want, have in zip(expected, got):
            if isinstance(want, np.ndarray):
                np.testing.assert_allclose(
                    have.astype(np.float32),
                    want.astype(np.float32),
                    rtol=1e-2,
                    atol=1e-2,
                    err_msg=name,
                )


def test_wgmma_k_loops_compute_what_the_interpreter_does(tmp_path):
    """sm_90a: the tutorial's k-loop on warpgroup MMA, from swizzled stages (128-, 64- and
    32-byte swizzles), one and two slabs a warpgroup, whole and boundary windows."""
    rng = np.random.default_rng(12)
    made = [
        ({"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 128, "ACTIVATION": 0}, 150, 136, 320),
        ({"BM": 128, "BN": 64, "BK": 32, "NUM_THREADS": 256, "ACTIVATION": 1}, 130, 60, 90),
        ({"BM": 64, "BN": 64, "BK": 32, "NUM_THREADS": 128, "ACTIVATION": 0}, 70, 72, 200),
    ]
    made = [_matmul_launch(rng, {**values, "GROUP_M": 8}, *mnk) for values, *mnk in made]
    # 32-byte swizzles (16 columns of a and of b), k-steps past K (absent lanes), and none
    partial = PARTIAL.replace("BK in [16, 64])", "BK in [16, 64], NUM_THREADS in {128})")
    for steps in (6, 0):
        kernel, grid, args = _partial_launch(rng, {"BM": 64, "BN": 16, "BK": 16}, steps)
        values = {"BM": 64, "BN": 16, "BK": 16, "NUM_THREADS": 128}
        made.append((lower(parse(partial, "partial.ph"), "partial", values), grid, args))
    launches, checks = [], []
    for number, (kernel, grid, expected) in enumerate(made):
        values = kernel.values
        generated = _generated(kernel, "sm_90a")
        assert "wgmma.mma_async" in generated.source, values  # not the mma.sync path
        entry = f"{generated.entry}_wgmma{number}"
        generated = dataclasses.replace(
            generated, source=generated.source.replace(generated.entry, entry), entry=entry
        )
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in expected]
        run(kernel, grid, expected)
        assert not np.array_equal(expected[2], got[2]), f"{entry} writes nothing"
        launches.append((generated, grid, got))
        checks.append((entry, expected[2], got[2]))
    _host_harness().run_on_host(launches, tmp_path)
    for name, want, have in checks:
        np.testing.assert_allclose(
            have.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2, err_msg=name
        )
