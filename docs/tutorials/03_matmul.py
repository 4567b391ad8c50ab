"""Tutorial 03: matrix multiplication.

The Phobos version of Triton's third tutorial.  ``C = A @ B`` for fp16 ``A``
``[M, K]`` and ``B`` ``[K, N]``, accumulated in fp32 on the tensor cores and
stored as fp16.  Each block computes one ``[BM, BN]`` tile of ``C``: it walks
``K`` in steps of ``BK``, and ``dot(a_tile, b_tile, acc)`` adds each product
into the fp32 accumulator, which stays in registers for the whole loop.  The
back end pipelines the loop (however the accumulation is spelled): the next
k-steps' tiles travel from global to shared memory (2 to 4 stages; by TMA on an
H100/H200 where the rows are on 16 bytes, by ``cp.async`` elsewhere) while the
tensor cores multiply this one.  With TMA a block whose stages fill its SM's
shared memory is split: a warpgroup of its own issues the copies, and the
``NUM_THREADS`` threads only wait for each stage and multiply.

**Grouped ordering.**  Blocks that run at the same time should read the same
rows of ``A`` and columns of ``B``, so these stay in L2.  Numbering the tiles of
``C`` row by row makes the first wave of blocks read one row band of ``A`` but
every column of ``B``.  As Triton's tutorial does, the kernel instead takes the
tiles in groups of ``GROUP_M`` block-rows, walking each group column by column:
block ``x`` works out its own ``(pid_m, pid_n)`` from ``ctx.block.x``, and a
wave of blocks covers a roughly square patch of ``C``.

**Edges.**  ``M``, ``N`` and ``K`` need not be multiples of the tiles.  Lanes of
a window past the end of ``A`` or ``B`` are absent, and ``dot`` counts them as 0,
so the last k-step adds nothing for ``k >= K``; rows and columns of ``C`` past
its end are absent and the store skips them.  Triton's tutorial masks the loads
with ``other=0.0`` and the store with a mask for the same effect.

**Epilogue.**  ``ACTIVATION`` is a compile-time name: ``ACTIVATION=1`` applies a
leaky ReLU to the fp32 accumulator before the fp16 store, fused into the same
kernel; ``ACTIVATION=0`` compiles the branch away.  Launches fix it by keyword
(``run_matmul`` does), and the autotuner tunes the tile names for each value.

**Races.**  The compiler's static race check recognises the grouped order and
proves that it gives each tile of ``C`` to one block, so compiling prints no
warning (docs/errors.md).  The tests also launch every kernel with
``race_check=True``, which checks the real launch's writes in the interpreter.

Run it: ``python docs/tutorials/03_matmul.py``.  It checks the kernel in the CPU
interpreter against numpy; with a GPU and torch it also checks it against torch
in float64 and times Phobos, Triton and ``torch.matmul`` (TFLOP/s = 2·M·N·K / t).
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph

# The slope of the leaky ReLU for negative inputs.
SLOPE: ph.const = 0.01


@ph.func
def leaky_relu(v: ph.f32) -> ph.f32:
    """Leaky ReLU: negative values keep a SLOPE-sized fraction of themselves."""
    return ph.where(v >= 0.0, v, v * SLOPE)


# Tutorial 03: fp16 matmul with fp32 accumulation on the tensor cores; ACTIVATION 1 adds a
# leaky ReLU before the fp16 store.  Blocks go in groups of GROUP_M block-rows, so that
# blocks running together share tiles of a and b in L2.
@ph.kernel
@ph.autotune(
    BM={128, 64},
    BN={128, 256, 64},
    BK={64, 32},
    GROUP_M={8},
    NUM_THREADS={256, 128},
    ACTIVATION={0, 1},
)
def matmul(a: ph.tensor[ph.f16][M, K], b: ph.tensor[ph.f16][K, N], c: ph.tensor[ph.f16][M, N]):
    blocks_m: ph.let = (M + BM - 1) / BM
    blocks_n: ph.let = (N + BN - 1) / BN
    # A group is GROUP_M block-rows (fewer in the last group), walked column by column.
    group_blocks: ph.let = GROUP_M * blocks_n
    first_row: ph.let = ph.ctx.block.x / group_blocks * GROUP_M
    group_rows: ph.let = ph.minimum(blocks_m - first_row, GROUP_M)
    in_group: ph.let = ph.ctx.block.x % group_blocks
    m: ph.let = (first_row + in_group % group_rows) * BM
    n: ph.let = in_group / group_rows * BN
    acc: ph.var = ph.zeros[ph.f32][BM, BN]
    for k in range(0, K, BK):
        acc = ph.dot(a[m:+BM, k:+BK], b[k:+BK, n:+BN], acc)
    if ACTIVATION == 1:
        acc = leaky_relu(acc)
    c[m:+BM, n:+BN] = ph.f16(acc)


def grid(meta):
    """One block per [BM, BN] tile of C, rounding up on both axes."""
    return (-(-meta["M"] // meta["BM"]) * -(-meta["N"] // meta["BN"]),)


def run_matmul(a, b, c, activation: bool = False, **launch) -> None:
    """``c = a @ b`` (with a leaky ReLU when ``activation``); tile names left out are tuned."""
    matmul[grid](a, b, c, ACTIVATION=int(activation), **launch)


def reference(a: np.ndarray, b: np.ndarray, activation: bool = False) -> np.ndarray:
    """``a @ b`` in float64, with the leaky ReLU when ``activation``."""
    product = a.astype(np.float64) @ b.astype(np.float64)
    return np.where(product >= 0, product, SLOPE * product) if activation else product


def relative_error(got, expected) -> float:
    """max |got - expected| / max |expected| (numpy or torch arrays), in float64."""
    if hasattr(got, "double"):
        return float((got.double() - expected).abs().max() / expected.abs().max())
    got = np.asarray(got, dtype=np.float64)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


# Tile shapes the CPU check runs: the smallest and the largest of the space.
CPU_TILES = ({"BM": 64, "BN": 64, "BK": 32}, {"BM": 128, "BN": 128, "BK": 64})


def check_on_cpu(m: int = 70, n: int = 50, k: int = 90) -> None:
    """The kernel in the interpreter at sizes that are no multiple of any tile, output NaN."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    for activation in (False, True):
        expected = reference(a, b, activation)
        for tiles in CPU_TILES:
            c = np.full((m, n), np.nan, np.float16)
            run_matmul(a, b, c, activation, race_check=True, **tiles)
            error = relative_error(c, expected)
            assert error < 1e-2 and not np.isnan(c).any(), f"{tiles}: relative error {error}"
    print(f"interpreter: matmul {m}x{n}x{k}, with and without leaky ReLU, matches numpy (float64)")


def triton_matmul(space=None):
    """Matmul in Triton, written the way Triton's tutorial 03 writes it: pointer arithmetic
    with strides, masked loads, the same grouped ordering, an autotuned set of configs and an
    optional fused leaky ReLU.  Returns ``launch(a, b, activation) -> c``.

    ``space`` replaces the tutorial's configs: (BM, BN, BK, num_stages, num_warps) tuples."""
    import torch
    import triton
    import triton.language as tl

    configs = [
        triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8}, num_stages=s, num_warps=w)
        for bm, bn, bk, s, w in space
        or (
            (128, 256, 64, 3, 8),
            (256, 128, 64, 3, 8),
            (128, 128, 64, 4, 4),
            (128, 128, 32, 4, 4),
            (128, 64, 32, 4, 4),
            (64, 128, 32, 4, 4),
            (64, 64, 32, 5, 2),
        )
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(
        a_ptr, b_ptr, c_ptr, M, N, K,
        stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
        ACTIVATION: tl.constexpr,
    ):  # fmt: skip
        pid = tl.program_id(0)
        blocks_m = tl.cdiv(M, BM)
        blocks_n = tl.cdiv(N, BN)
        group_blocks = GROUP_M * blocks_n
        first_row = pid // group_blocks * GROUP_M
        group_rows = min(blocks_m - first_row, GROUP_M)
        pid_m = first_row + (pid % group_blocks) % group_rows
        pid_n = (pid % group_blocks) // group_rows
        rows = (pid_m * BM + tl.arange(0, BM)) % M
        cols = (pid_n * BN + tl.arange(0, BN)) % N
        ks = tl.arange(0, BK)
        a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
        b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for step in range(0, tl.cdiv(K, BK)):
            left = K - step * BK
            a = tl.load(a_ptrs, mask=ks[None, :] < left, other=0.0)
            b = tl.load(b_ptrs, mask=ks[:, None] < left, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BK * stride_ak
            b_ptrs += BK * stride_bk
        if ACTIVATION == "leaky_relu":
            acc = tl.where(acc >= 0, acc, 0.01 * acc)
        c = acc.to(tl.float16)
        out_rows = pid_m * BM + tl.arange(0, BM)
        out_cols = pid_n * BN + tl.arange(0, BN)
        c_ptrs = c_ptr + out_rows[:, None] * stride_cm + out_cols[None, :] * stride_cn
        tl.store(c_ptrs, c, mask=(out_rows[:, None] < M) & (out_cols[None, :] < N))

    def launch(a, b, activation: bool = False):
        m, k = a.shape
        n = b.shape[1]
        c = torch.empty((m, n), device=a.device, dtype=torch.float16)

        def blocks(meta):
            return (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)

        matmul_kernel[blocks](
            a, b, c, m, n, k,
            a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
            ACTIVATION="leaky_relu" if activation else "",
        )  # fmt: skip
        return c

    return launch


def torch_matmul(a, b, activation: bool = False):
    """torch's matmul, with the leaky ReLU as a second kernel when ``activation``."""
    import torch

    c = torch.matmul(a, b)
    return torch.nn.functional.leaky_relu(c, SLOPE) if activation else c


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2 * m * n * k / (ms * 1e-3) / 1e12


def measure_on_gpu(size: int, activation: bool, triton_run, time_ms) -> dict:
    """Check Phobos, Triton and torch on ``size``³ against float64, then time each.

    ``time_ms(fn)`` is the timer (a median in ms).  Phobos's first launch of a shape tunes
    BM, BN, BK and NUM_THREADS (docs/autotuning.md); the row records the variant chosen.
    """
    import torch

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    expected = torch_matmul(a.double(), b.double(), activation)
    c = torch.full((size, size), float("nan"), device="cuda", dtype=torch.float16)

    def phobos_run():
        run_matmul(a, b, c, activation)
        return c

    runs = {
        "phobos": phobos_run,
        "triton": lambda: triton_run(a, b, activation),
        "torch": lambda: torch_matmul(a, b, activation),
    }
    row: dict = {"size": size, "activation": activation}
    for name, run in runs.items():
        got = run()
        if name == "phobos":
            row["phobos_variant"] = matmul.tuning_report().choice
        error = relative_error(got, expected)
        if not error < 1e-2 or bool(got.isnan().any()):
            raise AssertionError(f"{name}: relative error {error:.1e} against float64")
        row[f"{name}_error"] = error
        row[f"{name}_tflops"] = tflops(size, size, size, time_ms(run))
    return row


def check_and_time_on_gpu(sizes=(1024, 4096, 8192), activation: bool = False) -> None:
    """Check against torch in float64, then time Phobos, Triton and torch (median, L2 flushed)."""
    from triton.testing import do_bench

    def time_ms(fn):
        return do_bench(fn, return_mode="median")

    triton_run = triton_matmul()
    for size in sizes:
        row = measure_on_gpu(size, activation, triton_run, time_ms)
        print(
            f"{size}^3 leaky_relu={activation!s:5} phobos {row['phobos_tflops']:6.1f}  "
            f"triton {row['triton_tflops']:6.1f}  torch {row['torch_tflops']:6.1f} TFLOP/s  "
            f"(phobos variant {row['phobos_variant']})"
        )


def main() -> None:
    print(matmul.source)
    check_on_cpu()
    check_on_cpu(m=33, n=130, k=17)
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    if on_gpu:
        check_and_time_on_gpu()
        check_and_time_on_gpu(sizes=(4096,), activation=True)


if __name__ == "__main__":
    main()
