"""Each pass, on small kernels written here (or the examples'), its IR asserted structurally.

The kernels run through ``pipeline.py``'s passes up to the one under test
(``conftest.build_until``); the assertions read the IR as ``--emit gpuir`` prints it
(``printer.format_kernel``) or walk its ops.  Where a structural fact is also a claim
about the answer, the IR also runs in the executor against the interpreter.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from phobos.compile.diagnostics import PhobosError
from phobos.compile.gpu import executor as gpu_executor
from phobos.compile.gpu import ir, layouts
from phobos.compile.gpu.printer import format_kernel, format_op
from phobos.compile.interp import run as interpret
from phobos.compile.pipeline import parse_file

from .conftest import (
    build_text,
    build_until,
    execute,
    loop,
    lower_text,
    names,
    only,
    ops,
    top_ops,
)
from .test_executor_matches_interpreter import EXAMPLES

EXAMPLE = {p.name: p.read_text() for p in EXAMPLES}
SOFTMAX, ATTENTION, MATMUL = EXAMPLE["softmax.ph"], EXAMPLE["attention.ph"], EXAMPLE["matmul.ph"]
LAYER_NORM, SAXPY = EXAMPLE["layer_norm.ph"], EXAMPLE["saxpy_fp32.ph"]
FORWARD = {"D": 64, "BLOCK_M": 128, "BLOCK_N": 64, "NUM_THREADS": 256, "CAUSAL": 0}
MATMUL_TILE = {"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8, "NUM_THREADS": 128, "ACTIVATION": 0}


def definition(kernel: ir.Kernel, value: ir.Value) -> ir.Op:
    return ir.definitions(kernel)[value]


def through(kernel: ir.Kernel, value: ir.Value, kinds: tuple[type, ...]) -> ir.Value:
    """Follow ``value`` back through ops of ``kinds`` (a select's value if true, another
    op's first operand)."""
    defs = ir.definitions(kernel)
    while value in defs and isinstance(defs[value], kinds):
        op = defs[value]
        value = op.operands[1] if isinstance(op, ir.Select) else op.operands[0]
    return value


# ---------------------------------------------------------------------------- lowering


ROW_MAX = """
kernel row_max(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    let row = ctx.block.x
    out[row] = max(x[row, 0 :+ 128])
}
"""


def test_lowering_makes_absent_lanes_explicit():
    """No layouts yet; the reduction over a window that may hang past N gets its mask (a
    max's identity is not a load's zero), and the store of one element is a point."""
    gpu = build_until(lower_text(ROW_MAX, "row_max"))
    assert all(
        v.type.layout is None
        for op in gpu.walk()
        for v in op.results
        if isinstance(v.type, ir.Tile)
    )
    reduce = only(ops(gpu, ir.Reduce))
    assert reduce.masked and reduce.op == "max"
    mask = definition(gpu, reduce.operands[1])
    assert isinstance(mask, ir.Binary) and mask.op == "lt"  # start + c < N, unsigned
    load = only(ops(gpu, ir.Load))
    assert load.lengths == (None, 128) and load.checked
    assert only(ops(gpu, (ir.Store, ir.StoreUniform))).NAME == "store_uniform"


def test_a_sum_over_a_loads_zeros_needs_no_mask():
    """Absent lanes of a load hold zero, the identity of a sum: no select, no mask."""
    gpu = build_until(lower_text(ROW_MAX.replace("= max(", "= sum("), "row_max"))
    reduce = only(ops(gpu, ir.Reduce))
    assert not reduce.masked and not ops(gpu, ir.Select)


# ---------------------------------------------------------------------------- dead code


def carried(loop_op: ir.For) -> int:
    """The loop's carried values, checked consistent across operands, args, yield, results."""
    count = len(loop_op.results)
    assert len(loop_op.inits) == count
    assert len(loop_op.body.args) == count + 1
    assert len(loop_op.body.ops[-1].operands) == count
    return count


def test_dead_code_removes_unused_loop_carried_presence_flags():
    """matmul's k-loop carries acc and three presence flags after lowering; two are never
    read, and go with their operands, arguments and yields."""
    tile = lower_text(MATMUL, "matmul", **MATMUL_TILE)
    lowered = build_until(tile)
    flags = [a.name for a in loop(lowered).body.args[1:] if a.type == ir.Uniform("bool")]
    assert carried(loop(lowered)) == 4 and len(flags) == 3
    clean = build_until(tile, "eliminate_dead_code")
    assert carried(loop(clean)) == 2
    kept = [a.name for a in loop(clean).body.args[1:]]
    assert kept == ["acc", "acc_some"]
    # Nothing else but dead values went: the stores and the loop stay.
    assert len(ops(clean, ir.Store)) == len(ops(lowered, ir.Store)) == 1


def test_dead_code_removes_a_loop_with_no_effect():
    text = """
kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {
    var s = zeros<f32>[64]
    for i in 0 .. 4 {
        s += x[i * 64 :+ 64]
    }
    out[0 :+ 64] = x[0 :+ 64]
}
"""
    tile = lower_text(text, "k")
    assert len(ops(build_until(tile), ir.For)) == 1
    assert not ops(build_until(tile, "eliminate_dead_code"), ir.For)


# ---------------------------------------------------------------------------- sink_loads


def test_sink_loads_moves_a_weight_load_into_the_loop():
    """layer_norm_backward_dx's ``f32(w[...])`` before the row loop is loaded in each
    iteration instead of held across it."""
    tile = lower_text(LAYER_NORM, "layer_norm_backward_dx", ROWS=4, BLOCK_N=1024)
    before = build_until(tile, "eliminate_dead_code")
    assert [op.tensor for op in top_ops(before.body, ir.Load)] == ["w"]
    after = build_until(tile, "eliminate_dead_code", occurrence=2)
    assert not top_ops(after.body, ir.Load)
    body = loop(after).body
    weight = [op for op in top_ops(body, ir.Load) if op.tensor == "w"]
    assert len(weight) == 1 and weight[0].reloaded
    assert body.ops.index(weight[0]) < 2  # at the top of the body, with its cast
    cast = [op for op in top_ops(body, ir.Cast) if op.operands[0] is weight[0].result]
    assert len(cast) == 1


def test_sink_loads_leaves_a_dot_operand_and_a_written_tensor_alone():
    """attention's q feeds a dot (staged once instead); a tensor the kernel writes may
    change between iterations."""
    tile = lower_text(ATTENTION, "attention_forward", **FORWARD)
    after = build_until(tile, "sink_loads")
    assert [op.tensor for op in top_ops(after.body, ir.Load)] == ["q"]
    text = """
kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let first = x[0 :+ 64]
    for i in 1 .. 4 {
        x[i * 64 :+ 64] = first
    }
}
"""
    after = build_until(lower_text(text, "k"), "sink_loads")
    assert [op.tensor for op in top_ops(after.body, ir.Load)] == ["x"]


# ---------------------------------------------------------------------------- choose_cta


@pytest.mark.parametrize(
    ("block_n", "threads", "min_ctas"), [(1024, 64, None), (4096, 256, 2), (16384, 256, 2)]
)
def test_a_row_kernel_gets_16_lanes_a_thread_up_to_8_warps(block_n, threads, min_ctas):
    gpu = build_until(lower_text(SOFTMAX, "softmax", ROWS=1, BLOCK_N=block_n), "choose_cta")
    assert (gpu.threads, gpu.min_ctas) == (threads, min_ctas)


@pytest.mark.parametrize(("block_n", "threads"), [(1024, 128), (4096, 256), (256, 32)])
def test_a_loop_that_carries_tiles_gets_one_vector_a_thread_up_to_8_warps(block_n, threads):
    """Layer norm backward sums its rows one after another: its CTA takes one 16-byte
    vector of a row a thread (8 f16), where the forward, which carries nothing, takes 16."""
    values = {"ROWS": 8, "BLOCK_N": block_n}
    gpu = build_until(lower_text(LAYER_NORM, "layer_norm_backward_dx", **values), "choose_cta")
    assert gpu.threads == threads
    forward = lower_text(LAYER_NORM, "layer_norm_forward", BLOCK_N=block_n)
    assert build_until(forward, "choose_cta").threads == max(32, min(256, block_n // 16))


def test_num_threads_fixes_the_cta():
    for threads in (128, 256):
        values = {**MATMUL_TILE, "NUM_THREADS": threads}
        assert build_until(lower_text(MATMUL, "matmul", **values), "choose_cta").threads == threads


def test_a_dot_result_a_thread_cannot_hold_is_refused_as_a_limit():
    """128 x 256 f32 on 128 threads is 256 registers a thread: pruned, never compiled."""
    values = {**MATMUL_TILE, "BM": 128, "BN": 256, "NUM_THREADS": 128}
    with pytest.raises(PhobosError) as caught:
        build_until(lower_text(MATMUL, "matmul", **values), "choose_cta")
    assert caught.value.only_limits
    assert "needs 256 registers a thread on 128 threads" in caught.value.message
    assert caught.value.span.line > 0  # at the dot
    values["NUM_THREADS"] = 256
    assert build_until(lower_text(MATMUL, "matmul", **values), "choose_cta").threads == 256


# ---------------------------------------------------------------------------- select_mma


@pytest.mark.parametrize(
    ("arch", "kind"), [("sm_90a", ir.Wgmma), ("sm_90", ir.MmaSync), ("sm_80", ir.MmaSync)]
)
def test_instruction_selection_by_arch(arch, kind):
    gpu = build_until(lower_text(MATMUL, "matmul", **MATMUL_TILE), "select_mma", arch=arch)
    assert not ops(gpu, ir.Dot)
    product = only(ops(gpu, (ir.Wgmma, ir.MmaSync, ir.DotShared)))
    assert isinstance(product, kind)
    if kind is ir.Wgmma:
        assert product.a_major == "k" and product.b_major == "mn"
        assert only(ops(gpu, ir.WgmmaWait)).operands[0] is product.result
    else:
        loads = [op for op in ops(gpu, ir.SharedLoad) if op.via == "ldmatrix"]
        assert sorted(op.fragment for op in loads) == ["a", "b"]


def test_a_product_of_f32_tiles_runs_on_the_cuda_cores():
    text = """
kernel k(a: tensor<f32>[M, K], b: tensor<f32>[K, N], c: tensor<f32>[M, N]) {
    c[0 :+ 16, 0 :+ 16] = dot(a[0 :+ 16, 0 :+ 16], b[0 :+ 16, 0 :+ 16])
}
"""
    gpu = build_text(text, "k", "select_mma")
    product = only(ops(gpu, (ir.Wgmma, ir.MmaSync, ir.DotShared)))
    assert isinstance(product, ir.DotShared)
    assert all(op.result.type.layout.kind == "rows" for op in ops(gpu, ir.SharedAlloc))


def test_instruction_selection_stages_q_once_before_the_kv_loop():
    tile = lower_text(ATTENTION, "attention_forward", **FORWARD)
    gpu = build_until(tile, "select_mma")
    kv = loop(gpu)
    staged = [op for op in ops(gpu, ir.CopyAsync) if op.tensor == "q"]
    assert len(staged) == 1 and staged[0] in gpu.body.ops
    assert gpu.body.ops.index(staged[0]) < gpu.body.ops.index(kv)
    assert not [op for op in kv.body.walk() if getattr(op, "tensor", None) == "q"]
    first = ops(kv.body, ir.Wgmma)[0]
    assert first.operands[0] is staged[0].operands[0]  # the loop's product reads that buffer
    # k and v are copied in every iteration, where they are loaded.
    assert sorted(op.tensor for op in ops(kv.body, ir.CopyAsync)) == ["k", "v"]


def test_unspecialised_operands_are_stored_from_registers():
    """Without unit stride and 16-byte alignment, no cp.async: a register load and a store
    to shared memory, still once before the loop for q."""
    tile = lower_text(ATTENTION, "attention_forward", **FORWARD)
    gpu = build_until(tile, "select_mma", specialised=False)
    assert not ops(gpu, ir.CopyAsync)
    q = only([op for op in top_ops(gpu.body, ir.Load) if op.tensor == "q"])
    stores = [op for op in top_ops(gpu.body, ir.SharedStore) if op.operands[1] is q.result]
    assert len(stores) == 1


TWO_PRODUCTS = """
kernel two(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N], d: tensor<f32>[M, N]) {
    let x = a[0 :+ 64, 0 :+ 32]
    c[0 :+ 64, 0 :+ 64] = dot(x, b[0 :+ 32, 0 :+ 64])
    d[0 :+ 64, 0 :+ 64] = dot(x, b[32 :+ 32, 0 :+ 64])
}
"""


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_two_products_of_one_value_share_its_buffer(arch):
    gpu = build_text(TWO_PRODUCTS, "two", "select_mma", arch=arch, NUM_THREADS=128)
    assert sorted(op.tensor for op in ops(gpu, ir.CopyAsync)) == ["a", "b", "b"]
    (a_copy,) = [op for op in ops(gpu, ir.CopyAsync) if op.tensor == "a"]
    buffer = a_copy.operands[0]
    if arch == "sm_90a":
        assert [op.operands[0] for op in ops(gpu, ir.Wgmma)] == [buffer, buffer]
    else:
        fragments = [op for op in ops(gpu, ir.SharedLoad) if op.fragment == "a"]
        assert [op.operands[0] for op in fragments] == [buffer, buffer]


@pytest.mark.parametrize(("threads", "widths"), [(256, [64, 128]), (128, [128])])
def test_a_value_two_instructions_read_is_staged_once_per_shared_layout(threads, widths):
    """dkdv at D = 64 on sm_90a: q and do each feed two wgmmas, once as a K-major ``a``
    or ``b`` (128-byte swizzle atoms) and once as an MN-major ``b``.  On 256 threads two
    warpgroups split that product's 64 columns, and an MN-major ``b`` takes atoms no wider
    than a warpgroup's columns (32 columns, 64 bytes: ``select_mma.b_layout``), so each is
    copied twice an iteration, once per layout; on 128 threads both layouts are one, and
    so is the copy."""
    values = {"D": 64, "BLOCK_M": 64, "BLOCK_N": 64, "NUM_THREADS": threads, "CAUSAL": 0}
    gpu = build_until(lower_text(ATTENTION, "attention_backward_dkdv", **values), "select_mma")
    assert len(ops(gpu, ir.Wgmma)) == 4 and not ops(gpu, ir.MmaSync)
    for tensor in ("q", "do"):
        copies = [op for op in ops(loop(gpu).body, ir.CopyAsync) if op.tensor == tensor]
        layouts_ = [op.operands[0].type.layout for op in copies]
        assert all(layout.kind == "swizzled" for layout in layouts_), tensor
        assert sorted(layout.width for layout in layouts_) == widths, tensor
        read = {v for op in ops(gpu, ir.Wgmma) for v in op.operands[:2]}
        assert {op.operands[0] for op in copies} <= read, tensor


# ---------------------------------------------------------------------------- assign_layouts


def test_attention_p_is_in_the_accumulator_layout_and_feeds_wgmma_without_a_convert():
    tile = lower_text(ATTENTION, "attention_forward", **FORWARD)
    gpu = build_until(tile, "assign_layouts")
    assert not ops(gpu, ir.Convert)
    scores_mma, pv_mma = ops(gpu, ir.Wgmma)
    accumulator = layouts.wgmma_accumulator((128, 64), 2)
    assert scores_mma.result.tile.layout == accumulator
    # The register A operand of p @ v: f16(p), with the absent keys' lanes zeroed.
    a = pv_mma.operands[0]
    assert isinstance(a.type, ir.Tile) and a.dtype == "f16"
    assert a.tile.layout == accumulator  # wgmma_a((128, 64), 2) is this very map
    assert np.array_equal(a.tile.layout.coords(), layouts.wgmma_a((128, 64), 2).coords())
    p = through(gpu, a, (ir.Select, ir.Cast))
    exp2 = definition(gpu, p)
    assert isinstance(exp2, ir.MathFn) and exp2.fn == "exp2"
    assert p.tile.layout == accumulator
    # ... and nothing moves it on the way: no exchange, no permute, after conversions.
    after = build_until(tile, "expand_conversions")
    assert not ops(after, (ir.Convert, ir.Permute))
    assert not [op for op in ops(after, ir.SharedStore) if op.operands[1].dtype == "f16"]


def test_the_row_statistics_take_the_accumulators_rows():
    """row_max, row_sum (loop-carried) and the rescale are hinted the accumulator's
    sliced layout: broadcasting them back over the rows moves nothing."""
    gpu = build_until(lower_text(ATTENTION, "attention_forward", **FORWARD), "assign_layouts")
    rows = layouts.wgmma_accumulator((128, 64), 2).sliced(1)
    kv = loop(gpu)
    statistics = [a for a in kv.body.args if a.name in ("row_max", "row_sum")]
    assert len(statistics) == 2
    assert all(a.tile.layout == rows for a in statistics)


def test_every_tile_of_one_shape_shares_the_default_layout():
    gpu = build_until(lower_text(SOFTMAX, "softmax", ROWS=4, BLOCK_N=1024), "assign_layouts")
    tiles = {
        v.tile.layout
        for op in gpu.walk()
        for v in op.results
        if isinstance(v.type, ir.Tile) and v.tile.shape == (4, 1024)
    }
    assert tiles == {layouts.blocked((4, 1024), gpu.threads, 4)}
    assert not ops(gpu, ir.Convert)


# ---------------------------------------------------------------------------- reductions


ONE_ROW = """
kernel one_row(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    let row = ctx.block.x
    out[row] = sum(x[row, 0 :+ 4096])
}
"""


def test_a_row_reduction_is_registers_then_shuffles_then_one_smem_exchange():
    gpu = build_text(SOFTMAX, "softmax", "expand_reductions", ROWS=1, BLOCK_N=4096)
    assert not ops(gpu, ir.Reduce)
    sequence = [
        op.NAME
        for op in gpu.walk()
        if isinstance(
            op,
            (ir.ReduceRegisters, ir.ShuffleReduce, ir.SharedAlloc, ir.SharedStore, ir.SharedLoad),
        )
    ]
    one = ["reduce_registers", "shuffle_reduce", "smem_alloc", "smem_store", "smem_load"]
    assert sequence == [*one, "reduce_registers"] * 2  # max, then sum
    shuffle = ops(gpu, ir.ShuffleReduce)[0]
    assert shuffle.operands[0].tile.layout.axis_bits(1)[1] == [0, 1, 2, 3, 4]  # 5 lane bits


def test_a_reduction_whose_warps_hold_the_axis_gets_exactly_one_barrier():
    gpu = build_text(ONE_ROW, "one_row")
    assert gpu.threads == 256
    assert len(ops(gpu, ir.Barrier)) == 1
    store, barrier, load = ops(gpu, (ir.SharedStore, ir.Barrier, ir.SharedLoad))
    assert (store.NAME, barrier.NAME, load.NAME) == ("smem_store", "barrier", "smem_load")


def test_a_reduction_within_a_warp_needs_no_shared_memory():
    text = """
kernel rows(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    out[0 :+ 8] = sum(x[0 :+ 8, 0 :+ 32], axis=1)
}
"""
    gpu = build_text(text, "rows")
    assert gpu.threads == 32
    assert not ops(gpu, (ir.SharedAlloc, ir.Barrier)) and gpu.shared_bytes == 0
    assert [op.NAME for op in ops(gpu, (ir.ReduceRegisters, ir.ShuffleReduce))] == [
        "reduce_registers",
        "shuffle_reduce",
    ]


def test_an_f16_sum_accumulates_in_f32_and_rounds_once():
    text = """
kernel h(x: tensor<f16>[M, N], out: tensor<f16>[M]) {
    let row = ctx.block.x
    out[row] = sum(x[row, 0 :+ 1024])
}
"""
    gpu = build_text(text, "h")
    partial = ops(gpu, ir.ReduceRegisters)[0]
    assert partial.operands[0].dtype == "f32" and partial.result.dtype == "f32"
    assert isinstance(definition(gpu, partial.operands[0]), ir.Cast)
    # Many equal small terms: f16 running sums would stall at 2048 + ...; f32 does not.
    x = np.full((2, 1000), 3.0, np.float16)
    got, expected = np.zeros(2, np.float16), np.zeros(2, np.float16)
    execute(gpu, (2,), [x, got])
    interpret(lower_text(text, "h"), (2,), [x, expected])
    np.testing.assert_array_equal(got, expected)
    assert got[0] == np.float16(3000.0)


# ---------------------------------------------------------------------------- allocation


TWO = """
kernel two(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x
    let v = x[row, 0 :+ 4096]
    let a = sum(v)
    let b = max(v)
    out[row, 0 :+ 4096] = v * a + b
}
"""
THREE = TWO.replace("    let b = max(v)\n", "    let b = max(v)\n    let c = min(v)\n").replace(
    "v * a + b", "v * a + b - c"
)


def extent(op: ir.SharedAlloc) -> range:
    t = op.result.type
    return range(op.offset, op.offset + layouts.shared_bytes(t.layout, t.stages))


def test_allocation_keeps_two_successive_reductions_apart_so_each_needs_one_barrier():
    gpu = build_text(TWO, "two")
    first, second = ops(gpu, ir.SharedAlloc)
    assert not set(extent(first)) & set(extent(second))
    assert len(ops(gpu, ir.Barrier)) == 2
    # Placed together (the same bytes), the second's first write would need a barrier of
    # its own, before it: the barrier pass would say so.
    packed = build_text(TWO, "two", "vectorize")
    from phobos.compile.gpu.passes.barriers import insert_barriers

    for alloc in ops(packed, ir.SharedAlloc):
        alloc.offset = 0
    insert_barriers(packed)
    assert len(ops(packed, ir.Barrier)) == 3


def test_a_third_reduction_takes_the_first_ones_bytes_again():
    gpu = build_text(THREE, "two")
    first, second, third = ops(gpu, ir.SharedAlloc)
    assert extent(third) == extent(first) and not set(extent(second)) & set(extent(first))
    assert len(ops(gpu, ir.Barrier)) == 3
    assert gpu.shared_bytes == max(a.stop for a in map(extent, (first, second)))


def test_a_buffer_used_in_a_loop_lives_through_the_whole_loop():
    """attention's q, staged before the KV loop and read in every iteration, shares no byte
    with the other buffers the loop uses: k and v, which the pipeline makes rings allocated
    before the loop (``passes/pipeline.py``), and whatever the loop allocates; those are
    apart from each other where they are live together."""
    gpu = build_text(ATTENTION, "attention_forward", **FORWARD)
    body = loop(gpu).body
    used = {v for op in body.walk() for v in op.operands}
    live = [op for op in ops(gpu, ir.SharedAlloc) if op.result in used]
    named = {op.result.name: op for op in live}
    q, k, v = named["q_smem"], named["k_smem"], named["v_smem"]
    assert q in top_ops(gpu.body, ir.SharedAlloc) and q.result.type.stages == 1
    assert k.result.type.stages > 1 and v.result.type.stages > 1  # rings, before the loop
    inside = ops(body, ir.SharedAlloc)
    assert all(not set(extent(q)) & set(extent(op)) for op in live if op is not q)
    assert not set(extent(k)) & set(extent(v))  # v lands while k's product may still read
    assert all(not set(extent(op)) & set(extent(ring)) for op in inside for ring in (k, v))


def test_swizzled_buffers_are_aligned_for_their_pattern():
    gpu = build_text(MATMUL, "matmul", **MATMUL_TILE)
    swizzled = [op for op in ops(gpu, ir.SharedAlloc) if op.result.type.layout.kind == "swizzled"]
    assert len(swizzled) == 2
    assert all(op.offset % 1024 == 0 for op in swizzled)
    assert gpu.shared_align == 1024
    assert gpu.shared_bytes >= max(extent(op).stop for op in swizzled) + 1024 - 16


# ---------------------------------------------------------------------------- barriers


def test_the_online_softmax_loop_needs_one_barrier_per_reduction_and_none_to_go_round():
    gpu = build_text(SOFTMAX, "softmax_online", ROWS=1, BLOCK_N=4096)
    first, second = ops(gpu, ir.For)
    assert len(ops(first.body, ir.Barrier)) == 2
    assert not ops(second.body, ir.Barrier)
    assert len(ops(gpu, ir.Barrier)) == 2


def test_a_loop_that_rewrites_a_buffer_it_read_gets_a_barrier_before_the_rewrite():
    """The matmul k-loop stages a and b in rings (``passes/pipeline.py``): each iteration
    refills the stage the last one's product read, so the copies come after the one
    barrier of the iteration, which every warp passes only once its product read it.
    Each copy is two
    (``passes/interior.py``): untested inside the tensor, tested at an edge."""
    gpu = build_text(MATMUL, "matmul", arch="sm_80", **MATMUL_TILE)
    body = loop(gpu).body
    kinds = ("async_wait", "barrier", "copy_async", "async_commit", "smem_load", "mma_sync")
    sequence = [name for name in names(body) if name in kinds]
    assert sequence == [
        "async_wait",
        "barrier",
        "copy_async",
        "copy_async",
        "copy_async",
        "copy_async",
        "async_commit",
        "smem_load",
        "smem_load",
        "mma_sync",
    ]


# ---------------------------------------------------------------------------- conversions


def _convert_program(source: layouts.Layout, target: layouts.Layout) -> ir.Kernel:
    from .test_executor_hazards import kernel

    body = ir.Block()
    from phobos.compile.gpu.builder import Builder

    b = Builder(body)
    n = source.shape[0]
    x = b.value(ir.Coord(axis=0), ir.Tile("i32", (n,), source))
    y = ir.Convert(operands=[x])
    y.results = [ir.Value(ir.Tile("i32", (n,), target), "converted")]
    body.ops.append(y)
    b.add(ir.Store(tensor="out", lengths=(n,), operands=[b.constant(0, "i32"), y.result]))
    from phobos.compile.ir import nodes as tir

    return kernel(body, source.threads, tir.TensorParam("out", "i32", (n,)))


def _convert_and_run(source, target) -> tuple[ir.Kernel, np.ndarray]:
    from phobos.compile.gpu.passes.allocation import allocate_shared
    from phobos.compile.gpu.passes.barriers import insert_barriers
    from phobos.compile.gpu.passes.conversions import expand_conversions

    k = _convert_program(source, target)
    expand_conversions(k)
    allocate_shared(k)
    insert_barriers(k)
    out = np.full(source.shape[0], -1, np.int32)
    execute(k, (1,), [out])
    return k, out


ALL_EIGHT = layouts.Layout((8,), ((1,), (2,), (4,)), ((0,),) * 5, ())  # every thread all 8
REORDERED = layouts.Layout((8,), ((4,), (1,), (2,)), ((0,),) * 5, ())
HALVES = layouts.Layout((8,), ((1,), (2,)), ((4,), (0,), (0,), (0,), (0,)), ())  # lane bit 0: +4


def test_a_conversion_to_the_same_map_is_removed():
    k, out = _convert_and_run(ALL_EIGHT, ALL_EIGHT)
    assert not ops(k, (ir.Convert, ir.Permute, ir.SharedStore))
    np.testing.assert_array_equal(out, np.arange(8))


def test_a_conversion_within_each_thread_is_a_permute():
    k, out = _convert_and_run(ALL_EIGHT, REORDERED)
    assert only(ops(k, (ir.Convert, ir.Permute, ir.SharedStore))).NAME == "permute"
    np.testing.assert_array_equal(out, np.arange(8))


def test_a_conversion_between_threads_goes_through_shared_memory():
    source = layouts.blocked((32,), 32)
    target = layouts.Layout((32,), (), tuple((16 >> i,) for i in range(5)), ())
    k, out = _convert_and_run(source, target)
    assert [op.NAME for op in ops(k, (ir.SharedStore, ir.Barrier, ir.SharedLoad))] == [
        "smem_store",
        "barrier",
        "smem_load",
    ]
    np.testing.assert_array_equal(out, np.arange(32))


def test_a_permute_only_where_the_renaming_is_the_same_in_every_thread():
    """Every thread holds all 8 elements; the target gives lane-odd threads elements 4..7 in
    registers 0..3.  Thread 1's register 0 must become element 4, not element 0."""
    _, out = _convert_and_run(ALL_EIGHT, HALVES)
    np.testing.assert_array_equal(out, np.arange(8))


def test_the_online_softmax_of_8_rows_converts_its_row_maximum_right():
    """softmax_online ROWS=8, BLOCK_N=1024: the reduced row maximum (every thread holds all 8
    rows) is converted to the carried rows' layout (4 rows a thread, lane bit 0 the other
    4); a Permute by thread 0's renaming gave rows 4..7 rows 0..3's maximum, so the
    conversion goes through shared memory."""
    gpu = build_text(SOFTMAX, "softmax_online", ROWS=8, BLOCK_N=1024)
    x = np.random.default_rng(0).standard_normal((8, 1000)).astype(np.float32) * 3
    got = np.full_like(x, np.nan)
    execute(gpu, (1,), [x, got])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------- vectorize


def test_saxpy_moves_16_byte_vectors_with_no_run_time_alignment_test():
    gpu = build_text(SAXPY, "saxpy", BLOCK=4096)
    accesses = ops(gpu, (ir.Load, ir.Store))
    assert [(op.NAME, op.vector, op.aligned) for op in accesses] == [
        ("load", 4, True),
        ("load", 4, True),
        ("store", 4, True),
    ]


def test_without_the_specialisation_every_access_is_scalar():
    gpu = build_until(lower_text(SAXPY, "saxpy", BLOCK=4096), "all", specialised=False)
    assert all(op.vector == 1 and not op.aligned for op in ops(gpu, (ir.Load, ir.Store)))


def test_a_row_of_a_2d_tensor_keeps_its_run_time_alignment_test():
    """Another axis's stride could move a row off 16 bytes: vectors, but tested."""
    gpu = build_text(SOFTMAX, "softmax", ROWS=4, BLOCK_N=1024)
    assert all(op.vector == 4 and not op.aligned for op in ops(gpu, (ir.Load, ir.Store)))


class AlignmentChecking(gpu_executor.Executor):
    """The executor, checking what vectorize claims of each access as it runs: a vector
    access only where the last axis has unit stride, and ``aligned`` only where every
    vector's first element is on a multiple of the vector (in elements from the base)."""

    checked = 0

    def _claims(self, op, starts) -> None:
        storage = self.storage[op.tensor]
        strides = [s // storage.itemsize for s in storage.strides]
        if op.vector > 1:
            assert self.kernel.unit_stride[op.tensor] and strides[-1] == 1
        if op.aligned:
            offset = sum(int(start) * stride for start, stride in zip(starts, strides))
            assert offset % op.vector == 0, (op.tensor, [int(s) for s in starts], op.vector)
            AlignmentChecking.checked += 1

    def _Load(self, op, args, env):
        self._claims(op, args[: len(op.lengths)])
        return super()._Load(op, args, env)

    def _Store(self, op, args, env):
        self._claims(op, args[: len(op.lengths)])
        return super()._Store(op, args, env)


@pytest.mark.usefixtures("memoised_layouts")
@pytest.mark.parametrize(
    "kernel", ["saxpy", "vector_add", "layer_norm_forward", "layer_norm_backward_dwdb"]
)
def test_vectorize_claims_hold_at_run_time(kernel):
    from phobos.compile.check import lower, tune_space

    from .test_executor_matches_interpreter import GRIDS, KERNELS, MODULES

    module = MODULES[KERNELS[kernel]]
    before = AlignmentChecking.checked
    for values in tune_space(module, kernel).variants()[::2]:
        tile = lower(module, kernel, values)
        gpu = build_until(tile, "all")
        args, grid = GRIDS[kernel](values, np.random.default_rng(2))
        runner = AlignmentChecking(gpu, args)
        runner.run(grid)
    assert AlignmentChecking.checked > before  # some aligned access ran


def test_a_window_off_the_vector_is_not_claimed_aligned():
    text = """
kernel off(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * 256 + 1
    out[base :+ 256] = x[base :+ 256] * 2.0
}
"""
    gpu = build_text(text, "off")
    accesses = ops(gpu, (ir.Load, ir.Store))
    assert accesses and not any(op.aligned for op in accesses)
    x = np.arange(600, dtype=np.float32)
    out = np.zeros(600, np.float32)
    AlignmentChecking(gpu, [x, out]).run((2,))
    np.testing.assert_array_equal(out[1:513], 2 * x[1:513])


# ---------------------------------------------------------------------------- the k-loop


MM_HEAD = """
kernel mm(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N], alpha: f32) {
    let m = ctx.block.x * 64
    let n = ctx.block.y * 64
    var acc = zeros<f32>[64, 64]
    for k in 0 .. K step 32 {
"""
MM_TAIL = """
    }
    c[m :+ 64, n :+ 64] = f16(acc)
}
"""
A, B = "a[m :+ 64, k :+ 32]", "b[k :+ 32, n :+ 64]"
SPELLINGS = {
    "dot": f"acc = dot({A}, {B}, acc)",
    "let": f"let x = {A}\n let y = {B}\n acc = dot(x, y, acc)",
    "unused let": f"let s = alpha * 2.0\n acc = dot({A}, {B}, acc)",
    "+=": f"acc += {A} @ {B}",
    "let product": f"let p = {A} @ {B}\n acc = acc + p",
}
SCALED = {
    "scaled acc": f"acc = dot({A}, {B}, acc * alpha)",
    "scaled sum": f"acc = acc * alpha + {A} @ {B}",
}


def k_loop(body: str, arch: str) -> list[str]:
    gpu = build_text(MM_HEAD + body + MM_TAIL, "mm", arch=arch)
    return names(loop(gpu).body)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("spelling", ["let", "unused let", "+=", "let product"])
def test_spellings_of_the_k_loop_give_the_same_ops(spelling, arch):
    """``acc + a @ b`` is folded into the product's accumulator (``passes/accumulate.py``)."""
    assert k_loop(SPELLINGS[spelling], arch) == k_loop(SPELLINGS["dot"], arch)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_the_k_loop_is_staging_barriers_and_the_product(arch):
    """The copies are pipelined (``passes/pipeline.py``): one wait and one barrier an
    iteration, then the copies of a later iteration into the stage that barrier freed:
    two windows, each copied untested inside the tensor or tested at an edge."""
    body = k_loop(SPELLINGS["dot"], arch)
    product = "wgmma" if arch == "sm_90a" else "mma_sync"
    assert body.count(product) == 1 and body.count("copy_async") == 2 * 2
    assert body.count("barrier") == 1 and body.count("async_wait") == 1
    assert "convert" not in body and "permute" not in body and "smem_store" not in body


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_a_scale_in_the_loop_adds_its_multiply_alone(arch):
    """The multiply and its splat of ``alpha``; ``alpha`` itself is read once, before the
    loop (lowering builds a uniform op in the outermost block its operands allow)."""
    plain = k_loop(SPELLINGS["dot"], arch)
    scaled = k_loop(SCALED["scaled acc"], arch)
    assert sorted(scaled) == sorted([*plain, "splat", "binary"])
    gpu = build_text(MM_HEAD + SCALED["scaled acc"] + MM_TAIL, "mm", arch=arch)
    assert [op.param for op in top_ops(gpu.body, ir.Param)] == ["alpha"]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_a_scale_spelled_as_a_sum_gives_the_same_ops(arch):
    assert sorted(k_loop(SCALED["scaled sum"], arch)) == sorted(k_loop(SCALED["scaled acc"], arch))


# ---------------------------------------------------------------------------- the printer


def test_printing_is_stable():
    """Printed twice, printed after a deep copy, built twice: the same text."""
    tile = lower_text(ATTENTION, "attention_forward", **FORWARD)
    gpu = build_until(tile, "all")
    text = format_kernel(gpu)
    assert format_kernel(gpu) == text
    assert format_kernel(copy.deepcopy(gpu)) == text
    assert format_kernel(build_until(tile, "all")) == text


def test_the_print_names_each_layout_once_and_uses_every_name():
    gpu = build_text(ATTENTION, "attention_forward", **FORWARD)
    text = format_kernel(gpu)
    head = [line for line in text.splitlines() if line.startswith("#L")]
    declared = [line.split(" = ")[0] for line in head]
    assert declared == [f"#L{i}" for i in range(len(head))]
    assert len({line.split(" = ")[1] for line in head}) == len(head)
    body = text[text.index("gpu.kernel") :]
    for name in declared:
        assert f"{name}\n" in body or f"{name} " in body or f"{name}," in body, name
    assert "smem=" in text and "threads=256" in text and "arch=sm_90a" in text


def test_the_print_has_every_op_once_and_its_regions_indented():
    gpu = build_text(SOFTMAX, "softmax_online", ROWS=2, BLOCK_N=64)
    lines = format_kernel(gpu).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("gpu.kernel"))
    body = lines[start + 1 : -1]
    assert lines[-1] == "}"
    assert len([line for line in body if line.strip() != "}"]) == len(list(gpu.walk()))
    nested = [line for line in body if line.startswith("        ") and line.strip() != "}"]
    assert len(nested) == sum(len(list(f.body.walk())) for f in ops(gpu, ir.For))


def test_format_op_prints_one_op():
    gpu = build_text(ROW_MAX, "row_max")
    line = format_op(only(ops(gpu, ir.ShuffleReduce)))
    assert line.startswith("%warp_partial = shuffle_reduce{op=max, axis=0} %partial : tile<f32>")


def test_emit_gpuir_prints_the_final_ir(tmp_path, capsys):
    from phobos.compile.cli import main
    from phobos.compile.pipeline import default_specialization, generate_kernel

    path = EXAMPLES[[p.name for p in EXAMPLES].index("saxpy_fp32.ph")]
    assert main([str(path), "--arch", "sm_90a", "-D", "BLOCK=256", "--emit", "gpuir"]) == 0
    printed = capsys.readouterr().out
    module = parse_file(path)
    _, generated = generate_kernel(
        module, "saxpy", {"BLOCK": 256}, arch="sm_90a", spec=default_specialization(module, "saxpy")
    )
    assert printed.strip() == format_kernel(generated.gpu_ir).strip()


STAGED = """
@autotune(NUM_STAGES in {2, 8})
kernel staged(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N]) {
    let m = ctx.block.x * 128
    var acc = zeros<f32>[128, 256]
    for k in 0 .. K step 64 {
        acc = dot(a[m :+ 128, k :+ 64], b[k :+ 64, 0 :+ 256], acc)
    }
    c[m :+ 128, 0 :+ 256] = f16(acc)
}
"""


def test_a_cta_past_the_targets_shared_memory_is_refused_as_a_limit():
    """Eight stages of 48 KiB are 384 KiB: no sm_90a CTA holds them, so the variant is a
    limit (pruned before NVRTC) at the line of its largest buffer, the product's operands."""
    with pytest.raises(PhobosError) as caught:
        build_until(lower_text(STAGED, "staged", NUM_STAGES=8), "allocate_shared")
    assert caught.value.only_limits
    assert caught.value.message.startswith("this variant needs ")
    assert "bytes of shared memory a CTA; sm_90a gives a CTA at most 232448" in caught.value.message
    assert caught.value.span.line == 7  # the dot, whose operands the ring stages
    kernel = build_until(lower_text(STAGED, "staged", NUM_STAGES=2), "allocate_shared")
    assert kernel.shared_bytes <= 232448
