"""Tutorial 06, fused attention: forward and backward in the interpreter against numpy in
float64, and every variant the GPU autotuner compiles, compiled for sm_90."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.test_tutorials import load

tutorial = load("06_fused_attention.py")

SMALL, LARGE = tutorial.CPU_TILES
MIXED = {
    "forward": {"BLOCK_M": 128, "BLOCK_N": 32},
    "preprocess": {"BLOCK_M": 64},
    "dkdv": {"BLOCK_M": 32, "BLOCK_N": 64},
    "dq": {"BLOCK_M": 64, "BLOCK_N": 64},
}


def inputs(bh: int, s: int, d: int) -> list[np.ndarray]:
    rng = np.random.default_rng(bh * 10000 + s * 100 + d)
    return [rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4)]


@pytest.mark.parametrize(
    "bh, s, d, tiles",
    [
        (3, 100, 16, SMALL),
        (3, 100, 16, LARGE),
        (2, 37, 64, SMALL),
        (2, 37, 32, MIXED),
        (1, 200, 16, MIXED),
        (2, 2, 16, SMALL),
    ],
)
@pytest.mark.parametrize("causal", [False, True])
def test_forward_and_backward_match_numpy(bh, s, d, tiles, causal):
    q, k, v, do = inputs(bh, s, d)
    sm_scale = 1 / math.sqrt(d)
    got = tutorial.run_on_cpu(q, k, v, do, sm_scale, causal, tiles, race_check=True)
    expected = tutorial.reference(q, k, v, do, sm_scale, causal)
    # fp16 outputs, one rounding of fp32 accumulators; lse stays fp32.
    assert tutorial.relative_error(got["lse"], expected["lse"]) < 1e-5
    for name in ("o", "dq", "dk", "dv"):
        assert tutorial.relative_error(got[name], expected[name]) < 3e-3, name
    for value in got.values():
        assert not np.isnan(value).any()
    delta = (expected["o"] * do.astype(np.float64)).sum(axis=-1)
    assert tutorial.relative_error(got["delta"], delta) < 3e-3


def test_causal_attention_ignores_later_keys():
    """Changing the last key and value leaves every earlier query's causal output alone."""
    q, k, v, _ = inputs(1, 70, 16)
    outputs = []
    for scale in (1.0, 3.0):
        k2, v2 = k.copy(), v.copy()
        k2[:, -1], v2[:, -1] = k[:, -1] * scale, v[:, -1] * scale
        o = np.full(q.shape, np.nan, np.float16)
        lse = np.full(q.shape[:2], np.nan, np.float32)
        tutorial.forward(q, k2, v2, o, lse, 0.25, True, BLOCK_M=64, BLOCK_N=32)
        outputs.append(o)
    assert np.array_equal(outputs[0][:, :-1], outputs[1][:, :-1])
    assert not np.array_equal(outputs[0][:, -1], outputs[1][:, -1])


def test_forward_flops_halve_when_causal():
    assert tutorial.forward_flops(4, 32, 4096, 64, False) == 4 * 4 * 32 * 4096**2 * 64
    assert tutorial.forward_flops(4, 32, 4096, 64, True) == 2 * 4 * 32 * 4096**2 * 64


def test_the_tutorial_checks_itself_on_the_cpu():
    tutorial.check_on_cpu(bh=2, s=37, d=16)


def gpu_variants(kernel) -> list[dict[str, int]]:
    """The variants the GPU benchmark tunes over: every variant with D 64 or 128."""
    return [values for values in kernel.space.variants() if values["D"] in (64, 128)]


KERNELS = [
    tutorial.attention_forward,
    tutorial.attention_backward_preprocess,
    tutorial.attention_backward_dkdv,
    tutorial.attention_backward_dq,
]


def test_the_benchmark_tunes_over_70_variants():
    work = [(kernel, values) for kernel in KERNELS for values in gpu_variants(kernel)]
    assert len(work) == 2 * 16 + 6 + 2 * 8 + 2 * 8  # NUM_THREADS doubles the tiled kernels
    # the groups below, one test each, hold every one of them once
    grouped = [v for k, d, m in GROUPS for v in gpu_variants(k) if (v["D"], v["BLOCK_M"]) == (d, m)]
    assert len(grouped) == len(work)


# One test per kernel, head size and BLOCK_M (1 to 8 variants each), so that pytest-xdist spreads
# the 70 compiles over its workers; each test compiles its variants concurrently, as the tuner does.
GROUPS = sorted(
    {(kernel, v["D"], v["BLOCK_M"]) for kernel in KERNELS for v in gpu_variants(kernel)},
    key=lambda group: (KERNELS.index(group[0]), *group[1:]),
)


@pytest.mark.parametrize(
    ("kernel", "d", "block_m"), GROUPS, ids=[f"{k.name}-D{d}-BLOCK_M{m}" for k, d, m in GROUPS]
)
def test_every_benchmarked_variant_compiles_for_sm_90(kernel, d, block_m):
    work = [v for v in gpu_variants(kernel) if (v["D"], v["BLOCK_M"]) == (d, block_m)]

    def compile_one(values):
        try:
            kernel.compile(arch="sm_90", **values)
        except Exception as exc:  # every failure is reported, not only the first
            return f"{kernel.name} {values}: {str(exc).splitlines()[0]}"
        return None

    with ThreadPoolExecutor(4) as pool:
        failures = [f for f in pool.map(compile_one, work) if f]
    assert not failures, "\n".join(failures)
