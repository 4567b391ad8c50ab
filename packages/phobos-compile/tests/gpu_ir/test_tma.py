"""TMA copies of a pipelined loop's windows (``gpu/tma.py``, ``passes/pipeline.py``).

Where the specialisation puts a tensor's base and rows on 16 bytes with a unit last
stride, on sm_90 and later, every ring of a loop is filled by TMA: two mbarriers a stage
(initialised before the loop): a full one, one arrival per copy a phase, and an empty
one, an arrival per thread.  Each iteration's refill is issued by one thread once every
thread handed the stage back (its empty mbarrier's phase, whose parity the loop
carries), then the iteration waits for its own stage's full phase (its parity carried
too), and at its end every thread hands back the stage it is done with: no CTA-wide
barrier in the loop.  The executor runs that against the interpreter and fails a read
before the copy landed, a refill before the stage was handed back, a phase that never
completes, and an mbarrier used before its initialisation.
"""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.gpu import ir
from phobos.compile.gpu.executor import ExecutionError, execute
from phobos.compile.gpu.pipeline import build
from phobos.compile.pipeline import parse_file, variant_values

from .test_mma_waits import (
    EXAMPLES,
    MATMUL,
    gpu_ir,
    matmul_args,
    matmul_reference,
    of,
    the_loop,
)

ROWS = {"a": 16, "b": 16, "c": 16}


def tma_matmul(**options) -> ir.Kernel:
    """Tutorial 03's kernel with TMA rings, before warp specialisation splits it
    (``test_warp_specialize.py`` takes it from there)."""
    return gpu_ir(
        "matmul.ph", "matmul", MATMUL, row_align=ROWS, **{"stop_after": "barriers", **options}
    )


def copies(kernel: ir.Kernel, kind: type) -> list:
    return [op for op in kernel.walk() if isinstance(op, kind)]


def test_the_k_loop_is_filled_by_tma_with_an_mbarrier_a_stage():
    kernel = tma_matmul()
    loop = the_loop(kernel)
    full, empty = copies(kernel, ir.MbarrierAlloc)
    inits = copies(kernel, ir.MbarrierInit)
    rings = [op for op in kernel.walk() if isinstance(op, ir.SharedAlloc) and op.lag]
    (stages,) = {ring.result.type.stages for ring in rings}
    assert full.result.type == empty.result.type == ir.Mbarriers(stages)
    assert [(i.operands[0], i.arrivals) for i in inits] == [
        (full.result, 2),  # a and b
        (empty.result, kernel.threads // 32),  # a warp arrives once
    ]
    assert copies(kernel, ir.CopyAsync) == [] and copies(kernel, ir.AsyncWait) == []
    boxes = {(op.tensor, op.box) for op in copies(kernel, ir.CopyTma)}
    assert boxes == {("a", (128, 64)), ("b", (64, 64))}
    # In the body: no barrier; the refill (one thread waits for the stage to be handed
    # back), the wait for this iteration's stage, and at the end the hand-back of the
    # stage the product in flight read, after the wait that completes it.
    assert of(loop.body, ir.Barrier) == []
    refill, wait = [op for op in loop.body.ops if isinstance(op, (ir.If, ir.MbarrierWait))][:2]
    stage, phase, refill_phase = loop.body.args[-3:]
    assert wait.operands == [full.result, stage, phase] and not wait.single
    handed = refill.regions[0].ops[0]
    assert isinstance(handed, ir.MbarrierWait) and handed.single
    assert handed.operands[0] is empty.result and handed.operands[2] is refill_phase
    release, hand_back = loop.body.ops[-3:-1]
    assert isinstance(release, ir.WgmmaWait) and release.pending == 1
    (arrive,) = of(hand_back.regions[0], ir.MbarrierArrive)
    assert arrive.operands[0] is empty.result


SHAPES = [(200, 136, 304), (128, 128, 64), (64, 64, 0), (72, 200, 1000)]


def assert_matmul_matches_the_interpreter(kernel: ir.Kernel, shape) -> None:
    """Tutorial 03's 128 x 128 variant run by the executor at ``shape`` (M, N, K)."""
    m, n, k = shape
    args = matmul_args(m, n, k)
    blocks = ((m + 127) // 128) * ((n + 127) // 128)
    expected = matmul_reference(args, blocks)
    execute(kernel, (blocks, 1, 1), args)
    np.testing.assert_allclose(
        args[2].astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=2e-3
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_the_tma_k_loop_matches_the_interpreter(shape):
    assert_matmul_matches_the_interpreter(tma_matmul(), shape)


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"row_align": {"a": 8, "b": 16, "c": 16}}, "a's rows are not known on 16 bytes"),
        ({"index_width": 64}, "64-bit variants"),
    ],
)
def test_a_loop_copies_by_tma_only_where_every_ring_may(options, why):
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL, **{"row_align": ROWS, **options})
    assert copies(kernel, ir.CopyTma) == [], why
    assert copies(kernel, ir.CopyAsync) and copies(kernel, ir.MbarrierAlloc) == []


def test_sm_80_has_no_tma():
    module = parse_file(EXAMPLES / "matmul.ph")
    tile_ir = lower(module, "matmul", variant_values(module, ["matmul"], MATMUL)["matmul"])
    names = [p.name for p in tile_ir.params]
    facts = {"unit_stride": dict.fromkeys(names, True), "align": dict.fromkeys(names, 16)}
    sm80 = build(tile_ir, arch="sm_80", row_align=ROWS, **facts)
    assert copies(sm80, ir.CopyTma) == [] and copies(sm80, ir.CopyAsync)


def test_a_read_before_the_wait_is_an_error():
    kernel = tma_matmul()
    body = the_loop(kernel).body
    body.ops = [op for op in body.ops if not isinstance(op, ir.MbarrierWait)]
    with pytest.raises(ExecutionError, match="before its asynchronous copy landed"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 256))


def test_a_parity_that_never_flips_reads_a_stage_before_it_landed():
    """Once the ring wraps, a wait for the old parity returns at once: the hardware would
    read the stage while its next copy is in flight."""
    kernel = tma_matmul()
    loop = the_loop(kernel)
    loop.body.ops[-1].operands[-2] = loop.body.args[-2]  # the parity yielded unchanged
    with pytest.raises(ExecutionError, match="wgmma reads shared memory before its asynchronous"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


def test_a_refill_parity_that_never_flips_is_a_deadlock():
    """The second round's refill would wait for a hand-back phase no thread arrives on."""
    kernel = tma_matmul()
    loop = the_loop(kernel)
    loop.body.ops[-1].operands[-1] = loop.body.args[-1]
    with pytest.raises(ExecutionError, match=r"waits for phase 1 of stage \d, which has 0 of"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


def test_a_phase_with_an_arrival_missing_is_a_deadlock():
    """Without b's copies each phase has one of the two arrivals its mbarrier counts: the
    wait would never return."""
    kernel = tma_matmul()
    for op in kernel.walk():
        for region in op.regions:
            region.ops = [
                o for o in region.ops if not (isinstance(o, ir.CopyTma) and o.tensor == "b")
            ]
    with pytest.raises(ExecutionError, match=r"waits for phase 0 of stage 0, which has 1 of its 2"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 256))


def test_a_stage_never_handed_back_is_a_deadlock():
    kernel = tma_matmul()
    for op in kernel.walk():
        for region in op.regions:
            region.ops = [o for o in region.ops if not isinstance(o, ir.MbarrierArrive)]
    with pytest.raises(ExecutionError, match=r"waits for phase 0 of stage \d, which has 0 of its"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


def test_a_refill_before_the_stage_is_handed_back_is_a_race():
    """On the GPU the issuing thread runs ahead of the others: without the wait it would
    overwrite a stage another warpgroup's product may still read."""
    kernel = tma_matmul()
    for op in kernel.walk():
        for region in op.regions:
            region.ops = [
                o for o in region.ops if not (isinstance(o, ir.MbarrierWait) and o.single)
            ]
    with pytest.raises(ExecutionError, match="copy_tma overwrites shared memory another thread"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


def test_a_hand_back_before_the_product_completes_is_an_error():
    """The stage a product in flight reads is handed back only after the wait that
    completes it: handed back before, its refill would overwrite it under the product."""
    kernel = tma_matmul()
    body = the_loop(kernel).body
    release = next(op for op in body.ops if isinstance(op, ir.WgmmaWait) and not op.results)
    body.ops.remove(release)
    body.ops.insert(len(body.ops) - 1, release)  # after the hand-back
    with pytest.raises(
        ExecutionError, match="copy_tma overwrites shared memory another thread read"
    ):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


def test_an_mbarrier_used_before_its_initialisation_is_an_error():
    kernel = tma_matmul()
    init = copies(kernel, ir.MbarrierInit)[0]
    kernel.body.ops.remove(init)
    with pytest.raises(ExecutionError, match="uses an mbarrier before it is initialised"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 256))
