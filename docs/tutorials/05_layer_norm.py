"""Tutorial 05: layer normalisation, forward and backward.

The Phobos version of Triton's fifth tutorial.  For each row ``x`` of an
``[M, N]`` matrix, the forward pass computes

    mean = sum(x) / N,   rstd = 1 / sqrt(sum((x - mean)^2) / N + eps)
    y = (x - mean) * rstd * w + b

with ``x``, ``w``, ``b`` and ``y`` in fp16 and the statistics in fp32; it keeps
``mean`` and ``rstd`` for the backward pass.  One block normalises one row, held
in one tile of ``BLOCK_N`` columns (``BLOCK_N`` covers ``N``).  Columns past
``N`` are absent, and ``sum`` counts them as 0, so a row of any width up to
``BLOCK_N`` needs no mask.

The backward pass takes ``dy`` and gives ``dx``, ``dw`` and ``db``.  With
``xhat = (x - mean) * rstd`` and ``wdy = w * dy``, per row,

    dx = (wdy - (xhat * sum(xhat * wdy) / N + sum(wdy) / N)) * rstd

while ``dw = sum over rows of dy * xhat`` and ``db = sum over rows of dy`` add
up contributions of every row.  Triton's tutorial adds each row's contribution
into one of a few fp16 buffers under a spin lock; the lock makes it slow and
the fp16 sums lose accuracy at M=4096.  Here the work is split in two kernels,
with no atomics and no lock:

1. ``layer_norm_backward_dx``: block ``g`` takes the ``ROWS`` rows from
   ``g * ROWS``: it writes their ``dx`` and adds their ``dy * xhat`` and ``dy``
   into two tiles in registers, in fp32, then writes those partial sums as row
   ``g`` of two ``[GROUPS, N]`` fp32 buffers, ``GROUPS = ceil(M / ROWS)``.  Each
   block writes only its own rows, so blocks never race (the static race check
   proves it, since every index is ``ctx.block.x * ROWS`` plus less than ``ROWS``).
2. ``layer_norm_backward_dwdb``: each block sums a band of columns of the
   partial buffers over the ``GROUPS`` rows, in fp32, and writes ``dw`` and ``db``.

``fill(t, 0.0)`` gives the absent lanes of a tile the value 0 where they are
added into an accumulator.  Without it, an absent lane would make the
accumulator's lane absent and lose what it held: in the first kernel, the last
block's rows past ``M`` are absent whole, and in the second, the rows past
``GROUPS`` of the last chunk are.

Run it: ``python docs/tutorials/05_layer_norm.py``.  It checks the kernels in
the CPU interpreter against numpy; with a GPU and torch it also checks them
against torch in float64 and times Phobos, Triton and torch.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph


# Tutorial 05, forward: one block normalises one row, held in one BLOCK_N tile;
# the statistics are fp32, and mean and rstd are kept for the backward pass.
@ph.kernel
@ph.autotune(
    BLOCK_N={16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384}
)
def layer_norm_forward(
    x: ph.tensor[ph.f16][M, N],
    w: ph.tensor[ph.f16][N],
    b: ph.tensor[ph.f16][N],
    y: ph.tensor[ph.f16][M, N],
    mean: ph.tensor[ph.f32][M],
    rstd: ph.tensor[ph.f32][M],
    eps: ph.f32,
):
    row: ph.let = ph.ctx.block.x
    values: ph.let = ph.f32(x[row, 0:+BLOCK_N])
    mu: ph.let = ph.sum(values) / ph.f32(N)
    centered: ph.let = values - mu
    inv: ph.let = ph.rsqrt(ph.sum(centered * centered) / ph.f32(N) + eps)
    mean[row] = mu
    rstd[row] = inv
    scaled: ph.let = centered * inv * ph.f32(w[0:+BLOCK_N])
    y[row, 0:+BLOCK_N] = ph.f16(scaled + ph.f32(b[0:+BLOCK_N]))


# Backward, first kernel: block g takes the ROWS rows from g * ROWS; it writes their dx
# and its fp32 partial sums of dy * xhat and dy into row g of dw_partial and db_partial.
@ph.kernel
@ph.autotune(
    ROWS={16, 1, 2, 4, 8, 32, 64},
    BLOCK_N={16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384},
)
def layer_norm_backward_dx(
    dy: ph.tensor[ph.f16][M, N],
    x: ph.tensor[ph.f16][M, N],
    w: ph.tensor[ph.f16][N],
    mean: ph.tensor[ph.f32][M],
    rstd: ph.tensor[ph.f32][M],
    dx: ph.tensor[ph.f16][M, N],
    dw_partial: ph.tensor[ph.f32][GROUPS, N],
    db_partial: ph.tensor[ph.f32][GROUPS, N],
):
    group: ph.let = ph.ctx.block.x
    weight: ph.let = ph.f32(w[0:+BLOCK_N])
    dw_sum: ph.var = ph.zeros[ph.f32][BLOCK_N]
    db_sum: ph.var = ph.zeros[ph.f32][BLOCK_N]
    for i in range(ROWS):
        row: ph.let = group * ROWS + i
        inv: ph.let = rstd[row]
        xhat: ph.let = (ph.f32(x[row, 0:+BLOCK_N]) - mean[row]) * inv
        grad: ph.let = ph.f32(dy[row, 0:+BLOCK_N])
        wdy: ph.let = weight * grad
        c1: ph.let = ph.sum(xhat * wdy) / ph.f32(N)
        c2: ph.let = ph.sum(wdy) / ph.f32(N)
        dx[row, 0:+BLOCK_N] = ph.f16((wdy - (xhat * c1 + c2)) * inv)
        dw_sum += ph.fill(grad * xhat, 0.0)
        db_sum += ph.fill(grad, 0.0)
    dw_partial[group, 0:+BLOCK_N] = dw_sum
    db_partial[group, 0:+BLOCK_N] = db_sum


# Backward, second kernel: each block sums BLOCK_N columns of the partial sums over
# all GROUPS rows, BLOCK_G rows at a time, in fp32.
@ph.kernel
@ph.autotune(BLOCK_G={32, 16, 64}, BLOCK_N={64, 32, 128, 256})
def layer_norm_backward_dwdb(
    dw_partial: ph.tensor[ph.f32][GROUPS, N],
    db_partial: ph.tensor[ph.f32][GROUPS, N],
    dw: ph.tensor[ph.f16][N],
    db: ph.tensor[ph.f16][N],
):
    start: ph.let = ph.ctx.block.x * BLOCK_N
    dw_sum: ph.var = ph.zeros[ph.f32][BLOCK_G, BLOCK_N]
    db_sum: ph.var = ph.zeros[ph.f32][BLOCK_G, BLOCK_N]
    for first in range(0, GROUPS, BLOCK_G):
        dw_sum += ph.fill(dw_partial[first:+BLOCK_G, start:+BLOCK_N], 0.0)
        db_sum += ph.fill(db_partial[first:+BLOCK_G, start:+BLOCK_N], 0.0)
    dw[start:+BLOCK_N] = ph.f16(ph.sum(dw_sum, axis=0))
    db[start:+BLOCK_N] = ph.f16(ph.sum(db_sum, axis=0))


# The widest row one tile holds (the top of BLOCK_N's range).
MAX_TILE = 16384


def row_tile(n: int) -> int:
    """The narrowest BLOCK_N of the kernels' spaces that covers a row of n columns (12288
    columns take the 12288-wide tile, not a 16384-wide one a quarter absent)."""
    if n > MAX_TILE:
        raise ValueError(f"rows of {n} columns do not fit one tile of at most {MAX_TILE}")
    return min(t for t in layer_norm_forward.space.choices["BLOCK_N"] if t >= n)


def forward(x, w, b, y, mean, rstd, eps: float = 1e-5, **launch) -> None:
    """``y = layer_norm(x) * w + b``, keeping each row's mean and rstd."""
    m, n = x.shape
    layer_norm_forward[(m,)](x, w, b, y, mean, rstd, eps, BLOCK_N=row_tile(n), **launch)


def groups(m: int, rows: int) -> int:
    """The partial buffers' rows: one per block of the first backward kernel."""
    return -(-m // rows)


def backward(
    dy, x, w, mean, rstd, dx, dw_partial, db_partial, dw, db,
    rows=16, block_g=32, block_n=64, **launch,
) -> None:  # fmt: skip
    """``dx``, ``dw`` and ``db`` from ``dy``.

    Each block of the first kernel takes ``rows`` rows, so the partial buffers
    have ``groups(M, rows)`` rows.  ``block_g`` and ``block_n`` are the second
    kernel's tile: BLOCK_G rows of BLOCK_N columns.
    """
    m, n = x.shape
    count = groups(m, rows)
    if dw_partial.shape[0] != count or db_partial.shape[0] != count:
        raise ValueError(f"with {rows} rows per block, the partial buffers need {count} rows")
    layer_norm_backward_dx[(count,)](
        dy, x, w, mean, rstd, dx, dw_partial, db_partial, ROWS=rows, BLOCK_N=row_tile(n), **launch
    )
    layer_norm_backward_dwdb[(-(-n // block_n),)](
        dw_partial, db_partial, dw, db, BLOCK_G=block_g, BLOCK_N=block_n, **launch
    )


def reference(x, w, b, dy, eps: float = 1e-5) -> dict[str, np.ndarray]:
    """Forward and backward in float64 with numpy: y, mean, rstd, dx, dw, db."""
    x, w, b, dy = (a.astype(np.float64) for a in (x, w, b, dy))
    n = x.shape[1]
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + eps)
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / n
    c2 = wdy.sum(axis=1, keepdims=True) / n
    return {
        "y": xhat * w + b,
        "mean": mean,
        "rstd": rstd,
        "dx": (wdy - (xhat * c1 + c2)) * rstd[:, None],
        "dw": (dy * xhat).sum(axis=0),
        "db": dy.sum(axis=0),
    }


def relative_error(got, expected) -> float:
    """max |got - expected| / max |expected| (numpy or torch arrays), in float64."""
    if hasattr(got, "double"):
        diff, scale = (got.double() - expected).abs().max(), expected.abs().max()
        return float(diff / scale)
    got = np.asarray(got, dtype=np.float64)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def check_on_cpu(m: int = 37, n: int = 100, rows: int = 4) -> None:
    """Forward and backward in the interpreter, sizes no multiple of any block, outputs NaN."""
    rng = np.random.default_rng(0)
    x = (2 * rng.standard_normal((m, n)) + 0.5).astype(np.float16)
    w = rng.uniform(0.5, 1.5, n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    dy = rng.standard_normal((m, n)).astype(np.float16)
    expected = reference(x, w, b, dy)

    def poisoned(shape, dtype):
        return np.full(shape, np.nan, dtype)

    y, mean, rstd = poisoned((m, n), np.float16), poisoned(m, np.float32), poisoned(m, np.float32)
    forward(x, w, b, y, mean, rstd, race_check=True)
    dx, dw, db = poisoned((m, n), np.float16), poisoned(n, np.float16), poisoned(n, np.float16)
    partial_rows = groups(m, rows)
    partials = poisoned((partial_rows, n), np.float32), poisoned((partial_rows, n), np.float32)
    backward(dy, x, w, mean, rstd, dx, *partials, dw, db, rows=rows, race_check=True)
    got = {"y": y, "mean": mean, "rstd": rstd, "dx": dx, "dw": dw, "db": db}
    for name, value in got.items():
        error = relative_error(value, expected[name])
        assert error < 1e-2, f"{name}: relative error {error:.1e}"
    print(f"interpreter: layer norm forward and backward on {m}x{n} match numpy (float64)")


def triton_layer_norm():
    """Forward and backward in Triton, written the way Triton's tutorial 05 writes them.

    One difference: the partial dW/dB buffers the backward adds into under its
    locks are fp32 here (the tutorial's are fp16, and its db misses a 1e-2
    relative tolerance at M=4096), so both versions pass the same check.
    Returns ``(forward(x, w, b, eps) -> (y, mean, rstd), backward(dy, x, w, mean, rstd)
    -> (dx, dw, db))``.
    """
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        X += row * stride
        Y += row * stride
        total = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, N, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            total += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        mean = tl.sum(total, axis=0) / N
        squares = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, N, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
            a = tl.where(cols < N, a - mean, 0.0)
            squares += a * a
        rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            mask = cols < N
            w = tl.load(W + cols, mask=mask)
            b = tl.load(B + cols, mask=mask)
            a = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(Y + cols, (a - mean) * rstd * w + b, mask=mask)

    @triton.jit
    def bwd_dx_kernel(
        DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
        GROUP: tl.constexpr, BLOCK: tl.constexpr,
    ):  # fmt: skip
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        X += row * stride
        DY += row * stride
        DX += row * stride
        lock_id = row % GROUP
        Lock += lock_id
        Count = Lock + GROUP
        DW = DW + lock_id * N + cols
        DB = DB + lock_id * N + cols
        x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
        dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        xhat = tl.where(mask, (x - mean) * rstd, 0.0)
        wdy = tl.where(mask, w * dy, 0.0)
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + cols, dx, mask=mask)
        partial_dw = dy * xhat
        partial_db = dy
        while tl.atomic_cas(Lock, 0, 1) == 1:
            pass
        count = tl.load(Count)
        if count == 0:
            tl.atomic_xchg(Count, 1)
        else:
            partial_dw += tl.load(DW, mask=mask)
            partial_db += tl.load(DB, mask=mask)
        tl.store(DW, partial_dw, mask=mask)
        tl.store(DB, partial_db, mask=mask)
        tl.atomic_xchg(Lock, 0)

    @triton.jit
    def bwd_dwdb_kernel(
        DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
    ):
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for i in range(0, M, BLOCK_M):
            rows = i + tl.arange(0, BLOCK_M)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            offsets = rows[:, None] * N + cols[None, :]
            dw += tl.load(DW + offsets, mask=mask, other=0.0)
            db += tl.load(DB + offsets, mask=mask, other=0.0)
        tl.store(FINAL_DW + cols, tl.sum(dw, axis=0), mask=cols < N)
        tl.store(FINAL_DB + cols, tl.sum(db, axis=0), mask=cols < N)

    def block_and_warps(x):
        block = min(65536 // x.element_size(), triton.next_power_of_2(x.shape[1]))
        return block, min(max(block // 256, 1), 8)

    def forward_launch(x, w, b, eps):
        m, n = x.shape
        y = torch.empty_like(x)
        mean = torch.empty(m, dtype=torch.float32, device=x.device)
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        block, warps = block_and_warps(x)
        fwd_kernel[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, eps, BLOCK=block, num_warps=warps)
        return y, mean, rstd

    def backward_launch(dy, x, w, mean, rstd):
        m, n = x.shape
        group = 64
        if n <= 8192:
            group = 96
        if n <= 4096:
            group = 128
        if n <= 1024:
            group = 256
        locks = torch.zeros(2 * group, dtype=torch.int32, device=x.device)
        partial_dw = torch.zeros((group, n), dtype=torch.float32, device=x.device)
        partial_db = torch.zeros((group, n), dtype=torch.float32, device=x.device)
        dx = torch.empty_like(dy)
        dw = torch.empty_like(w)
        db = torch.empty_like(w)
        block, warps = block_and_warps(x)
        bwd_dx_kernel[(m,)](
            dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, x.stride(0), n,
            GROUP=group, BLOCK=block, num_warps=warps,
        )  # fmt: skip
        bwd_dwdb_kernel[(triton.cdiv(n, 128),)](
            partial_dw, partial_db, dw, db, group, n, BLOCK_M=32, BLOCK_N=128
        )
        return dx, dw, db

    return forward_launch, backward_launch


def check_and_time_on_gpu(m: int = 4096, sizes=(4096, 8192, 15872)) -> None:
    """Check against torch in float64, then time Phobos, Triton and torch (median, L2 flushed)."""

    triton_forward, triton_backward = triton_layer_norm()
    for n in sizes:
        check_and_time_size(m, n, 16, triton_forward, triton_backward)


def gpu_inputs(m: int, n: int):
    """Random fp16 x, w, b and dy on the GPU (never zeros), as Triton's tutorial makes them."""
    import torch

    x = -2.3 + 0.5 * torch.randn(m, n, device="cuda", dtype=torch.float16)
    w = torch.rand(n, device="cuda", dtype=torch.float16)
    b = torch.rand(n, device="cuda", dtype=torch.float16)
    return x, w, b, 0.1 * torch.randn_like(x)


def torch_layer_norm(x, w, b, dy, eps: float = 1e-5) -> dict:
    """torch's layer norm, forward and backward: y, dx, dw, db (float64 inputs: the reference)."""
    import torch

    leaves = [t.detach().requires_grad_() for t in (x, w, b)]
    y = torch.nn.functional.layer_norm(leaves[0], (x.shape[1],), leaves[1], leaves[2], eps)
    dx, dw, db = torch.autograd.grad(y, leaves, dy, retain_graph=True)
    return {"y": y.detach(), "dx": dx, "dw": dw, "db": db, "graph": (y, leaves)}


def phobos_buffers(m: int, n: int, rows: int) -> dict:
    """Every output of ``forward`` and ``backward`` (``rows`` rows per block), NaN-poisoned."""
    import torch

    def nan(*shape, dtype=torch.float16):
        return torch.full(shape, float("nan"), device="cuda", dtype=dtype)

    return {
        "y": nan(m, n),
        "mean": nan(m, dtype=torch.float32),
        "rstd": nan(m, dtype=torch.float32),
        "dx": nan(m, n),
        "dw_partial": nan(groups(m, rows), n, dtype=torch.float32),
        "db_partial": nan(groups(m, rows), n, dtype=torch.float32),
        "dw": nan(n),
        "db": nan(n),
    }


def check_and_time_size(m: int, n: int, rows: int, triton_forward, triton_backward) -> None:
    import torch
    from triton.testing import do_bench

    x, w, b, dy = gpu_inputs(m, n)
    expected = torch_layer_norm(x.double(), w.double(), b.double(), dy.double())
    out = phobos_buffers(m, n, rows)
    partials = (out["dw_partial"], out["db_partial"])

    def phobos_forward():
        forward(x, w, b, out["y"], out["mean"], out["rstd"])

    def phobos_backward():
        outputs = (out["dx"], *partials, out["dw"], out["db"])
        backward(dy, x, w, out["mean"], out["rstd"], *outputs, rows=rows)

    phobos_forward()
    phobos_backward()
    y, mean, rstd = triton_forward(x, w, b, 1e-5)
    results = {
        "phobos": out,
        "triton": {"y": y, **dict(zip(("dx", "dw", "db"), triton_backward(dy, x, w, mean, rstd)))},
        "torch": torch_layer_norm(x, w, b, dy),
    }
    for system, got in results.items():
        for name in ("y", "dx", "dw", "db"):
            error = relative_error(got[name], expected[name])
            failed = error >= 1e-2 or bool(got[name].isnan().any())
            print(
                f"N={n} {system:7s} {name}: relative error {error:.1e}{'  FAILS' if failed else ''}"
            )
    torch_y, leaves = results["torch"]["graph"]
    runs = {
        "phobos": (phobos_forward, phobos_backward),
        "triton": (
            lambda: triton_forward(x, w, b, 1e-5),
            lambda: triton_backward(dy, x, w, mean, rstd),
        ),
        "torch": (
            lambda: torch.nn.functional.layer_norm(x, (n,), w, b, 1e-5),
            lambda: torch.autograd.grad(torch_y, leaves, dy, retain_graph=True),
        ),
    }
    for system, (fwd, bwd) in runs.items():
        fwd_gbps = (2 * m * n + 2 * n) * 2 / do_bench(fwd, return_mode="median") / 1e6
        bwd_gbps = 3 * m * n * 2 / do_bench(bwd, return_mode="median") / 1e6
        print(f"N={n} {system:7s} forward {fwd_gbps:7.0f} GB/s  backward {bwd_gbps:7.0f} GB/s")


def main() -> None:
    print(layer_norm_forward.source)
    check_on_cpu()
    check_on_cpu(m=37, n=300, rows=8)
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    if on_gpu:
        check_and_time_on_gpu()


if __name__ == "__main__":
    main()
