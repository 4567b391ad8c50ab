"""The prefetch pass: attention's KV loop issues the next key block's ``q @ kᵀ`` as soon as
it is done with this one's scores, carries it in flight, and stays race-free and right
(the GPU-IR executor against the interpreter)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.gpu import ir
from phobos.compile.gpu.executor import ExecutionError, execute
from phobos.compile.gpu.pipeline import build
from phobos.compile.interp import run
from phobos.compile.pipeline import parse_file, variant_values

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def tile_ir(example: str, kernel: str, values: dict[str, int]):
    module = parse_file(EXAMPLES / example)
    return lower(module, kernel, variant_values(module, [kernel], values)[kernel])


def gpu_ir(tir, **options) -> ir.Kernel:
    names = [p.name for p in tir.params]
    layout = {k: dict.fromkeys(names, v) for k, v in [("unit_stride", True), ("align", 16)]}
    return build(tir, arch="sm_90a", row_align=dict.fromkeys(names, 16), **layout, **options)


def attention(d: int, bm: int, bn: int, causal: int):
    values = {"D": d, "BLOCK_M": bm, "BLOCK_N": bn, "NUM_THREADS": 256, "CAUSAL": causal}
    return tile_ir("attention.ph", "attention_forward", values)


def kv_loop(kernel: ir.Kernel) -> ir.For:
    (loop,) = [
        op
        for op in kernel.walk()
        if isinstance(op, ir.For) and any(isinstance(o, ir.Wgmma) for o in op.body.ops)
    ]
    return loop


def test_the_kv_loop_carries_the_next_scores_in_flight():
    kernel = gpu_ir(attention(128, 128, 32, 0))
    loop = kv_loop(kernel)
    outer = kernel.body.ops
    first = outer[outer.index(loop) - 1]
    assert isinstance(first, ir.Wgmma)  # the first key block's scores, before the loop
    position = loop.inits.index(first.result)
    carried = loop.body.args[1 + position]
    ops = loop.body.ops
    (wait,) = [op for op in ops if isinstance(op, ir.WgmmaWait) and op.operands == [carried]]
    scores_next, pv = [op for op in ops if isinstance(op, ir.Wgmma)]
    assert ops.index(wait) < ops.index(scores_next) < ops.index(pv)
    assert ops[-1].operands[position] is scores_next.result
    # Waiting with one group left would leave the first iteration's scores in flight.
    assert wait.pending == 0
    # The next stage's full mbarrier is waited for under the loop's bound, not at the top.
    assert not any(isinstance(op, ir.MbarrierWait) for op in ops)
    guarded = [op for op in ops if isinstance(op, ir.If) and op.regions[0].ops]
    assert any(isinstance(o, ir.MbarrierWait) for op in guarded for o in op.regions[0].ops)


def test_a_loop_with_one_product_is_left_alone():
    values = {"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256, "ACTIVATION": 0}
    tir = tile_ir("matmul.ph", "matmul", values)
    before = gpu_ir(tir, stop_after="pipeline")
    after = gpu_ir(tir, stop_after="prefetch_products")
    assert [type(op) for op in after.walk()] == [type(op) for op in before.walk()]


def run_both(tir, kernel: ir.Kernel, s: int, bm: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((2, s, d)).astype(np.float16) for _ in range(3))
    args = [q, k, v, np.zeros((2, s, d), np.float16), np.zeros((2, s), np.float32), 0.1]
    grid = (-(-s // bm), 2, 1)
    expected = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    run(tir, grid, expected)
    execute(kernel, grid, args)
    return args, expected


@pytest.mark.parametrize(
    ("d", "bm", "bn", "causal", "s"),
    [(128, 128, 32, 0, 200), (128, 128, 64, 1, 300), (64, 64, 64, 0, 64), (64, 128, 32, 1, 132)],
)
def test_the_prefetched_loop_matches_the_interpreter(d, bm, bn, causal, s):
    """One key block (s = 64 at BLOCK_N 64: the prefetch on the last iteration reads its
    own stage again), several, a partial last one, and the causal loop's bound."""
    tir = attention(d, bm, bn, causal)
    got, expected = run_both(tir, gpu_ir(tir), s, bm, d)
    np.testing.assert_allclose(
        got[3].astype(np.float32), expected[3].astype(np.float32), rtol=2e-3, atol=2e-3
    )
    np.testing.assert_allclose(got[4], expected[4], rtol=1e-5, atol=1e-5)


def test_the_executor_fails_a_wait_that_leaves_the_first_scores_in_flight():
    """Counted over the steady state, ``p @ v`` is younger than the scores it waits for;
    in the first iteration nothing is, so ``pending=1`` would read them in flight."""
    tir = attention(128, 128, 32, 0)
    kernel = gpu_ir(tir)
    loop = kv_loop(kernel)
    carried = set(loop.body.args[1:])
    (wait,) = [
        op
        for op in loop.body.ops
        if isinstance(op, ir.WgmmaWait)
        and op.operands[0] in carried
        and not op.drained
        and op.pending == 0
        and isinstance(op.operands[0].type, ir.Tile)
        and op.operands[0].tile.shape == (128, 32)
    ]
    wait.pending = 1
    with pytest.raises(ExecutionError, match="leaves the product it waits for in flight"):
        run_both(tir, kernel, 200, 128, 128)
