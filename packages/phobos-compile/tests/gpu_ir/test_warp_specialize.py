"""Warp specialisation (``passes/warp_specialize.py``): a producer warpgroup refills the TMA
rings, the kernel's threads compute.

On sm_90a a kernel whose one pipelined loop goes by TMA splits after one barrier: one
thread of a warpgroup launched after the kernel's threads issues the copies (those
before the loop, then each refill after its stage's empty mbarrier), the consumers run
the loop without them and hand each stage back.  The executor runs the two partitions
at once (the producer as far ahead as it may) against the interpreter, and fails a
producer that refills before a stage is handed back, consumers that never hand it back
(a deadlock), and a read before the copy landed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.gpu import generate, ir
from phobos.compile.gpu.executor import ExecutionError, execute
from phobos.compile.gpu.pipeline import build
from phobos.compile.interp import run
from phobos.compile.pipeline import parse_file, variant_values
from phobos.compile.specialization import Specialization, TensorSpecialization
from phobos.compile.syntax import parse

from .test_mma_waits import (
    ATTENTION,
    EXAMPLES,
    MATMUL,
    gpu_ir,
    matmul_args,
)
from .test_tma import ROWS, SHAPES, assert_matmul_matches_the_interpreter


def specialized_matmul() -> ir.Kernel:
    return gpu_ir("matmul.ph", "matmul", MATMUL, row_align=ROWS)


def split_of(kernel: ir.Kernel) -> ir.Specialize:
    (split,) = [op for op in kernel.walk() if isinstance(op, ir.Specialize)]
    return split


def loops(block: ir.Block) -> list[ir.For]:
    return [op for op in block.walk() if isinstance(op, ir.For)]


def test_the_copies_go_to_a_producer_warpgroup():
    kernel = specialized_matmul()
    split = split_of(kernel)
    assert kernel.body.ops[-1] is split and kernel.producer_threads == 128
    assert kernel.cta_threads == kernel.threads + 128
    # Before the split: declarations, the refills' uniform values, the mbarriers' initialisation
    # and one barrier of every thread.
    before = kernel.body.ops[:-1]
    assert isinstance(before[-1], ir.Barrier) and before[-1].threads is None
    assert [type(op) for op in before if isinstance(op, ir.MbarrierInit)] == [ir.MbarrierInit] * 2
    assert all(not isinstance(v.type, ir.Tile) for op in before for v in op.results)
    # The producer: every copy, each its own (one thread runs the region), no product.
    producer = list(split.producer.walk())
    copies = [op for op in producer if isinstance(op, ir.CopyTma)]
    assert copies and not any(op.single for op in copies)
    waits = [op for op in producer if isinstance(op, ir.MbarrierWait)]
    assert len(waits) == 1 and not waits[0].single and waits[0].operands[0].name == "empty"
    assert not [op for op in producer if isinstance(op, (ir.Wgmma, ir.Store, ir.Barrier))]
    (refill_loop,) = loops(split.producer)
    assert all(isinstance(a.type, ir.Uniform) for a in refill_loop.body.args)
    # The consumers: no copy; their barriers name them; each stage handed back.
    consumer = list(split.consumer.walk())
    assert not [op for op in consumer if isinstance(op, ir.CopyTma)]
    assert all(op.threads == kernel.threads for op in consumer if isinstance(op, ir.Barrier))
    assert [op for op in consumer if isinstance(op, ir.MbarrierArrive)]
    assert split.consumer_registers == 232 and split.producer_registers == 40


@pytest.mark.parametrize("shape", SHAPES)
def test_the_specialized_k_loop_matches_the_interpreter(shape):
    assert_matmul_matches_the_interpreter(specialized_matmul(), shape)


def _attention_case(name: str, causal: int, seed: int = 0):
    module = parse_file(EXAMPLES / "attention.ph")
    values = {**ATTENTION, "D": 128, "CAUSAL": causal}  # alone on its SM at D 128
    if name != "attention_forward":
        values = {"D": 64, "BLOCK_M": 64, "BLOCK_N": 64, "NUM_THREADS": 256, "CAUSAL": causal}
    tile_ir = lower(module, name, variant_values(module, [name], values)[name])
    rng = np.random.default_rng(seed)
    bh, s, d = 2, 200, values["D"]
    q, k, v, do = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
    if name == "attention_forward":
        scale = np.float32(1 / math.sqrt(d))
        args = [q, k, v, np.zeros_like(q), np.zeros((bh, s), np.float32), scale]
        block = values["BLOCK_M"]
    else:
        lse = rng.standard_normal((bh, s)).astype(np.float32)
        delta = rng.standard_normal((bh, s)).astype(np.float32)
        outs = [np.zeros_like(q)] * (2 if name.endswith("dkdv") else 1)
        args = [q, k, v, do, lse, delta, *[o.copy() for o in outs], np.float32(0.125)]
        block = 64
    return module, tile_ir, args, (math.ceil(s / block), bh)


@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize(
    "name", ["attention_forward", "attention_backward_dkdv", "attention_backward_dq"]
)
def test_specialized_attention_matches_the_interpreter(name, causal):
    _, tile_ir, args, grid = _attention_case(name, causal)
    names = [p.name for p in tile_ir.params]
    kernel = build(
        tile_ir,
        arch="sm_90a",
        unit_stride=dict.fromkeys(names, True),
        align=dict.fromkeys(names, 16),
        row_align=dict.fromkeys(names, 16),
    )
    split_of(kernel)  # the KV loop's rings go by TMA, so the CTA splits
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run(tile_ir, grid, expected)
    execute(kernel, grid, args)
    for want, got in zip(expected, args):
        if isinstance(want, np.ndarray):
            np.testing.assert_allclose(
                got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2
            )


def _without(kernel: ir.Kernel, drop) -> ir.Kernel:
    for op in kernel.walk():
        for region in op.regions:
            region.ops = [o for o in region.ops if not drop(o)]
    return kernel


def test_consumers_that_never_hand_a_stage_back_deadlock_the_producer():
    kernel = _without(specialized_matmul(), lambda o: isinstance(o, ir.MbarrierArrive))
    with pytest.raises(ExecutionError, match=r"a deadlock: the producer at .* waits for phase 0"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


def test_a_producer_that_does_not_wait_for_the_hand_back_overwrites_a_stage_in_use():
    kernel = _without(
        specialized_matmul(),
        lambda o: isinstance(o, ir.MbarrierWait) and o.operands[0].name == "empty",
    )
    with pytest.raises(ExecutionError, match="copy_tma writes shared memory that an asynchronous"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


def test_consumers_that_do_not_wait_for_the_copy_read_it_before_it_landed():
    kernel = _without(
        specialized_matmul(),
        lambda o: isinstance(o, ir.MbarrierWait) and o.operands[0].name == "full",
    )
    with pytest.raises(ExecutionError, match="before its asynchronous copy landed"):
        execute(kernel, (1, 1, 1), matmul_args(128, 128, 64 * 8))


CHOICE = """
@autotune(BM in {128}, BN in {128}, BK in {64}, NUM_THREADS in {256}, WARP_SPECIALIZE in {0, 1})
kernel matmul(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N]) {
    let m = ctx.block.x * BM
    let n = ctx.block.y * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    c[m :+ BM, n :+ BN] = f16(acc)
}
"""


@pytest.mark.parametrize(("arch", "split"), [("sm_90a", 1), ("sm_90", 0)])
@pytest.mark.parametrize("choice", [0, 1])
def test_a_variant_may_keep_one_partition(arch, split, choice):
    """``WARP_SPECIALIZE`` in a space is the tuner's choice; sm_90 has no ``setmaxnreg``."""
    module = parse(CHOICE, "choice.ph")
    values = {"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256, "WARP_SPECIALIZE": choice}
    tile_ir = lower(module, "matmul", values)
    facts = TensorSpecialization(16, True, 16)
    generated = generate(tile_ir, Specialization.of(32, a=facts, b=facts, c=facts), arch)
    splits = [op for op in generated.gpu_ir.walk() if isinstance(op, ir.Specialize)]
    assert len(splits) == split * choice
    assert generated.contract.block == (256 + 128 * split * choice, 1, 1)
    if split * choice:
        assert "phobos::registers_up<232>()" in generated.source
        assert "__launch_bounds__(384, 1)" in generated.source


def test_without_tma_the_cta_stays_whole():
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL, row_align={"a": 8, "b": 16, "c": 16})
    assert not [op for op in kernel.walk() if isinstance(op, ir.Specialize)]
    assert kernel.producer_threads == 0


def test_a_cta_two_of_which_share_an_sm_stays_whole():
    """At D 64 the forward's shared memory lets two CTAs share an SM; split, one would take
    the SM's registers (probe 34: 222 TFLOP/s whole, 162 split)."""
    rows = dict.fromkeys(("q", "k", "v", "o", "lse"), 16)
    kernel = gpu_ir("attention.ph", "attention_forward", ATTENTION, row_align=rows)
    assert [op for op in kernel.walk() if isinstance(op, ir.CopyTma)]
    assert not [op for op in kernel.walk() if isinstance(op, ir.Specialize)]
    assert 2 * kernel.shared_bytes <= 232448
