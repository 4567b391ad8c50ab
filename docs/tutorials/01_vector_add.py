"""Tutorial 01: vector addition.

The Phobos version of Triton's first tutorial.  A kernel runs once per block of
the grid; each block adds one window of ``BLOCK`` elements.  ``x[base:+BLOCK]``
is the window of BLOCK elements starting at ``base``.  The last block's window
hangs over the end of the tensors: its absent lanes are never read, and the store
skips them, so there is no mask to write (Triton's tutorial computes one by hand).

Run it: ``python docs/tutorials/01_vector_add.py``.  With a GPU and torch it checks
itself against torch and times Phobos, Triton and torch; without one it runs in
the CPU interpreter and checks itself against numpy.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph


# Tutorial 01: vector addition.
# Each block adds one BLOCK-long window of x and y; the last window hangs over
# the end of the tensors, and its absent lanes are neither read nor written.
@ph.kernel
@ph.autotune(BLOCK=[256, 16384])
def vector_add(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = x[base:+BLOCK] + y[base:+BLOCK]


def grid(meta):
    """One block per BLOCK elements, rounding up."""
    return (-(-meta["N"] // meta["BLOCK"]),)


def check_on_cpu(n: int = 1000) -> None:
    """The interpreter on numpy arrays, with a size that is no multiple of any BLOCK."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    vector_add[grid](x, y, out, BLOCK=256)
    np.testing.assert_array_equal(out, x + y)
    print(f"interpreter: {n} elements, out == x + y")


def triton_vector_add():
    """The same kernel in Triton, written the way Triton's tutorial 01 writes it."""
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(axis=0)
        offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x + y, mask=mask)

    def launch(x, y, out):
        n = out.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)

    return launch


def check_and_time_on_gpu(n: int = 1 << 27) -> None:
    """Check against torch on the GPU, then time Phobos, Triton and torch (median, L2 flushed)."""
    import torch
    from triton.testing import do_bench

    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    vector_add[grid](x, y, out, BLOCK=4096)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    print(f"GPU: {n} elements, out == x + y")
    triton_add = triton_vector_add()
    for name, fn in {
        "phobos": lambda: vector_add[grid](x, y, out, BLOCK=4096),
        "triton": lambda: triton_add(x, y, out),
        "torch": lambda: torch.add(x, y, out=out),
    }.items():
        ms = do_bench(fn, return_mode="median")
        print(f"{name:7s} {3 * 4 * n / ms / 1e6:8.0f} GB/s")


def main() -> None:
    print(vector_add.source)
    check_on_cpu()
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    if on_gpu:
        check_and_time_on_gpu()


if __name__ == "__main__":
    main()
