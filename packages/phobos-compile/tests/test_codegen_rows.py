"""The structure of the memory-bound row kernels: what makes them fast, pinned without a GPU.

Tutorial 02's softmax and tutorial 05's layer norm (same text as the tutorials)
compiled for sm_90 through NVRTC and ptxas.  Fast looks like Triton's code for
the same rows: 8 warps, each thread holding its lanes in registers loaded as
16-byte vectors, warp shuffles then one shared-memory step per row reduction,
no local memory, and few enough registers that two or more CTAs share an SM.
"""

from __future__ import annotations

import functools
import re

import pytest

from phobos.compile.gpu import ir as gpu_ir
from phobos.compile.pipeline import CompiledKernel, compile_kernel, generate_kernel
from phobos.compile.syntax import parse

ROWS_TEXT = """
@autotune(ROWS in {1, 2, 4, 8}, BLOCK_N in [16, 16384])
kernel softmax(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let first = ctx.block.x * ROWS
    let rows = x[first :+ ROWS, 0 :+ BLOCK_N]
    let shifted = rows - max(rows, axis=1)[:, newaxis]
    let numerator = exp(shifted)
    out[first :+ ROWS, 0 :+ BLOCK_N] = numerator / sum(numerator, axis=1)[:, newaxis]
}

@autotune(BLOCK_N in [16, 16384])
kernel layer_norm_forward(x: tensor<f16>[M, N], w: tensor<f16>[N], b: tensor<f16>[N],
                          y: tensor<f16>[M, N], mean: tensor<f32>[M], rstd: tensor<f32>[M],
                          eps: f32) {
    let row = ctx.block.x
    let values = f32(x[row, 0 :+ BLOCK_N])
    let mu = sum(values) / f32(N)
    let centered = values - mu
    let inv = rsqrt(sum(centered * centered) / f32(N) + eps)
    mean[row] = mu
    rstd[row] = inv
    let scaled = centered * inv * f32(w[0 :+ BLOCK_N])
    y[row, 0 :+ BLOCK_N] = f16(scaled + f32(b[0 :+ BLOCK_N]))
}

@autotune(ROWS in {16, 1, 2, 4, 8, 32, 64}, BLOCK_N in [16, 16384])
kernel layer_norm_backward_dx(dy: tensor<f16>[M, N], x: tensor<f16>[M, N], w: tensor<f16>[N],
                              mean: tensor<f32>[M], rstd: tensor<f32>[M], dx: tensor<f16>[M, N],
                              dw_partial: tensor<f32>[GROUPS, N],
                              db_partial: tensor<f32>[GROUPS, N]) {
    let group = ctx.block.x
    let weight = f32(w[0 :+ BLOCK_N])
    var dw_sum = zeros<f32>[BLOCK_N]
    var db_sum = zeros<f32>[BLOCK_N]
    for i in 0 .. ROWS {
        let row = group * ROWS + i
        let inv = rstd[row]
        let xhat = (f32(x[row, 0 :+ BLOCK_N]) - mean[row]) * inv
        let grad = f32(dy[row, 0 :+ BLOCK_N])
        let wdy = weight * grad
        let c1 = sum(xhat * wdy) / f32(N)
        let c2 = sum(wdy) / f32(N)
        dx[row, 0 :+ BLOCK_N] = f16((wdy - (xhat * c1 + c2)) * inv)
        dw_sum += fill(grad * xhat, 0.0)
        db_sum += fill(grad, 0.0)
    }
    dw_partial[group, 0 :+ BLOCK_N] = dw_sum
    db_partial[group, 0 :+ BLOCK_N] = db_sum
}

@autotune(BLOCK_G in {32, 16, 64}, BLOCK_N in {64, 32, 128, 256})
kernel layer_norm_backward_dwdb(dw_partial: tensor<f32>[GROUPS, N],
                                db_partial: tensor<f32>[GROUPS, N],
                                dw: tensor<f16>[N], db: tensor<f16>[N]) {
    let start = ctx.block.x * BLOCK_N
    var dw_sum = zeros<f32>[BLOCK_G, BLOCK_N]
    var db_sum = zeros<f32>[BLOCK_G, BLOCK_N]
    for first in 0 .. GROUPS step BLOCK_G {
        dw_sum += fill(dw_partial[first :+ BLOCK_G, start :+ BLOCK_N], 0.0)
        db_sum += fill(db_partial[first :+ BLOCK_G, start :+ BLOCK_N], 0.0)
    }
    dw[start :+ BLOCK_N] = f16(sum(dw_sum, axis=0))
    db[start :+ BLOCK_N] = f16(sum(db_sum, axis=0))
}
"""

VECTOR_ADD = """
@autotune(BLOCK in [256, 16384])
kernel vector_add(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""

MODULE = parse(ROWS_TEXT + VECTOR_ADD, "rows.ph")
REGISTERS_PER_SM = 65536


@functools.cache
def build(kernel: str, **values: int) -> CompiledKernel:
    return compile_kernel(MODULE, kernel, values, arch="sm_90", verbose=True)


def count(pattern: str, ptx: str) -> int:
    return len(re.findall(pattern, ptx))


def ctas_per_sm(compiled: CompiledKernel) -> int:
    threads = compiled.contract.block[0]
    return REGISTERS_PER_SM // (compiled.resources.registers * threads)


def assert_in_registers(compiled: CompiledKernel) -> None:
    """No spills, no stack, no local memory: every lane stays in a register."""
    used = compiled.resources
    assert (used.spill_stores, used.spill_loads, used.stack_bytes) == (0, 0, 0), used.summary()
    assert count(r"\b(ld|st)\.local", compiled.ptx) == 0


@pytest.mark.parametrize(
    ("block_n", "vectors", "most_registers", "ctas"),
    [
        (1024, 4, 64, 4),  # 64 threads: 16 lanes each
        (4096, 4, 64, 4),  # 256 threads of 16 lanes: Triton's 8 warps x four 16-byte loads
        (8192, 8, 96, 2),  # 32 lanes a thread
        (16384, 16, 128, 2),  # 64 lanes a thread, capped at 128 registers: two CTAs an SM
    ],
)
def test_softmax_row_in_registers_of_8_warps(block_n, vectors, most_registers, ctas):
    compiled = build("softmax", ROWS=1, BLOCK_N=block_n)
    threads = compiled.contract.block[0]
    assert threads == min(256, block_n // 16)
    assert_in_registers(compiled)
    assert compiled.resources.registers <= most_registers
    assert ctas_per_sm(compiled) >= ctas
    ptx = compiled.ptx
    # One 16-byte load and store per group of 4 lanes (the boundary path aside).
    assert count(r"ld\.global(\.\w+)*\.v4\.f32", ptx) == vectors
    assert count(r"st\.global(\.\w+)*\.v4\.f32", ptx) == vectors
    # Two row reductions: each a 5-step butterfly; presence takes one vote, not shuffles.
    assert count(r"shfl\.sync\.bfly", ptx) == 10
    assert count(r"vote\.sync\.ballot", ptx) <= 2
    # Each reduction: one barrier after staging its warps' partials (the two reductions
    # take the two slots of the partials buffer, so neither waits before writing).
    assert count(r"bar\.sync|barrier\.sync", ptx) == 2


def test_a_row_wider_than_the_cta_combines_its_partials_once():
    """4 repeats of one row share one total: 8 shared-memory reads per reduction, not 32."""
    ptx = build("softmax", ROWS=1, BLOCK_N=4096).ptx
    assert count(r"ld\.shared", ptx) <= 2 * (8 + 8)  # values and presence, two reductions


def test_two_ctas_of_8_warps_are_asked_for_when_they_fit():
    assert "__launch_bounds__(256, 2)" in build("softmax", ROWS=1, BLOCK_N=16384).cuda_source
    small = build("softmax", ROWS=1, BLOCK_N=1024)  # 64 threads pair without a cap
    assert "__launch_bounds__(64)" in small.cuda_source  # the number is left to ptxas


def test_widest_softmax_source_stays_small():
    """Loops over the register arrays keep the source small however many lanes a thread
    holds (compile time follows the source's size; it is measured by the benchmarks)."""
    compiled = compile_kernel(MODULE, "softmax", {"ROWS": 1, "BLOCK_N": 16384}, arch="sm_90")
    assert len(compiled.cuda_source) < 12_000
    _, four_rows = generate_kernel(MODULE, "softmax", {"ROWS": 4, "BLOCK_N": 4096}, arch="sm_90")
    assert len(four_rows.source) < 12_000


def test_layer_norm_forward_row_in_registers():
    compiled = build("layer_norm_forward", BLOCK_N=4096)
    assert compiled.contract.block == (256, 1, 1)  # 16 lanes a thread: two 16-byte f16 loads
    assert_in_registers(compiled)
    assert ctas_per_sm(compiled) >= 3
    ptx = compiled.ptx
    assert count(r"ld\.global(\.\w+)*\.v4", ptx) == 6  # x, w and b: two groups each
    assert count(r"st\.global(\.\w+)*\.v4", ptx) == 2
    assert count(r"bar\.sync|barrier\.sync", ptx) == 2


def test_layer_norm_backward_keeps_its_carried_sums_in_registers():
    compiled = build("layer_norm_backward_dx", ROWS=16, BLOCK_N=4096)
    assert compiled.contract.block == (256, 1, 1)
    assert_in_registers(compiled)
    assert ctas_per_sm(compiled) >= 2
    # Per row: one barrier per reduction (c1 and c2), each in a buffer of its own.
    (loop,) = [op for op in compiled.gpu_ir.walk() if isinstance(op, gpu_ir.For)]
    assert sum(isinstance(op, gpu_ir.Barrier) for op in loop.body.walk()) == 2


def test_column_sums_combine_in_threads_and_warps_before_shared_memory():
    """dw and db: shuffles add a warp's rows, shared memory the warps'.  The loop carries
    the sums, so a thread holds one 16-byte vector of the [32, 64] tile (``passes/cta.py``):
    256 threads, each with 8 columns of one row."""
    compiled = build("layer_norm_backward_dwdb", BLOCK_G=32, BLOCK_N=64)
    assert compiled.contract.block == (256, 1, 1)
    assert_in_registers(compiled)
    # Per sum: 8 lanes a thread, 2 butterfly steps (the rows of a warp), 8 warp partials.
    assert count(r"shfl\.sync\.bfly", compiled.ptx) == 2 * 8 * 2
    # Each sum stages its 8 warps' partials, in a buffer of its own (not every lane of the
    # [32, 64] tile), so the second sum's writes need no barrier after the first's reads.
    assert compiled.contract.static_smem == 2 * 8 * 64 * 4
    assert count(r"bar\.sync|barrier\.sync", compiled.ptx) <= 4


def test_layer_norm_backward_over_8192_columns_grows_the_cta_and_reloads_the_weights():
    compiled = build("layer_norm_backward_dx", ROWS=16, BLOCK_N=8192)
    # The row and two running sums: 24576 lanes, 48 a thread on 16 warps.
    assert compiled.contract.block == (512, 1, 1)
    assert_in_registers(compiled)
    (loop,) = [op for op in compiled.gpu_ir.walk() if isinstance(op, gpu_ir.For)]
    reads = [op.tensor for op in loop.body.walk() if isinstance(op, gpu_ir.Load)]
    assert "w" in reads  # the weights are read again per row, not held across the loop


def test_a_memory_bound_cta_stops_at_512_threads_and_asks_for_one_cta_an_sm():
    """Layer norm's backward over 16384 columns holds 64K lanes: 512 threads (1024 would
    leave a thread 64 registers), told one CTA an SM so ptxas gives a thread 128."""
    compiled = build("layer_norm_backward_dx", ROWS=16, BLOCK_N=16384)
    assert compiled.contract.block == (512, 1, 1)
    assert "__launch_bounds__(512, 1)" in compiled.cuda_source
    assert compiled.resources.registers == 128


WIDE_ROWS = parse(
    """\
@autotune(NUM_THREADS in {1024})
kernel sums(x: tensor<f16>[M, N], out: tensor<f32>[M, N]) {
    var first = zeros<f32>[16384]
    var second = zeros<f32>[16384]
    for row in 0 .. M {
        let v = f32(x[row, 0 :+ 16384])
        first += fill(v, 0.0)
        second += fill(v * v, 0.0)
    }
    out[0, 0 :+ 16384] = first
    out[1, 0 :+ 16384] = second
}
""",
    "wide.ph",
)


def test_a_1024_thread_cta_whose_lanes_need_more_than_32_registers_asks_for_one_cta_an_sm():
    """48 lanes a thread: more than the 32 registers two 1024-thread CTAs an SM would leave,
    so ptxas is told one (left alone, it planned two for layer norm's backward and spilled)."""
    compiled = compile_kernel(WIDE_ROWS, "sums", {"NUM_THREADS": 1024}, arch="sm_90", verbose=True)
    assert "__launch_bounds__(1024, 1)" in compiled.cuda_source
    assert_in_registers(compiled)


@pytest.mark.parametrize(("block", "threads"), [(1024, 64), (8192, 256), (16384, 512)])
def test_windows_loaded_together_count_toward_a_threads_lanes(block, threads):
    """x and y are both in registers before the add: 2 x 16384 lanes need 512 threads."""
    compiled = build("vector_add", BLOCK=block)
    assert compiled.contract.block == (threads, 1, 1)
    assert_in_registers(compiled)
    assert count(r"ld\.global(\.\w+)*\.v4\.f32", compiled.ptx) == 2 * block // 4 // threads


def test_layer_norm_forward_over_16384_columns_loads_its_three_windows_without_spilling():
    """x, w and b are loaded together (ptxas issues them early): 512 threads hold them."""
    compiled = build("layer_norm_forward", BLOCK_N=16384)
    assert compiled.contract.block == (512, 1, 1)
    assert_in_registers(compiled)
