"""Asynchronous MMA (``passes/mma_waits.py``) with the rings it shares a loop with.

Matmul's k-loop keeps one k-step's product in flight behind the issue of the next,
chained on the accumulator; attention's PV product stays in flight into the next
iteration.  The executor runs what the passes make against the interpreter, and
fails each schedule that would race on the GPU: a wait that leaves its product in
flight, a stage refilled while a product reads it, a product read before its wait.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.gpu import ir
from phobos.compile.gpu.executor import ExecutionError, execute
from phobos.compile.gpu.passes.mma_waits import schedule_mma_waits
from phobos.compile.gpu.pipeline import build
from phobos.compile.gpu.verify import VerifyError, verify
from phobos.compile.interp import run
from phobos.compile.pipeline import parse_file, variant_values

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
MATMUL = {"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256, "ACTIVATION": 0}
ATTENTION = {"D": 64, "BLOCK_M": 128, "BLOCK_N": 64, "NUM_THREADS": 256, "CAUSAL": 0}


def gpu_ir(example: str, kernel: str, values: dict[str, int], **build_options) -> ir.Kernel:
    module = parse_file(EXAMPLES / example)
    tile_ir = lower(module, kernel, variant_values(module, [kernel], values)[kernel])
    names = [p.name for p in tile_ir.params]
    options = {
        "unit_stride": dict.fromkeys(names, True),
        "align": dict.fromkeys(names, 16),
        **build_options,
    }
    return build(tile_ir, arch="sm_90a", **options)


def the_loop(kernel: ir.Kernel) -> ir.For:
    (loop,) = [op for op in kernel.walk() if isinstance(op, ir.For)]
    return loop


def of(block: ir.Block, kind: type) -> list:
    return [op for op in block.ops if isinstance(op, kind)]


def matmul_args(m: int, n: int, k: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return [a, b, np.zeros((m, n), np.float16)]


def matmul_reference(args: list[np.ndarray], blocks: int) -> np.ndarray:
    module = parse_file(EXAMPLES / "matmul.ph")
    tile_ir = lower(module, "matmul", variant_values(module, ["matmul"], MATMUL)["matmul"])
    out = [np.array(x, copy=True) for x in args]
    run(tile_ir, (blocks, 1, 1), out)
    return out[2]


def test_the_k_loop_carries_its_product_in_flight():
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL)
    loop = the_loop(kernel)
    (product,) = of(loop.body, ir.Wgmma)
    acc = loop.body.args[1]
    assert product.chained and product.operands[2] is acc  # no wait between k-steps
    assert loop.body.ops[-1].operands[0] is product.result  # the loop carries it in flight
    (release,) = of(loop.body, ir.WgmmaWait)
    assert release.operands == [acc] and release.results == [] and release.pending == 1
    (after,) = [op for op in kernel.body.ops if isinstance(op, ir.WgmmaWait)]
    # One wait for the last k-step, right after the loop; none in the last iteration.
    assert after.operands == [loop.results[0]] and after.pending == 0 and not after.drained
    assert kernel.body.ops[kernel.body.ops.index(loop) + 1] is after
    assert not [
        op for op in loop.body.walk() if isinstance(op, ir.If) and of(op.regions[0], ir.WgmmaWait)
    ]
    # The epilogue's coordinates are not computed between the loop and that wait.
    assert kernel.thread_values_pinned


def test_the_ring_refills_a_stage_an_iteration_later_for_a_product_in_flight():
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL)
    rings = [op for op in kernel.walk() if isinstance(op, ir.SharedAlloc)]
    assert {op.result.type.stages for op in rings} == {4}
    assert {op.lag for op in rings} == {1}  # what lets mma_waits keep the product in flight
    loop = the_loop(kernel)
    (wait,) = of(loop.body, ir.AsyncWait)
    # D = S - 1 - L = 2 iterations of copies ahead: this one's landed, the next in flight.
    assert wait.pending == 1
    prologue = [op for op in kernel.body.ops if isinstance(op, ir.AsyncCommit)]
    assert len(prologue) == 2


def test_a_product_stays_in_flight_only_over_a_ring_with_a_stage_to_spare():
    """The pipeline runs first; a ring it refills the iteration after its read (no lag)
    would be overwritten under a product in flight, so mma_waits waits within the
    iteration there, and the IR between the two passes is already race-free."""
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL, stop_after="pipeline")
    loop = the_loop(kernel)
    (product,) = of(loop.body, ir.Wgmma)
    assert not product.chained and of(loop.body, ir.WgmmaWait)[0].results  # not scheduled yet
    execute(kernel, (1, 1, 1), matmul_args(128, 128, 512))
    for op in kernel.walk():
        if isinstance(op, ir.SharedAlloc):
            op.lag = 0
    schedule_mma_waits(kernel)
    assert not product.chained
    (wait,) = of(loop.body, ir.WgmmaWait)
    assert wait.results and wait.pending == 0
    assert loop.body.ops[-1].operands[0] is wait.result  # the loop carries a finished product


def test_attention_keeps_pv_in_flight_into_the_next_iteration():
    kernel = gpu_ir("attention.ph", "attention_forward", ATTENTION)
    loop = the_loop(kernel)
    scores, pv = of(loop.body, ir.Wgmma)
    slot = loop.body.ops[-1].operands.index(pv.result)
    acc = loop.body.args[1 + slot]
    (ready,) = [w for w in of(loop.body, ir.WgmmaWait) if w.operands == [acc]]
    # The scores' wait (pending 0) already completed the PV before: nothing more to issue.
    assert ready.drained
    (scores_wait,) = [w for w in of(loop.body, ir.WgmmaWait) if w.operands == [scores.result]]
    assert scores_wait.pending == 0 and not scores_wait.drained


def assert_matmul_matches_the_interpreter(shape: tuple[int, int, int]) -> None:
    """The 128×128×64 variant's GPU IR, executed, against the interpreter."""
    m, n, k = shape
    args = matmul_args(m, n, k)
    blocks = ((m + 127) // 128) * ((n + 127) // 128)
    expected = matmul_reference(args, blocks)
    execute(gpu_ir("matmul.ph", "matmul", MATMUL), (blocks, 1, 1), args)
    np.testing.assert_allclose(
        args[2].astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=2e-3
    )


@pytest.mark.parametrize("shape", [(200, 136, 300), (128, 128, 64), (64, 64, 0), (128, 128, 1000)])
def test_the_pipelined_matmul_matches_the_interpreter(shape):
    assert_matmul_matches_the_interpreter(shape)


def _release(kernel: ir.Kernel) -> ir.WgmmaWait:
    return of(the_loop(kernel).body, ir.WgmmaWait)[0]


def _after_loop(kernel: ir.Kernel) -> ir.WgmmaWait:
    return next(op for op in kernel.body.ops if isinstance(op, ir.WgmmaWait))


MUTATIONS = {
    "a release that leaves the old product in flight": (
        lambda kernel: setattr(_release(kernel), "pending", 2),
        "leaves the product it waits for in flight",
    ),
    "no release before the stage is refilled": (
        lambda kernel: the_loop(kernel).body.ops.remove(_release(kernel)),
        "writes shared memory that a wgmma in flight reads",
    ),
    "a wait after the loop that leaves the last k-step in flight": (
        lambda kernel: setattr(_after_loop(kernel), "pending", 1),
        "leaves the product it waits for in flight",
    ),
    "a stage read before its copy landed": (
        lambda kernel: setattr(of(the_loop(kernel).body, ir.AsyncWait)[0], "pending", 2),
        "before its asynchronous copy landed",
    ),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_the_executor_fails_a_schedule_that_races(mutation):
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL)
    change, message = MUTATIONS[mutation]
    change(kernel)
    with pytest.raises(ExecutionError, match=message):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 512))


def test_the_verifier_refuses_a_product_read_without_its_wait():
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL)
    loop = the_loop(kernel)
    (after,) = [op for op in kernel.body.ops if isinstance(op, ir.WgmmaWait)]
    ir.replace_uses(kernel.body, after.result, loop.results[0])
    kernel.body.ops.remove(after)
    with pytest.raises(VerifyError, match="a product in flight, without a wait"):
        verify(kernel)


def test_a_ring_with_no_room_behind_the_product_waits_in_each_iteration(tmp_path):
    """128×256×128 steps are 96 KiB: three stages (two and the lag) do not fit in an SM's
    228 KiB, two do, so the product is complete at the end of each iteration."""
    text = (EXAMPLES / "matmul.ph").read_text(encoding="utf-8")
    space = "BM in {128, 64}, BN in {128, 256, 64}, BK in {64, 32}"
    assert space in text
    wide = tmp_path / "matmul.ph"
    wide.write_text(text.replace(space, "BM in {128}, BN in {256}, BK in {128}"), encoding="utf-8")
    module = parse_file(wide)
    values = {"BM": 128, "BN": 256, "BK": 128, "NUM_THREADS": 256, "ACTIVATION": 0}
    tile_ir = lower(module, "matmul", variant_values(module, ["matmul"], values)["matmul"])
    names = [p.name for p in tile_ir.params]
    kernel = build(
        tile_ir,
        arch="sm_90a",
        unit_stride=dict.fromkeys(names, True),
        align=dict.fromkeys(names, 16),
    )
    stages = {op.result.type.stages for op in kernel.walk() if isinstance(op, ir.SharedAlloc)}
    assert stages == {2}
    assert kernel.shared_bytes <= 228 * 1024 - 1024
    (release,) = of(the_loop(kernel).body, ir.WgmmaWait)
    assert release.pending == 0


def test_attention_waits_in_each_iteration_over_a_ring_with_no_lag(tmp_path):
    """D128 with 128-key blocks: a K and a V stage are 64 KiB, so each ring has two stages
    and hands a stage back in the iteration that read it. The PV product may not stay in
    flight past that hand-back (its V stage is refilled by TMA), so both waits are within
    the iteration, and the executed kernel matches the interpreter."""
    text = (EXAMPLES / "attention.ph").read_text(encoding="utf-8")
    space = "D in {64, 128, 16, 32}, BLOCK_M in {64, 128}, BLOCK_N in {64, 32}"
    assert text.count(space) == 1
    wide = tmp_path / "attention.ph"
    wide.write_text(text.replace(space, "D in {128}, BLOCK_M in {128}, BLOCK_N in {128}"))
    module = parse_file(wide)
    values = {"D": 128, "BLOCK_M": 128, "BLOCK_N": 128, "NUM_THREADS": 256, "CAUSAL": 0}
    kernel_name = "attention_forward"
    tile_ir = lower(module, kernel_name, variant_values(module, [kernel_name], values)[kernel_name])
    names = [p.name for p in tile_ir.params]
    options = {
        key: dict.fromkeys(names, value)
        for key, value in [("unit_stride", True), ("align", 16), ("row_align", 16)]
    }
    kernel = build(tile_ir, arch="sm_90a", **options)
    rings = [op for op in kernel.walk() if isinstance(op, ir.SharedAlloc) and op.lag is not None]
    assert [(op.result.type.stages, op.lag) for op in rings] == [(2, 0), (2, 0)]
    (loop,) = [op for op in kernel.walk() if isinstance(op, ir.For) and of(op.body, ir.Wgmma)]
    waits = of(loop.body, ir.WgmmaWait)
    assert [(w.pending, bool(w.results)) for w in waits] == [(0, True), (0, True)]
    carried = loop.body.ops[-1].operands
    assert any(operand is wait.result for wait in waits for operand in carried)

    rng = np.random.default_rng(0)
    s, d = 384, 128
    q, k, v = (rng.standard_normal((1, s, d)).astype(np.float16) for _ in range(3))
    args = [q, k, v, np.zeros((1, s, d), np.float16), np.zeros((1, s), np.float32), 0.1]
    grid = (s // 128, 1, 1)
    expected = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    run(tile_ir, grid, expected)
    execute(kernel, grid, args)
    np.testing.assert_allclose(
        args[3].astype(np.float32), expected[3].astype(np.float32), rtol=2e-3, atol=2e-3
    )
    np.testing.assert_allclose(args[4], expected[4], rtol=1e-5, atol=1e-5)
