"""The executor refuses what the hardware does not forgive, and the barrier pass's output runs.

Small GPU IR programs built by hand, each with one hazard: a shared-memory read of
another thread's write with no barrier between, a read of ``cp.async`` bytes before
their wait, a ``wgmma`` reading shared memory that was not fenced for the async proxy
(or written since the last barrier), and a write into a buffer that a ``wgmma`` in
flight reads.  Each raises ``ExecutionError``; the same program through allocation and
``insert_barriers`` runs and gives the right answer where barriers are what it lacks,
and still raises where a barrier cannot help (a missing wait, a missing fence).
"""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.gpu import executor as gpu_executor
from phobos.compile.gpu import ir, layouts
from phobos.compile.gpu.builder import Builder
from phobos.compile.gpu.executor import ExecutionError
from phobos.compile.gpu.passes.allocation import allocate_shared
from phobos.compile.gpu.passes.barriers import insert_barriers
from phobos.compile.interp import run as interpret
from phobos.compile.ir import nodes as tir

from .conftest import build_text, execute, lower_text, ops


def kernel(body: ir.Block, threads: int, *tensors: tir.TensorParam) -> ir.Kernel:
    names = [t.name for t in tensors]
    return ir.Kernel(
        name="hazard",
        params=tensors,
        values=(),
        body=body,
        threads=threads,
        arch="sm_90a",
        index_width=32,
        unit_stride=dict.fromkeys(names, True),
        align=dict.fromkeys(names, 16),
    )


def with_barriers(k: ir.Kernel) -> ir.Kernel:
    allocate_shared(k)
    insert_barriers(k)
    return k


def count(k: ir.Kernel, kind: type) -> int:
    return len(ops(k, kind))


# ---------------------------------------------------------------------------- registers ↔ smem

WARP_LAYOUT = layouts.blocked((32,), 32)  # thread t holds element t
# Thread t holds element bitreverse(t): the lane bases in the other order.
REVERSED = layouts.Layout((32,), (), tuple((16 >> i,) for i in range(5)), ())


def exchange(insert_barrier: bool = False, overwrite: bool = False) -> ir.Kernel:
    """out[i] = i, each element written to shared memory by one thread, read by another
    (``overwrite``: and the buffer written again after the read)."""
    body = ir.Block()
    b = Builder(body)
    values = b.value(ir.Coord(axis=0), ir.Tile("i32", (32,), WARP_LAYOUT))
    values = b.cast(values, "f32")
    buffer = b.value(ir.SharedAlloc(), ir.Shared("f32", (32,), layouts.plain_rows(1, 32, 4)))
    b.add(ir.SharedStore(operands=[buffer, values]))
    if insert_barrier:
        b.add(ir.Barrier())
    read = b.value(ir.SharedLoad(operands=[buffer]), ir.Tile("f32", (32,), REVERSED))
    if overwrite:
        b.add(ir.SharedStore(operands=[buffer, b.binary("add", values, values)]))
    zero = b.constant(0, "i32")
    b.add(ir.Store(tensor="out", lengths=(32,), operands=[zero, read]))
    return kernel(body, 32, tir.TensorParam("out", "f32", (32,)))


def test_a_read_of_another_threads_shared_write_needs_a_barrier():
    out = np.full(32, np.nan, np.float32)
    with pytest.raises(ExecutionError, match="another thread wrote with no barrier"):
        execute(exchange(), (1,), [out])


def test_the_barrier_pass_puts_the_barrier_between_and_the_exchange_runs():
    k = with_barriers(exchange())
    assert count(k, ir.Barrier) == 1
    barrier = ops(k, (ir.SharedStore, ir.Barrier, ir.SharedLoad))
    assert [op.NAME for op in barrier] == ["smem_store", "barrier", "smem_load"]
    out = np.full(32, np.nan, np.float32)
    execute(k, (1,), [out])
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float32))


def test_a_hand_placed_barrier_is_kept_and_no_second_one_added():
    k = with_barriers(exchange(insert_barrier=True))
    assert count(k, ir.Barrier) == 1


def test_an_overwrite_of_what_another_thread_read_needs_a_barrier():
    """Write-after-read: the second store into the exchange buffer races the first load."""
    k = exchange(insert_barrier=True, overwrite=True)
    with pytest.raises(ExecutionError, match="overwrites shared memory another thread read"):
        execute(k, (1,), [np.zeros(32, np.float32)])
    fixed = with_barriers(k)
    assert count(fixed, ir.Barrier) == 2
    out = np.zeros(32, np.float32)
    execute(fixed, (1,), [out])
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float32))


# ---------------------------------------------------------------------------- cp.async

COPY = layouts.blocked((8, 32), 32, 8)  # 16-byte groups of f16
ROWS = layouts.blocked((8, 32), 32)  # what the threads read back


def copy_program(wait: bool) -> ir.Kernel:
    """A tile copied into shared memory with cp.async, read back in another layout."""
    body = ir.Block()
    b = Builder(body)
    zero = b.constant(0, "i32")
    buffer = b.value(ir.SharedAlloc(), ir.Shared("f16", (8, 32), layouts.plain_rows(8, 32, 2)))
    b.add(ir.CopyAsync(tensor="x", lengths=(8, 32), layout=COPY, operands=[buffer, zero, zero]))
    b.add(ir.AsyncCommit())
    if wait:
        b.add(ir.AsyncWait(pending=0))
    read = b.value(ir.SharedLoad(operands=[buffer]), ir.Tile("f16", (8, 32), ROWS))
    b.add(ir.Store(tensor="out", lengths=(8, 32), operands=[zero, zero, read]))
    x = tir.TensorParam("x", "f16", (8, 32))
    return kernel(body, 32, x, tir.TensorParam("out", "f16", (8, 32)))


def copy_args():
    x = (np.arange(256).reshape(8, 32) % 61 + 1).astype(np.float16)
    return x, np.zeros((8, 32), np.float16)


def test_a_read_of_cp_async_bytes_before_their_wait_fails():
    with pytest.raises(ExecutionError, match=r"before its asynchronous copy landed"):
        execute(copy_program(wait=False), (1,), list(copy_args()))


def test_a_barrier_does_not_stand_in_for_the_wait():
    k = with_barriers(copy_program(wait=False))
    assert count(k, ir.Barrier) == 1
    with pytest.raises(ExecutionError, match=r"before its asynchronous copy landed"):
        execute(k, (1,), list(copy_args()))


def test_landed_bytes_of_another_thread_still_need_a_barrier():
    with pytest.raises(ExecutionError, match="another thread wrote with no barrier"):
        execute(copy_program(wait=True), (1,), list(copy_args()))


def test_wait_and_barrier_make_the_copy_readable():
    k = with_barriers(copy_program(wait=True))
    assert [op.NAME for op in ops(k, (ir.AsyncWait, ir.Barrier, ir.SharedLoad))] == [
        "async_wait",
        "barrier",
        "smem_load",
    ]
    x, out = copy_args()
    execute(k, (1,), [x, out])
    np.testing.assert_array_equal(out, x)


# ---------------------------------------------------------------------------- wgmma

M, N, K = 64, 16, 16
A_SMEM = layouts.swizzled(M, K, 2)  # K-major A: rows M, columns K
B_SMEM = layouts.swizzled(K, N, 2)  # MN-major B: rows K, columns N
ACC = layouts.wgmma_accumulator((M, N), 1)


def wgmma_program(*, fence: bool, barrier: bool, overwrite: str | None = None) -> ir.Kernel:
    """c = a @ b with wgmma, a and b stored to shared memory from registers.

    ``overwrite``: "in flight" writes a's buffer again between the wgmma and its wait,
    "after" right after the wait.
    """
    body = ir.Block()
    b = Builder(body)
    zero = b.constant(0, "i32")
    a = b.value(
        ir.Load(tensor="a", lengths=(M, K), operands=[zero, zero]),
        ir.Tile("f16", (M, K), layouts.blocked((M, K), 128)),
    )
    bb = b.value(
        ir.Load(tensor="b", lengths=(K, N), operands=[zero, zero]),
        ir.Tile("f16", (K, N), layouts.blocked((K, N), 128)),
    )
    a_smem = b.value(ir.SharedAlloc(), ir.Shared("f16", (M, K), A_SMEM))
    b_smem = b.value(ir.SharedAlloc(), ir.Shared("f16", (K, N), B_SMEM))
    b.add(ir.SharedStore(operands=[a_smem, a]))
    b.add(ir.SharedStore(operands=[b_smem, bb]))
    if fence:
        b.add(ir.FenceAsync())
    if barrier:
        b.add(ir.Barrier())
    acc = b.splat(b.constant(0.0, "f32"), (M, N))
    acc.type = ir.Tile("f32", (M, N), ACC)
    flight = ir.Wgmma(operands=[a_smem, b_smem, acc], a_major="k", b_major="mn")
    flight.results = [ir.Value(ir.Tile("f32", (M, N), ACC), "flight")]
    body.ops.append(flight)
    if overwrite == "in flight":
        b.add(ir.SharedStore(operands=[a_smem, a]))
    wait = ir.WgmmaWait(operands=[flight.result])
    wait.results = [ir.Value(ir.Tile("f32", (M, N), ACC), "c")]
    body.ops.append(wait)
    if overwrite == "after":
        b.add(ir.SharedStore(operands=[a_smem, a]))
    b.add(ir.Store(tensor="c", lengths=(M, N), operands=[zero, zero, wait.result]))
    params = (
        tir.TensorParam("a", "f16", (M, K)),
        tir.TensorParam("b", "f16", (K, N)),
        tir.TensorParam("c", "f32", (M, N)),
    )
    return kernel(body, 128, *params)


def wgmma_args():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return [a, b, np.full((M, N), np.nan, np.float32)]


def expected_product(args) -> np.ndarray:
    return args[0].astype(np.float32) @ args[1].astype(np.float32)


def test_the_wgmma_program_is_right_when_fenced_and_synchronised():
    args = wgmma_args()
    execute(wgmma_program(fence=True, barrier=True), (1,), args)
    np.testing.assert_allclose(args[2], expected_product(args), rtol=1e-5, atol=1e-5)


def test_a_wgmma_reading_unfenced_shared_memory_fails():
    with pytest.raises(ExecutionError, match="not fenced for the async proxy"):
        execute(wgmma_program(fence=False, barrier=True), (1,), wgmma_args())


def test_a_barrier_does_not_stand_in_for_the_fence():
    k = with_barriers(wgmma_program(fence=False, barrier=False))
    assert count(k, ir.Barrier) == 1
    with pytest.raises(ExecutionError, match="not fenced for the async proxy"):
        execute(k, (1,), wgmma_args())


def test_a_wgmma_reading_what_was_written_since_the_last_barrier_fails():
    with pytest.raises(ExecutionError, match="written after the last barrier"):
        execute(wgmma_program(fence=True, barrier=False), (1,), wgmma_args())


def test_the_barrier_pass_synchronises_the_wgmma_operands():
    k = with_barriers(wgmma_program(fence=True, barrier=False))
    sequence = [op.NAME for op in ops(k, (ir.FenceAsync, ir.Barrier, ir.Wgmma))]
    assert sequence == ["fence_async", "barrier", "wgmma"]
    args = wgmma_args()
    execute(k, (1,), args)
    np.testing.assert_allclose(args[2], expected_product(args), rtol=1e-5, atol=1e-5)


def test_a_write_into_a_buffer_a_wgmma_in_flight_reads_fails():
    with pytest.raises(ExecutionError, match="a wgmma in flight reads"):
        execute(wgmma_program(fence=True, barrier=True, overwrite="in flight"), (1,), wgmma_args())


def test_a_barrier_does_not_complete_a_wgmma_in_flight():
    k = with_barriers(wgmma_program(fence=True, barrier=True, overwrite="in flight"))
    assert count(k, ir.Barrier) == 2  # before the wgmma, and before the overwrite
    with pytest.raises(ExecutionError, match="a wgmma in flight reads"):
        execute(k, (1,), wgmma_args())


def test_after_the_wait_the_overwrite_needs_only_a_barrier():
    program = wgmma_program(fence=True, barrier=True, overwrite="after")
    with pytest.raises(ExecutionError, match="overwrites shared memory another thread read"):
        execute(program, (1,), wgmma_args())
    k = with_barriers(program)
    assert [op.NAME for op in ops(k, (ir.WgmmaWait, ir.Barrier, ir.SharedStore))][-3:] == [
        "wgmma_wait",
        "barrier",
        "smem_store",
    ]
    args = wgmma_args()
    execute(k, (1,), args)
    np.testing.assert_allclose(args[2], expected_product(args), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- replicas, bounds


def test_replicated_copies_that_disagree_are_refused():
    """A tile held twice (a zero lane basis) whose copies differ cannot be stored."""
    halves = layouts.Layout((16,), (), ((1,), (2,), (4,), (8,), (0,)), ())
    body = ir.Block()
    b = Builder(body)
    lane = b.value(ir.Coord(axis=0), ir.Tile("i32", (16,), halves))
    zero = b.constant(0, "i32")
    b.add(ir.Store(tensor="out", lengths=(16,), operands=[zero, lane]))
    k = kernel(body, 32, tir.TensorParam("out", "i32", (16,)))
    execute(k, (1,), [np.zeros(16, np.int32)])  # equal copies: fine
    runner = gpu_executor.Executor(k, [np.zeros(16, np.int32)])
    regs = runner.like(np.arange(16, dtype=np.int32), ir.Tile("i32", (16,), halves))
    regs.values[16:, 0] += 1  # the upper half-warp's copy of each element
    with pytest.raises(ExecutionError, match="replicated copies of a tile disagree"):
        gpu_executor.to_dense(regs, "i32")


def test_an_unchecked_window_past_the_tensor_is_refused():
    body = ir.Block()
    b = Builder(body)
    start = b.constant(8, "i32")
    x = b.value(
        ir.Load(tensor="x", lengths=(16,), checked=False, operands=[start]),
        ir.Tile("f32", (16,), layouts.blocked((16,), 32)),
    )
    b.add(ir.Store(tensor="out", lengths=(16,), operands=[b.constant(0, "i32"), x]))
    k = kernel(body, 32, tir.TensorParam("x", "f32", (16,)), tir.TensorParam("out", "f32", (16,)))
    with pytest.raises(ExecutionError, match="unchecked window reaches outside"):
        execute(k, (1,), [np.ones(16, np.float32), np.zeros(16, np.float32)])


# ---------------------------------------------------------------------------- masked reductions

MASKED_ROWS = """
kernel row_max(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    let row = ctx.block.x
    out[row] = max(x[row, 0 :+ 128])
}
"""


def test_executor_runs_a_masked_register_reduction():
    """The reduction's operands are the tile and its mask (the executor once unpacked
    ``(x,) = args`` and failed here; the tests' shim for it is gone)."""
    tile = lower_text(MASKED_ROWS, "row_max")
    gpu = build_text(MASKED_ROWS, "row_max")
    assert any(op.masked and len(op.operands) == 2 for op in ops(gpu, ir.ReduceRegisters))
    x = -np.abs(np.random.default_rng(3).standard_normal((3, 100))).astype(np.float32) - 1
    expected, got = np.full(3, np.nan, np.float32), np.full(3, np.nan, np.float32)
    interpret(tile, (3,), [x, expected])
    gpu_executor.execute(gpu, (3,), [x, got])
    np.testing.assert_allclose(got, expected)


def test_the_masked_reduction_gives_the_interpreters_answer():
    """All-negative rows: counting the absent lanes as 0 (not -inf) would give 0."""
    tile = lower_text(MASKED_ROWS, "row_max")
    gpu = build_text(MASKED_ROWS, "row_max")
    x = -np.abs(np.random.default_rng(3).standard_normal((3, 100))).astype(np.float32) - 1
    expected, got = np.full(3, np.nan, np.float32), np.full(3, np.nan, np.float32)
    interpret(tile, (3,), [x, expected])
    execute(gpu, (3,), [x, got])
    np.testing.assert_array_equal(got, x.max(axis=1))
    np.testing.assert_array_equal(got, expected)
