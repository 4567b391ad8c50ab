"""Tutorial 02: fused softmax.

The Phobos version of Triton's second tutorial.  Softmax of each row of a
matrix, ``exp(x - max(x)) / sum(exp(x - max(x)))``, in one kernel: each block
loads ``ROWS`` whole rows once, normalises them in registers and writes them
once, where an unfused version reads and writes the matrix several times.

``softmax`` holds a row in one tile of ``BLOCK_N`` columns, so ``BLOCK_N`` must
cover ``N``.  Columns past ``N`` (and rows past ``M``) are absent: ``max`` counts
them as -inf and ``sum`` as 0, so they change neither the maximum nor the sum,
``exp`` of an absent lane stays absent, and the store skips them.  Triton's
tutorial writes ``other=-float("inf")`` and a mask by hand for the same effect.

``softmax_online`` takes rows of any length in chunks of ``BLOCK_N``: a first
pass keeps each row's running maximum and the sum of ``exp`` rescaled to it (the
"online softmax"), a second pass writes the result.  It reads the input twice,
so ``softmax`` is the fast path whenever a row fits one tile.  There, ``fill``
gives the absent lanes of a chunk the value -inf, so the running maximum and sum
of every row (a var, assigned in every iteration) never become absent.

Run it: ``python docs/tutorials/02_fused_softmax.py``.  It checks the kernels in
the CPU interpreter against numpy; with a GPU and torch it also checks them
against torch in float64 and times Phobos, Triton and torch.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph


# Tutorial 02: fused softmax, ROWS rows per block, each row in one BLOCK_N tile.
# Columns past N are absent: max and sum skip them and the store leaves them.
@ph.kernel
@ph.autotune(
    ROWS={1, 2, 4, 8},
    BLOCK_N={16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384},
)
def softmax(x: ph.tensor[ph.f32][M, N], out: ph.tensor[ph.f32][M, N]):
    first: ph.let = ph.ctx.block.x * ROWS
    rows: ph.let = x[first:+ROWS, 0:+BLOCK_N]
    shifted: ph.let = rows - ph.max(rows, axis=1)[:, None]
    numerator: ph.let = ph.exp(shifted)
    out[first:+ROWS, 0:+BLOCK_N] = numerator / ph.sum(numerator, axis=1)[:, None]


# Softmax of rows of any length, in BLOCK_N chunks: a first pass keeps each row's
# running maximum and its sum of exp rescaled to that maximum, a second writes.
@ph.kernel
@ph.autotune(ROWS={1, 2, 4, 8}, BLOCK_N=[16, 16384])
def softmax_online(x: ph.tensor[ph.f32][M, N], out: ph.tensor[ph.f32][M, N]):
    first: ph.let = ph.ctx.block.x * ROWS
    row_max: ph.var = ph.zeros[ph.f32][ROWS] - ph.inf
    row_sum: ph.var = ph.zeros[ph.f32][ROWS]
    for start in range(0, N, BLOCK_N):
        chunk: ph.let = ph.fill(x[first:+ROWS, start:+BLOCK_N], -ph.inf)
        new_max: ph.let = ph.maximum(row_max, ph.max(chunk, axis=1))
        rescale: ph.let = ph.exp(row_max - new_max)
        row_sum = row_sum * rescale + ph.sum(ph.exp(chunk - new_max[:, None]), axis=1)
        row_max = new_max
    for start in range(0, N, BLOCK_N):
        shifted: ph.let = x[first:+ROWS, start:+BLOCK_N] - row_max[:, None]
        out[first:+ROWS, start:+BLOCK_N] = ph.exp(shifted) / row_sum[:, None]


def grid(meta):
    """One block per ROWS rows, rounding up."""
    return (-(-meta["M"] // meta["ROWS"]),)


# The widest row one tile holds (the top of BLOCK_N's range).
MAX_TILE = 16384


def covering_tile(n: int) -> int:
    """The narrowest BLOCK_N of ``softmax``'s space that holds a row of n columns (12288
    columns take the 12288-wide tile, not a 16384-wide one a quarter absent), or the
    widest when none does."""
    tiles = softmax.space.choices["BLOCK_N"]
    return min((t for t in tiles if t >= n), default=max(tiles))


def run_softmax(x, out, rows: int | None = None, block_n: int | None = None, **launch) -> None:
    """``out = softmax(x)`` along rows: one tile per row when it fits, else the online kernel.

    The tile is the narrowest that holds a row (a narrower one would leave columns
    unwritten, so the single-tile kernel is only right with it); ``ROWS`` is left to the
    tuner unless ``rows`` fixes it, so each shape gets the rows a block best takes.
    """
    n = x.shape[1]
    if block_n is None:
        block_n = covering_tile(n)
    if rows is not None:
        launch["ROWS"] = rows
    if block_n >= n and block_n <= MAX_TILE:
        softmax[grid](x, out, BLOCK_N=block_n, **launch)
    else:
        softmax_online[grid](x, out, BLOCK_N=min(block_n, MAX_TILE), **launch)


def reference(x: np.ndarray) -> np.ndarray:
    """Softmax along rows in float64."""
    shifted = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def check_on_cpu(m: int = 37, n: int = 100) -> None:
    """Both kernels in the interpreter, at sizes that are no multiple of any block."""
    rng = np.random.default_rng(0)
    x = (3 * rng.standard_normal((m, n))).astype(np.float32)
    expected = reference(x)
    for name, rows, block_n in [("softmax", 4, None), ("softmax_online", 2, 32)]:
        out = np.full_like(x, np.nan)
        run_softmax(x, out, rows=rows, block_n=block_n, race_check=True)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-9)
        print(f"interpreter: {name} on {m}x{n} matches numpy (float64) to 1e-5")


def triton_softmax():
    """Softmax in Triton, written the way Triton's tutorial 02 writes it: a persistent grid
    of programs, each looping over rows, sized from the kernel's register and shared
    memory use."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_kernel(
        out_ptr,
        in_ptr,
        in_stride,
        out_stride,
        n_rows,
        n_cols,
        BLOCK: tl.constexpr,
        STAGES: tl.constexpr,
    ):
        start = tl.program_id(0)
        step = tl.num_programs(0)
        for row in tl.range(start, n_rows, step, num_stages=STAGES):
            cols = tl.arange(0, BLOCK)
            mask = cols < n_cols
            values = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
            values = values - tl.max(values, axis=0)
            numerator = tl.exp(values)
            result = numerator / tl.sum(numerator, axis=0)
            tl.store(out_ptr + row * out_stride + cols, result, mask=mask)

    device = torch.cuda.current_device()
    props = triton.runtime.driver.active.utils.get_device_properties(device)
    compiled: dict = {}

    def launch(x, out):
        n_rows, n_cols = x.shape
        block = triton.next_power_of_2(n_cols)
        warps = 8
        stages = 4 if props["max_shared_mem"] > 200_000 else 2
        # Triton specialises on the integer arguments (divisibility by 16), so one compiled
        # kernel serves one shape and pair of strides.
        key = (n_rows, n_cols, x.stride(0), out.stride(0))
        if key not in compiled:
            kernel = softmax_kernel.warmup(
                out,
                x,
                x.stride(0),
                out.stride(0),
                n_rows,
                n_cols,
                BLOCK=block,
                STAGES=stages,
                num_warps=warps,
                grid=(1,),
            )
            kernel._init_handles()
            per_sm = props["max_num_regs"] // (kernel.n_regs * 32 * warps)
            if kernel.metadata.shared:
                per_sm = min(per_sm, props["max_shared_mem"] // kernel.metadata.shared)
            compiled[key] = (kernel, props["multiprocessor_count"] * max(per_sm, 1))
        kernel, programs = compiled[key]
        kernel[(min(programs, n_rows), 1, 1)](
            out, x, x.stride(0), out.stride(0), n_rows, n_cols, block, stages
        )

    return launch


def relative_error(got, expected) -> float:
    """max |got - expected| / max |expected|, in float64."""
    diff = (got.double() - expected).abs().max()
    return float(diff / expected.abs().max())


def writing_into(out, launch, *args):
    """A call of ``launch(*args, out)`` that gives ``out``, like torch's functions give results."""

    def run():
        launch(*args, out)
        return out

    return run


def check_and_time_on_gpu(sizes=((4096, 1024), (4096, 4096), (4096, 8192))) -> None:
    """Check against torch in float64, then time Phobos, Triton and torch (median, L2 flushed)."""
    import torch
    from triton.testing import do_bench

    triton_run = triton_softmax()
    for m, n in sizes:
        x = torch.randn(m, n, device="cuda")
        out = torch.full_like(x, float("nan"))
        runs = {
            "phobos": writing_into(out, run_softmax, x),
            "triton": writing_into(out, triton_run, x),
            "torch": lambda: torch.softmax(x, dim=1),  # noqa: B023
        }
        expected = torch.softmax(x.double(), dim=1)
        for name, run in runs.items():
            out.fill_(float("nan"))
            got = run()
            error = relative_error(got, expected)
            assert error < 1e-5 and not got.isnan().any(), f"{name}: relative error {error}"
            ms = do_bench(run, return_mode="median")
            print(f"{m}x{n} {name:7s} {2 * m * n * 4 / ms / 1e6:8.0f} GB/s  (error {error:.1e})")


def main() -> None:
    print(softmax.source)
    check_on_cpu()
    check_on_cpu(m=37, n=300)
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    if on_gpu:
        check_and_time_on_gpu()


if __name__ == "__main__":
    main()
