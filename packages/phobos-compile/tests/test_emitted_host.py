"""The C++ the GPU back end prints, run on the host against the CPU interpreter.

Every case goes through the whole back end (lowering, every pass, the C++ printer)
and then through the host's C++ compiler under ``host/emulation.py``'s emulation of
CUDA and of each PTX instruction, for Hopper (wgmma) and for sm_80 (mma.sync), and
what it writes is compared with the interpreter's results.  This checks the printed
code itself, which the GPU-IR executor does not: coordinates, vector and boundary
paths, masks, shuffles, shared-memory exchanges, ldmatrix addresses, fragment packing
and wgmma descriptors.  Skipped without ``g++``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.gpu import GeneratedKernel, generate
from phobos.compile.interp import run
from phobos.compile.pipeline import parse_file
from phobos.compile.specialization import Specialization, TensorSpecialization
from phobos.compile.syntax import parse

from .host.emulation import COMPILER, run_on_host

pytestmark = pytest.mark.skipif(COMPILER is None, reason="needs g++")
ROOT = Path(__file__).resolve().parents[3]

CASES = {
    "attention": (
        """\
kernel attention(q: tensor<f16>[S, D], k: tensor<f16>[S, D], v: tensor<f16>[S, D],
                 o: tensor<f32>[S, D]) {
    let m = ctx.block.x * 16
    let qt = q[m :+ 16, 0 :+ 16]
    var acc = zeros<f32>[16, 16]
    var row_max = zeros<f32>[16] - 1000.0
    var row_sum = zeros<f32>[16]
    for s in 0 .. S step 16 {
        let scores = fill(dot(qt, trans(k[s :+ 16, 0 :+ 16]), zeros<f32>[16, 16]), -1000.0)
        let new_max = maximum(row_max, max(scores, axis=1))
        let p = exp(scores - new_max[:, newaxis])
        let scale = exp(row_max - new_max)
        row_sum = row_sum * scale + sum(p, axis=1)
        let pv = dot(f16(p), v[s :+ 16, 0 :+ 16], zeros<f32>[16, 16])
        acc = acc * scale[:, newaxis] + fill(pv, 0.0)
        row_max = new_max
    }
    o[m :+ 16, 0 :+ 16] = acc / row_sum[:, newaxis]
}
""",
        {},
        lambda rng: [
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            np.zeros((40, 16), np.float32),
        ],
        (3,),
    ),
    "attention_rescaled": (
        """\
kernel attention_rescaled(q: tensor<f16>[S, D], k: tensor<f16>[S, D], v: tensor<f16>[S, D],
                          o: tensor<f32>[S, D]) {
    let m = ctx.block.x * 16
    let qt = q[m :+ 16, 0 :+ 16]
    var acc = zeros<f32>[16, 16]
    var row_max = zeros<f32>[16] - 1000.0
    var row_sum = zeros<f32>[16]
    for s in 0 .. S step 16 {
        let scores = fill(dot(qt, trans(k[s :+ 16, 0 :+ 16]), zeros<f32>[16, 16]), -1000.0)
        let new_max = maximum(row_max, max(scores, axis=1))
        let p = exp(scores - new_max[:, newaxis])
        let scale = exp(row_max - new_max)
        row_sum = row_sum * scale + sum(p, axis=1)
        acc = dot(f16(p), v[s :+ 16, 0 :+ 16], acc * scale[:, newaxis])
        row_max = new_max
    }
    o[m :+ 16, 0 :+ 16] = acc / row_sum[:, newaxis]
}
""",
        {},
        lambda rng: [
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            np.zeros((40, 16), np.float32),
        ],
        (3,),
    ),
    "accumulate": (
        """\
kernel accumulate(x: tensor<f32>[N], total: tensor<f32>[64], big: tensor<f32>[1],
                  lock: tensor<i32>[1], counts: tensor<i32>[4], h: tensor<f16>[2]) {
    let b = ctx.block.x * 64
    atomic_add(total[0 :+ 64], fill(x[b :+ 64], 0.0))
    atomic_max(big[0], max(x[b :+ 64], axis=0))
    atomic_add(h[0 :+ 2], f16(x[b :+ 2]))
    var old = atomic_cas(lock[0], 0, 1)
    while old != 0 {
        old = atomic_cas(lock[0], 0, 1)
    }
    counts[0] = counts[0] + 1
    let prev = atomic_xchg(lock[0], 0)
    atomic_add(counts[1 :+ 2], zeros<i32>[2] + prev)
}
""",
        {},
        lambda rng: [
            rng.standard_normal(200).astype(np.float32),
            np.zeros(64, np.float32),
            np.full(1, -5.0, np.float32),
            np.zeros(1, np.int32),
            np.zeros(4, np.int32),
            np.zeros(2, np.float16),
        ],
        (4,),
    ),
    "scaled": (  # one warp: a and b fragments shared across its tiles
        """\
kernel scaled(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.y * 32
    let n = ctx.block.x * 16
    var acc = zeros<f32>[32, 16]
    for k in 0 .. K step 16 {
        acc = dot(a[m :+ 32, k :+ 16] * 2.0f16, b[k :+ 16, n :+ 16], acc)
    }
    c[m :+ 32, n :+ 16] = fill(acc, -7.0)
}
""",
        {},
        lambda rng: [
            rng.standard_normal((50, 45)).astype(np.float16),
            rng.standard_normal((45, 40)).astype(np.float16),
            np.zeros((50, 40), np.float32),
        ],
        (3, 2),
    ),
    "mixed": (
        """\
kernel mixed(x: tensor<u32>[N], y: tensor<i16>[N], b: tensor<bool>[N], h: tensor<f16>[N],
             o: tensor<u32>[N], p: tensor<i16>[N], q: tensor<bool>[N], r: tensor<f16>[N]) {
    let s = ctx.block.x * 64
    o[s :+ 64] = abs(x[s :+ 64]) + maximum(x[s :+ 64], u32(3)) - x[s :+ 64] % u32(7)
    p[s :+ 64] = abs(y[s :+ 64]) / i16(3) + minimum(y[s :+ 64], i16(-2)) + (y[s :+ 64] << i16(1))
    q[s :+ 64] = !b[s :+ 64] || (h[s :+ 64] > 1.0f16)
    r[s :+ 64] = where(b[s :+ 64], maximum(h[s :+ 64], 0.5f16), -h[s :+ 64] % 2.0f16)
}
""",
        {},
        lambda rng: [
            rng.integers(0, 2**32, 300).astype(np.uint32),
            rng.integers(-3000, 3000, 300).astype(np.int16),
            rng.integers(0, 2, 300).astype(bool),
            rng.standard_normal(300).astype(np.float16),
            np.zeros(300, np.uint32),
            np.zeros(300, np.int16),
            np.zeros(300, bool),
            np.zeros(300, np.float16),
        ],
        (5,),
    ),
    "bias": (
        """\
kernel bias(x: tensor<f32>[M, N], bias: tensor<f32>[N], out: tensor<f32>[N, M],
            cols: tensor<f32>[N]) {
    let m = ctx.block.y * 32
    let n = ctx.block.x * 64
    let t = x[m :+ 32, n :+ 64] + bias[n :+ 64][newaxis, :]
    out[n :+ 64, m :+ 32] = trans(where(t > 0.0, t, 0.0))
    cols[n :+ 64] = sum(t, axis=0) + f32(arange(64))
}
""",
        {},
        lambda rng: [
            rng.standard_normal((37, 100)).astype(np.float32),
            rng.standard_normal(100).astype(np.float32),
            np.zeros((100, 37), np.float32),
            np.zeros(100, np.float32),
        ],
        (2, 2),
    ),
    "colsum": (
        """\
kernel colsum(a: tensor<f32>[M, N], s: tensor<f32>[N], m: tensor<f32>[N], h: tensor<f16>[N]) {
    let n = ctx.block.x * 64
    let t = a[0 :+ 32, n :+ 64]
    s[n :+ 64] = sum(fill(t, 0.0), axis=0)
    m[n :+ 64] = max(t, axis=0)
    h[n :+ 64] = f16(sum(fill(a[0 :+ 16, n :+ 64], 1.0), axis=0))
}
""",
        {},
        lambda rng: [
            rng.standard_normal((20, 100)).astype(np.float32),
            np.zeros(100, np.float32),
            np.zeros(100, np.float32),
            np.zeros(100, np.float16),
        ],
        (2,),
    ),
    "colwide": (
        """\
kernel colwide(a: tensor<f32>[M, N], s: tensor<f32>[N], t: tensor<f32>[N]) {
    let n = ctx.block.x * 256
    s[n :+ 256] = sum(fill(a[0 :+ 16, n :+ 256], 0.0), axis=0)
    t[n :+ 64] = max(fill(a[0 :+ 4, n :+ 64], -inf), axis=0)
}
""",
        {},
        lambda rng: [
            rng.standard_normal((13, 300)).astype(np.float32),
            np.zeros(300, np.float32),
            np.zeros(300, np.float32),
        ],
        (2,),
    ),
    "reload": (
        """\
kernel reload(x: tensor<f16>[M, N], w: tensor<f16>[N], y: tensor<f32>[M, N], s: tensor<f32>[N]) {
    let weight = f32(w[0 :+ 64]) * 2.0
    var acc = zeros<f32>[64]
    for m in 0 .. M {
        let row = f32(x[m, 0 :+ 64]) * weight
        y[m, 0 :+ 64] = row
        acc += fill(row, 0.0)
    }
    s[0 :+ 64] = acc
}
""",
        {},
        lambda rng: [
            rng.standard_normal((5, 50)).astype(np.float16),
            rng.standard_normal(50).astype(np.float16),
            np.zeros((5, 50), np.float32),
            np.zeros(50, np.float32),
        ],
        (1,),
    ),
    "oneloop": (
        """\
kernel oneloop(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    let first = ctx.block.x * 2
    var total = zeros<f32>[2]
    for start in 0 .. N step 1024 {
        total = total + sum(fill(x[first :+ 2, start :+ 1024], 0.0), axis=1)
    }
    out[first :+ 2] = total / max(fill(x[first :+ 2, 0 :+ 1024], 1.0), axis=1)
}
""",
        {},
        lambda rng: [rng.standard_normal((3, 2500)).astype(np.float32), np.zeros(3, np.float32)],
        (2,),
    ),
    "colsmall": (
        """\
kernel colsmall(a: tensor<f32>[M, N], s: tensor<f32>[N]) {
    let n = ctx.block.x * 16
    s[n :+ 16] = sum(fill(a[0 :+ 8, n :+ 16], 0.0), axis=0)
}
""",
        {},
        lambda rng: [rng.standard_normal((6, 20)).astype(np.float32), np.zeros(20, np.float32)],
        (2,),
    ),
    "matmul": (
        """\
@autotune(BM in [16, 128], BN in [16, 128], BK in [16, 64])
kernel matmul(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.y * BM
    let n = ctx.block.x * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    c[m :+ BM, n :+ BN] = acc
}
""",
        {"BM": 128, "BN": 16, "BK": 64},  # 8 warps over 2 tiles a row: fragments per tile
        lambda rng: [
            rng.standard_normal((130, 70)).astype(np.float16),
            rng.standard_normal((70, 20)).astype(np.float16),
            np.zeros((130, 20), np.float32),
        ],
        (2, 2),
    ),
    "saxpy": (
        """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
""",
        {"BLOCK": 256},
        lambda rng: [
            rng.standard_normal(n := 1001).astype(np.float32),
            rng.standard_normal(n).astype(np.float32),
            np.zeros(n, np.float32),
            np.float32(2.5),
        ],
        (4,),
    ),
    "softmax": (
        """\
@autotune(BM in [1, 16], BN in [32, 4096])
kernel softmax(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x * BM
    let t = x[row :+ BM, 0 :+ BN]
    let e = exp(t - max(t, axis=1)[:, newaxis])
    out[row :+ BM, 0 :+ BN] = e / sum(e, axis=1)[:, newaxis]
    let cols = sum(trans(t), axis=1)
}
""",
        {"BM": 4, "BN": 256},
        lambda rng: [
            rng.standard_normal((7, 200)).astype(np.float32),
            np.zeros((7, 200), np.float32),
        ],
        (2,),
    ),
    "wide_rows": (
        """\
@autotune(ROWS in {1, 2}, BLOCK_N in [16, 4096])
kernel wide_rows(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let first = ctx.block.x * ROWS
    let rows = x[first :+ ROWS, 0 :+ BLOCK_N]
    let shifted = rows - max(rows, axis=1)[:, newaxis]
    let numerator = exp(shifted)
    out[first :+ ROWS, 0 :+ BLOCK_N] = numerator / sum(numerator, axis=1)[:, newaxis]
}
""",
        {"ROWS": 2, "BLOCK_N": 2048},  # 256 threads: each row spans two repeats of all 8 warps
        lambda rng: [
            rng.standard_normal((3, 1500)).astype(np.float32),
            np.zeros((3, 1500), np.float32),
        ],
        (2,),  # the second block's second row is past M: absent, never stored
    ),
    "norm": (
        """\
@autotune(BN in [32, 4096])
kernel norm(x: tensor<f16>[M, N], y: tensor<f16>[M, N], mean: tensor<f32>[M]) {
    let row = ctx.block.x
    var acc = zeros<f32>[BN]
    for k in 0 .. N step BN {
        acc += fill(f32(x[row, k :+ BN]), 0.0)
    }
    let mu = sum(acc, axis=0) / f32(N)
    for k in 0 .. N step BN {
        y[row, k :+ BN] = f16(exp(f32(x[row, k :+ BN]) - mu))
    }
    mean[row] = mu
}
""",
        {"BN": 64},
        lambda rng: [
            rng.standard_normal((3, 150)).astype(np.float16),
            np.zeros((3, 150), np.float16),
            np.zeros(3, np.float32),
        ],
        (3,),
    ),
}


def _tutorial_cases(rng):
    """Tutorial 03's and 06's kernels, at sizes no multiple of their tiles."""
    out = []
    matmul = parse_file(ROOT / "examples" / "matmul.ph")
    for values, (m, n, k) in (
        ({"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256, "ACTIVATION": 1}, (130, 70, 90)),
        ({"BM": 64, "BN": 64, "BK": 32, "NUM_THREADS": 128, "ACTIVATION": 0}, (130, 70, 90)),
        # Rows on 16 bytes: on sm_90a the k-loop's rings go by TMA.
        ({"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256, "ACTIVATION": 0}, (130, 72, 328)),
    ):
        args = [
            rng.standard_normal((m, k)).astype(np.float16),
            rng.standard_normal((k, n)).astype(np.float16),
            np.zeros((m, n), np.float16),
        ]
        blocks = math.ceil(m / values["BM"]) * math.ceil(n / values["BN"])
        out.append((matmul, "matmul", {"GROUP_M": 8, **values}, args, (blocks,)))
    attention = parse_file(ROOT / "examples" / "attention.ph")
    bh, s = 2, 100
    for d, block_m, block_n, causal in ((64, 128, 64, 1), (16, 64, 32, 0)):
        q, k, v, do = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
        values = {"D": d, "BLOCK_M": block_m, "BLOCK_N": block_n, "NUM_THREADS": 256}
        lse = np.zeros((bh, s), np.float32)
        args = [q, k, v, np.zeros_like(q), lse, np.float32(1 / math.sqrt(d))]
        grid = (math.ceil(s / block_m), bh)
        out.append((attention, "attention_forward", {**values, "CAUSAL": causal}, args, grid))
        lse = rng.standard_normal((bh, s)).astype(np.float32)
        delta = rng.standard_normal((bh, s)).astype(np.float32)
        values = {"D": d, "BLOCK_M": 32 if d == 16 else 64, "BLOCK_N": 64, "NUM_THREADS": 256}
        args = [q, k, v, do, lse, delta, np.zeros_like(q), np.zeros_like(q), np.float32(0.125)]
        grid = (math.ceil(s / 64), bh)
        out.append((attention, "attention_backward_dkdv", {**values, "CAUSAL": causal}, args, grid))
        values = {"D": d, "BLOCK_M": 64, "BLOCK_N": 32 if d == 16 else 64, "NUM_THREADS": 256}
        args = [q, k, v, do, lse, delta, np.zeros_like(q), np.float32(0.125)]
        out.append((attention, "attention_backward_dq", {**values, "CAUSAL": causal}, args, grid))
    return out


def _specialised(kernel, inputs) -> Specialization:
    """Bases on 16 bytes, unit last strides, and rows on 16 bytes where the arrays' are."""
    arrays = dict(zip((p.name for p in kernel.params), inputs))
    facts = {}
    for t in kernel.tensors:
        rows = [s for s, n in zip(arrays[t.name].strides[:-1], arrays[t.name].shape) if n > 1]
        row_align = 16 if all(s % 16 == 0 for s in rows) else 1
        facts[t.name] = TensorSpecialization(16, True, row_align)
    return Specialization.of(32, **facts)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_printed_code_computes_what_the_interpreter_does(tmp_path, arch):
    rng = np.random.default_rng(7)
    programs = [
        (parse(text, f"{name}.ph"), name, values, make(rng), grid)
        for name, (text, values, make, grid) in CASES.items()
    ]
    programs += _tutorial_cases(rng)
    launches, checks = [], []
    for index, (module, name, values, inputs, grid) in enumerate(programs):
        kernel = lower(module, name, values)
        generated = generate(kernel, _specialised(kernel, inputs), arch)
        entry = f"{generated.entry}_{index}"  # one program holds every case
        source = generated.source.replace(f"{generated.entry}(", f"{entry}(")
        contract = generated.contract
        generated = GeneratedKernel(source, entry, contract, generated.gpu_ir)
        expected = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
        run(kernel, grid, expected)
        launches.append((generated, grid, got))
        checks.append((f"{name} {values}", expected, got))
    run_on_host(launches, tmp_path)
    for name, expected, got in checks:
        for want, have in zip(expected, got):
            if isinstance(want, np.ndarray):
                tolerance = 2e-2 if want.dtype == np.float16 else 2e-3
                np.testing.assert_allclose(
                    have.astype(np.float64),
                    want.astype(np.float64),
                    rtol=tolerance,
                    atol=tolerance,
                    err_msg=name,
                )


FLOATS = ("f32", "f64", "f16")
INTEGERS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
SPECIAL = [
    float("nan"), float("inf"), float("-inf"), 300.7, -300.7, -0.5, 3e9, 1e20,
    -1e20, 127.9, 128.0, -129.0, 65535.5, 4294967296.0, -0.0, 0.99,
]  # fmt: skip


def _semantics_cases() -> list[tuple[str, str, list]]:
    """Each float -> integer cast and each integer type's division, as in
    tests/gpu/test_semantics_gpu.py: (kernel name, its text, its arguments)."""
    cases = []
    for source in FLOATS:
        with np.errstate(over="ignore"):  # 3e9 and 1e20 are inf in f16, as meant
            x = np.array(SPECIAL, np.dtype(numpy_name(source)))
        for target in INTEGERS:
            name = f"cast_{source}_{target}"
            text = (
                f"kernel {name}(x: tensor<{source}>[N], out: tensor<{target}>[N]) {{\n"
                f"    out[0 :+ 16] = {target}(x[0 :+ 16])\n}}\n"
            )
            cases.append((name, text, [x, np.zeros(16, np.dtype(numpy_name(target)))]))
    for dtype in INTEGERS:
        np_dtype = np.dtype(numpy_name(dtype))
        low, high = np.iinfo(np_dtype).min, np.iinfo(np_dtype).max
        modulus = 1 << (8 * np_dtype.itemsize) if np_dtype.kind == "u" else None
        a = [7, -7, 5, low, low, 0, 9, 100, high, 1, -1, 3, low, 13, -13, 0, 0]
        b = [0, 0, 0, -1, 1, 0, -2, 3, 0, 0, 0, 7, 0, -5, 5, 3, 0]
        name = f"divide_{dtype}"
        text = (
            f"kernel {name}(a: tensor<{dtype}>[N], b: tensor<{dtype}>[N], "
            f"q: tensor<{dtype}>[N], r: tensor<{dtype}>[N]) {{\n"
            "    q[0 :+ 16] = a[0 :+ 16] / b[0 :+ 16]\n"
            "    r[0 :+ 16] = a[0 :+ 16] % b[0 :+ 16]\n"
            "    q[16] = a[0] / b[0]\n"
            "    r[16] = a[0] % b[0]\n}\n"
        )
        args = [np.array([v % modulus if modulus else v for v in c], np_dtype) for c in (a, b)]
        cases.append((name, text, [*args, np.zeros(17, np_dtype), np.zeros(17, np_dtype)]))
    return cases


def numpy_name(dtype: str) -> str:
    return {"f16": "float16", "f32": "float32", "f64": "float64"}.get(
        dtype, f"{'u' if dtype[0] == 'u' else ''}int{dtype[1:]}"
    )


def test_float_to_integer_casts_and_integer_division_as_the_interpreter_defines_them(tmp_path):
    """Saturating casts (NaN gives 0) and division by zero (docs/language.md), bit for bit."""
    launches, checks = [], []
    for name, text, inputs in _semantics_cases():
        kernel = lower(parse(text, f"{name}.ph"), name, {})
        generated = generate(kernel, _specialised(kernel, inputs), "sm_90a")
        expected = [a.copy() for a in inputs]
        got = [a.copy() for a in inputs]
        run(kernel, (1,), expected)
        launches.append((generated, (1,), got))
        checks.append((name, expected, got))
    run_on_host(launches, tmp_path)
    for name, expected, got in checks:
        for want, have in zip(expected, got):
            np.testing.assert_array_equal(have, want, err_msg=name)
