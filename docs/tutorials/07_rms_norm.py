"""Tutorial 07: RMS norm, forward and backward, in f16 and bf16.

Root-mean-square normalisation (the norm of LLaMA-style transformers).  For each
row ``x`` of an ``[M, N]`` matrix, the forward pass computes

    rstd = 1 / sqrt(sum(x * x) / N + eps),   y = x * rstd * w

with ``x``, ``w`` and ``y`` in f16 or bf16 and the statistics in f32; it keeps
``rstd`` for the backward pass.  The language has no kernels generic over an
element type, so each kernel is written once per type (``rms_norm_forward_f16``,
``rms_norm_forward_bf16``, ...); the two share their arithmetic through the
``fn``s ``inverse_rms``, ``row_gradient`` and ``input_gradient``, and the
wrappers below pick the kernel from the arrays' dtype.

The forward kernel takes ``ROWS`` rows a block.  When a row fits one ``BLOCK_N``
tile (``N <= BLOCK_N``, a block-uniform condition), it is read once and held in
registers; columns past ``N`` and rows past ``M`` are absent, so ``sum`` counts
them as 0 and the stores skip them.  A wider row takes the ``else`` branch: one
pass over its ``BLOCK_N``-wide chunks adds up the squares (``fill`` gives the
sum of a row past ``M`` the value 0, so the running sum never goes absent), a
second pass reads the chunks again and writes ``y``.  So every variant of the
space is right for every ``N``, and the tuner is free to choose any of them.

The backward pass takes ``dy`` and gives ``dx`` and ``dw``.  With
``xhat = x * rstd``, ``wdy = w * dy`` and each row's ``c = sum(xhat * wdy) / N``,

    dx = (wdy - xhat * c) * rstd

while ``dw = sum over rows of dy * xhat`` adds up every row's contribution.  As
in tutorial 05 there are no atomics: blocks write partial sums of ``dw`` into
the rows of an f32 buffer ``dw_partial [GROUPS, N]`` (the caller's;
``partial_rows`` gives two blocks an SM), and a last kernel adds them up.  There
are two paths, and ``backward`` picks one from the width of a row:

1. A row one tile holds (``N <= MAX_TILE``, 16384): ``rms_norm_backward_*``
   runs ``GROUPS`` blocks.  Block ``g`` takes the chunks of ``CHUNK`` (16) rows
   from row ``g * CHUNK``, ``GROUPS * CHUNK`` rows apart (a grid-stride loop,
   which the static race check proves race-free), ``ROWS`` rows at a time; it
   reads each row once, writes its ``dx`` and adds its ``dy * xhat`` into an f32
   tile in registers, whose column sums become row ``g`` of ``dw_partial``.
   ``GROUPS`` is not ``M / ROWS`` as in tutorial 05, so ``ROWS`` is left to the
   tuner, and the partial sums are as few rows as the grid has blocks.  The rows
   a block adds up depend on ``CHUNK``, never on ``ROWS`` (which divides it):
   the tuner compares every output of the variants, ``dw_partial`` too, and a
   grid-stride loop of ``ROWS`` rows would give each ``ROWS`` other partial sums
   (all right, since their total is the same), which it would take for variants
   that disagree.  This kernel is right only with a tile that holds the row (a
   narrower ``BLOCK_N`` leaves columns of ``dx`` unwritten), and it says so:
   ``kernel.requires(one_tile_requirement)`` names the variants that cannot be
   right for a launch, which the tuner prunes before compiling them, so it
   chooses ``ROWS`` and ``BLOCK_N`` among the tiles that hold the row (at
   N = 768 both 768 and 1024; the power of two may be the faster).
2. A wider row (or a ``BLOCK_N`` given narrower than the row) cannot be held
   in registers, and neither can a block's partial sums of every column of it.
   ``rms_norm_backward_c_*`` computes each row's ``c`` first, ``ROWS`` rows a
   block, ``BLOCK_N`` columns at a time, into an f32 ``[M]`` buffer ``backward``
   allocates.  Then ``rms_norm_backward_chunked_*`` runs a ``(GROUPS, bands)``
   grid: block ``(g, b)`` takes band ``b`` of ``BLOCK_N`` columns of the rows
   block ``g`` of the first path takes, writes their ``dx`` from ``c`` and holds
   the band's partial sums of ``dw`` in registers, which become that band of
   row ``g`` of ``dw_partial``.  No block reads what another wrote in the same
   launch (each kernel's inputs were written by the one before), and every
   variant of both spaces is right for every ``N``.  It reads ``x`` and ``dy``
   twice: about ``5 * M * N`` elements move where the first path moves
   ``3 * M * N`` (plus ``2 * GROUPS * N`` f32 partial sums on either path).
3. ``rms_norm_backward_dw_*``, after either: each block sums a band of columns
   of ``dw_partial`` over the ``GROUPS`` rows, in f32, and rounds once to
   ``w``'s type.

``backward_launches`` lists the kernels ``backward`` launches for given arrays,
with the names it fixes.  The wrappers launch the kernels with
``kernel[grid](...)``, so a GPU launch tunes every name they leave free at its
first call for a shape; a launch on numpy arrays runs the interpreter with
those names at each space's first values (the forward's ``ROWS=1``,
``BLOCK_N=16384``).

A tuning result serves every later launch with the same key, and the default
key rounds ``N`` up to a power of two: a forward tuned at ``N = 3000`` may
choose ``BLOCK_N = 3072``, which at ``N = 4096`` would read each row twice (and
the one-tile backward, tuned with ``BLOCK_N`` free, would leave columns
unwritten).  So the one-tile kernels' key (``row_tile_key``) holds the narrowest
tile that covers the row instead: launches share a result only when the same
tiles hold their rows.  The wide kernels, right at every width, keep the
default key.

Run it: ``python docs/tutorials/07_rms_norm.py``.  It checks the kernels in the
CPU interpreter against numpy (f16 and bf16; bf16 numpy arrays need
``ml_dtypes``); with a GPU and torch it also checks them against torch in
float64 and times Phobos, Triton and torch.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph

# Tutorial 07: RMS norm, y = x * rstd * w with rstd = 1 / sqrt(mean(x * x) + eps), forward and
# backward, for f16 and bf16 rows (a kernel per element type; the fns hold the arithmetic).
# The backward's row kernels give each block chunks of CHUNK rows, a grid's worth apart.
CHUNK: ph.const = 16


# rstd of each row from the sum of its squares.
@ph.func
def inverse_rms(squares: ph.f32, n: ph.f32, eps: ph.f32) -> ph.f32:
    return ph.rsqrt(squares / n + eps)


# dx from xhat = x * rstd, wdy = w * dy, the row's c = mean(xhat * wdy) and rstd.
@ph.func
def row_gradient(xhat: ph.f32, wdy: ph.f32, c: ph.f32, inv: ph.f32) -> ph.f32:
    return (wdy - xhat * c) * inv


# dx of ROWS whole rows, each held in one tile: c from the row's own sum.
@ph.func
def input_gradient(xhat: ph.f32, wdy: ph.f32, inv: ph.f32, n: ph.f32) -> ph.f32:
    return row_gradient(xhat, wdy, ph.sum(xhat * wdy, axis=1)[:, None] / n, inv)


# Forward: ROWS rows a block. A row that fits one BLOCK_N tile is read once and held in
# registers; a wider row is read twice, BLOCK_N columns at a time (its squares, then y).
@ph.kernel
@ph.autotune(
    ROWS={1, 2, 4, 8},
    BLOCK_N={16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288},
)
def rms_norm_forward_f16(
    x: ph.tensor[ph.f16][M, N],
    w: ph.tensor[ph.f16][N],
    y: ph.tensor[ph.f16][M, N],
    rstd: ph.tensor[ph.f32][M],
    eps: ph.f32,
):
    first: ph.let = ph.ctx.block.x * ROWS
    if N <= BLOCK_N:
        values: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N])
        inv: ph.let = inverse_rms(ph.sum(values * values, axis=1), ph.f32(N), eps)
        rstd[first:+ROWS] = inv
        y[first:+ROWS, 0:+BLOCK_N] = ph.f16(values * inv[:, None] * ph.f32(w[0:+BLOCK_N]))
    else:
        squares: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            squares += ph.fill(ph.sum(chunk * chunk, axis=1), 0.0)
        inv: ph.let = inverse_rms(squares, ph.f32(N), eps)
        rstd[first:+ROWS] = inv
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            y[first:+ROWS, start:+BLOCK_N] = ph.f16(
                chunk * inv[:, None] * ph.f32(w[start:+BLOCK_N])
            )


# The forward for bf16 rows: the same program with bf16 tensors.
@ph.kernel
@ph.autotune(
    ROWS={1, 2, 4, 8},
    BLOCK_N={16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288},
)
def rms_norm_forward_bf16(
    x: ph.tensor[ph.bf16][M, N],
    w: ph.tensor[ph.bf16][N],
    y: ph.tensor[ph.bf16][M, N],
    rstd: ph.tensor[ph.f32][M],
    eps: ph.f32,
):
    first: ph.let = ph.ctx.block.x * ROWS
    if N <= BLOCK_N:
        values: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N])
        inv: ph.let = inverse_rms(ph.sum(values * values, axis=1), ph.f32(N), eps)
        rstd[first:+ROWS] = inv
        y[first:+ROWS, 0:+BLOCK_N] = ph.bf16(values * inv[:, None] * ph.f32(w[0:+BLOCK_N]))
    else:
        squares: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            squares += ph.fill(ph.sum(chunk * chunk, axis=1), 0.0)
        inv: ph.let = inverse_rms(squares, ph.f32(N), eps)
        rstd[first:+ROWS] = inv
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            y[first:+ROWS, start:+BLOCK_N] = ph.bf16(
                chunk * inv[:, None] * ph.f32(w[start:+BLOCK_N])
            )


# Backward, first kernel: block g takes the chunks of CHUNK rows from g * CHUNK, a grid's worth
# apart, ROWS rows at a time (so which rows it adds up does not depend on ROWS), each row in one
# BLOCK_N tile. It writes their dx and adds their dy * xhat into a [ROWS, BLOCK_N] f32 tile,
# whose column sums become row g of dw_partial. Right only where the tile holds the row
# (N <= BLOCK_N): the kernel requires it (one_tile_requirement), and rows wider
# than every tile take the wide backward below (rms_norm_backward_c_*, then _chunked_*).
@ph.kernel
@ph.autotune(
    ROWS={1, 2, 4, 8},
    BLOCK_N={16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288},
)
def rms_norm_backward_f16(
    dy: ph.tensor[ph.f16][M, N],
    x: ph.tensor[ph.f16][M, N],
    w: ph.tensor[ph.f16][N],
    rstd: ph.tensor[ph.f32][M],
    dx: ph.tensor[ph.f16][M, N],
    dw_partial: ph.tensor[ph.f32][GROUPS, N],
):
    group: ph.let = ph.ctx.block.x
    dw_sum: ph.var = ph.zeros[ph.f32][ROWS, BLOCK_N]
    for chunk in range(group * CHUNK, M, ph.ctx.grid.x * CHUNK):
        for i in range(0, CHUNK, ROWS):
            first: ph.let = chunk + i
            inv: ph.let = rstd[first:+ROWS][:, None]
            xhat: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N]) * inv
            grad: ph.let = ph.f32(dy[first:+ROWS, 0:+BLOCK_N])
            wdy: ph.let = grad * ph.f32(w[0:+BLOCK_N])
            dw_sum += ph.fill(grad * xhat, 0.0)
            dx[first:+ROWS, 0:+BLOCK_N] = ph.f16(input_gradient(xhat, wdy, inv, ph.f32(N)))
    dw_partial[group, 0:+BLOCK_N] = ph.sum(dw_sum, axis=0)


# The backward's first kernel for bf16 rows.
@ph.kernel
@ph.autotune(
    ROWS={1, 2, 4, 8},
    BLOCK_N={16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288},
)
def rms_norm_backward_bf16(
    dy: ph.tensor[ph.bf16][M, N],
    x: ph.tensor[ph.bf16][M, N],
    w: ph.tensor[ph.bf16][N],
    rstd: ph.tensor[ph.f32][M],
    dx: ph.tensor[ph.bf16][M, N],
    dw_partial: ph.tensor[ph.f32][GROUPS, N],
):
    group: ph.let = ph.ctx.block.x
    dw_sum: ph.var = ph.zeros[ph.f32][ROWS, BLOCK_N]
    for chunk in range(group * CHUNK, M, ph.ctx.grid.x * CHUNK):
        for i in range(0, CHUNK, ROWS):
            first: ph.let = chunk + i
            inv: ph.let = rstd[first:+ROWS][:, None]
            xhat: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N]) * inv
            grad: ph.let = ph.f32(dy[first:+ROWS, 0:+BLOCK_N])
            wdy: ph.let = grad * ph.f32(w[0:+BLOCK_N])
            dw_sum += ph.fill(grad * xhat, 0.0)
            dx[first:+ROWS, 0:+BLOCK_N] = ph.bf16(input_gradient(xhat, wdy, inv, ph.f32(N)))
    dw_partial[group, 0:+BLOCK_N] = ph.sum(dw_sum, axis=0)


# Backward for rows wider than one tile, first kernel: each row's c = mean(xhat * wdy), ROWS
# rows a block, BLOCK_N columns at a time (sum(xhat * wdy) is rstd times sum(x * wdy)).
@ph.kernel
@ph.autotune(ROWS={2, 1, 4}, BLOCK_N={1024, 256, 512, 2048, 4096})
def rms_norm_backward_c_f16(
    dy: ph.tensor[ph.f16][M, N],
    x: ph.tensor[ph.f16][M, N],
    w: ph.tensor[ph.f16][N],
    rstd: ph.tensor[ph.f32][M],
    c: ph.tensor[ph.f32][M],
):
    first: ph.let = ph.ctx.block.x * ROWS
    dots: ph.var = ph.zeros[ph.f32][ROWS, BLOCK_N]
    for start in range(0, N, BLOCK_N):
        wdy: ph.let = ph.f32(dy[first:+ROWS, start:+BLOCK_N]) * ph.f32(w[start:+BLOCK_N])
        dots += ph.fill(ph.f32(x[first:+ROWS, start:+BLOCK_N]) * wdy, 0.0)
    c[first:+ROWS] = ph.sum(dots, axis=1) * rstd[first:+ROWS] / ph.f32(N)


# The wide backward's second kernel: dx, and dw's partial sums, in bands of BLOCK_N columns.
# Block (g, b) takes bands b, b + ctx.grid.y, ...; for each it takes the rows block g of the
# one-tile kernel takes, ROWS at a time, and adds their dy * xhat into a [ROWS, BLOCK_N] f32
# tile, whose column sums become that band of row g of dw_partial: a block holds one band's
# partial sums at a time, however wide the row.
@ph.kernel
@ph.autotune(ROWS={1, 2, 4}, BLOCK_N={1024, 256, 512, 2048, 4096})
def rms_norm_backward_chunked_f16(
    dy: ph.tensor[ph.f16][M, N],
    x: ph.tensor[ph.f16][M, N],
    w: ph.tensor[ph.f16][N],
    rstd: ph.tensor[ph.f32][M],
    c: ph.tensor[ph.f32][M],
    dx: ph.tensor[ph.f16][M, N],
    dw_partial: ph.tensor[ph.f32][GROUPS, N],
):
    group: ph.let = ph.ctx.block.x
    for start in range(ph.ctx.block.y * BLOCK_N, N, ph.ctx.grid.y * BLOCK_N):
        weight: ph.let = ph.f32(w[start:+BLOCK_N])
        dw_sum: ph.var = ph.zeros[ph.f32][ROWS, BLOCK_N]
        for chunk in range(group * CHUNK, M, ph.ctx.grid.x * CHUNK):
            for i in range(0, CHUNK, ROWS):
                first: ph.let = chunk + i
                inv: ph.let = rstd[first:+ROWS][:, None]
                xhat: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N]) * inv
                grad: ph.let = ph.f32(dy[first:+ROWS, start:+BLOCK_N])
                dw_sum += ph.fill(grad * xhat, 0.0)
                wdy: ph.let = grad * weight
                dx[first:+ROWS, start:+BLOCK_N] = ph.f16(
                    row_gradient(xhat, wdy, c[first:+ROWS][:, None], inv)
                )
        dw_partial[group, start:+BLOCK_N] = ph.sum(dw_sum, axis=0)


# The wide backward's first kernel for bf16 rows.
@ph.kernel
@ph.autotune(ROWS={2, 1, 4}, BLOCK_N={1024, 256, 512, 2048, 4096})
def rms_norm_backward_c_bf16(
    dy: ph.tensor[ph.bf16][M, N],
    x: ph.tensor[ph.bf16][M, N],
    w: ph.tensor[ph.bf16][N],
    rstd: ph.tensor[ph.f32][M],
    c: ph.tensor[ph.f32][M],
):
    first: ph.let = ph.ctx.block.x * ROWS
    dots: ph.var = ph.zeros[ph.f32][ROWS, BLOCK_N]
    for start in range(0, N, BLOCK_N):
        wdy: ph.let = ph.f32(dy[first:+ROWS, start:+BLOCK_N]) * ph.f32(w[start:+BLOCK_N])
        dots += ph.fill(ph.f32(x[first:+ROWS, start:+BLOCK_N]) * wdy, 0.0)
    c[first:+ROWS] = ph.sum(dots, axis=1) * rstd[first:+ROWS] / ph.f32(N)


# The wide backward's second kernel for bf16 rows.
@ph.kernel
@ph.autotune(ROWS={1, 2, 4}, BLOCK_N={1024, 256, 512, 2048, 4096})
def rms_norm_backward_chunked_bf16(
    dy: ph.tensor[ph.bf16][M, N],
    x: ph.tensor[ph.bf16][M, N],
    w: ph.tensor[ph.bf16][N],
    rstd: ph.tensor[ph.f32][M],
    c: ph.tensor[ph.f32][M],
    dx: ph.tensor[ph.bf16][M, N],
    dw_partial: ph.tensor[ph.f32][GROUPS, N],
):
    group: ph.let = ph.ctx.block.x
    for start in range(ph.ctx.block.y * BLOCK_N, N, ph.ctx.grid.y * BLOCK_N):
        weight: ph.let = ph.f32(w[start:+BLOCK_N])
        dw_sum: ph.var = ph.zeros[ph.f32][ROWS, BLOCK_N]
        for chunk in range(group * CHUNK, M, ph.ctx.grid.x * CHUNK):
            for i in range(0, CHUNK, ROWS):
                first: ph.let = chunk + i
                inv: ph.let = rstd[first:+ROWS][:, None]
                xhat: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N]) * inv
                grad: ph.let = ph.f32(dy[first:+ROWS, start:+BLOCK_N])
                dw_sum += ph.fill(grad * xhat, 0.0)
                wdy: ph.let = grad * weight
                dx[first:+ROWS, start:+BLOCK_N] = ph.bf16(
                    row_gradient(xhat, wdy, c[first:+ROWS][:, None], inv)
                )
        dw_partial[group, start:+BLOCK_N] = ph.sum(dw_sum, axis=0)


# Backward, last kernel (after either path): each block sums BLOCK_N columns of dw_partial
# over all GROUPS rows, BLOCK_G rows at a time, in f32, and rounds the sum once to w's type.
@ph.kernel
@ph.autotune(BLOCK_G={32, 16, 64}, BLOCK_N={64, 32, 128, 256})
def rms_norm_backward_dw_f16(dw_partial: ph.tensor[ph.f32][GROUPS, N], dw: ph.tensor[ph.f16][N]):
    start: ph.let = ph.ctx.block.x * BLOCK_N
    dw_sum: ph.var = ph.zeros[ph.f32][BLOCK_G, BLOCK_N]
    for first in range(0, GROUPS, BLOCK_G):
        dw_sum += ph.fill(dw_partial[first:+BLOCK_G, start:+BLOCK_N], 0.0)
    dw[start:+BLOCK_N] = ph.f16(ph.sum(dw_sum, axis=0))


# The backward's last kernel for bf16 weights.
@ph.kernel
@ph.autotune(BLOCK_G={32, 16, 64}, BLOCK_N={64, 32, 128, 256})
def rms_norm_backward_dw_bf16(dw_partial: ph.tensor[ph.f32][GROUPS, N], dw: ph.tensor[ph.bf16][N]):
    start: ph.let = ph.ctx.block.x * BLOCK_N
    dw_sum: ph.var = ph.zeros[ph.f32][BLOCK_G, BLOCK_N]
    for first in range(0, GROUPS, BLOCK_G):
        dw_sum += ph.fill(dw_partial[first:+BLOCK_G, start:+BLOCK_N], 0.0)
    dw[start:+BLOCK_N] = ph.bf16(ph.sum(dw_sum, axis=0))


FORWARD = {"f16": rms_norm_forward_f16, "bf16": rms_norm_forward_bf16}
BACKWARD = {"f16": rms_norm_backward_f16, "bf16": rms_norm_backward_bf16}
BACKWARD_C = {"f16": rms_norm_backward_c_f16, "bf16": rms_norm_backward_c_bf16}
BACKWARD_CHUNKED = {"f16": rms_norm_backward_chunked_f16, "bf16": rms_norm_backward_chunked_bf16}
BACKWARD_DW = {"f16": rms_norm_backward_dw_f16, "bf16": rms_norm_backward_dw_bf16}

# The widest row the one-tile backward holds (the top of BLOCK_N's range); wider rows take
# the wide backward.
MAX_TILE = 16384


def power_of_two_above(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def covering_tile(n: int) -> int | None:
    """The narrowest BLOCK_N of the row kernels' space that holds a row of n columns (3000
    columns take the 3072-wide tile), or None when the row is wider than every tile."""
    tiles = rms_norm_backward_f16.space.choices["BLOCK_N"]
    return min((t for t in tiles if t >= n), default=None)


def row_tile_key(extents: dict, dtypes: dict) -> dict:
    """The shape part of the one-tile kernels' tuning key: the narrowest tile of the space
    that holds a row, where the default key has N rounded up to a power of two.

    A choice serves every launch with its key.  The forward tuned at N=3000 may take
    BLOCK_N=3072, which at N=4096 (the same power of two) would read each row twice in
    chunks; the one-tile backward, when a caller leaves BLOCK_N to the tuner, would leave
    columns unwritten there.  So rows share a result only when the same tiles hold them
    (N=2049 to 3072 take one, 3073 to 4096 the next); wider rows key on N's power of two.
    M and GROUPS round up as the
    default key rounds them.  The dtypes are the kernel's own (one kernel per type).
    """
    n = extents["N"]
    tile = covering_tile(n)
    key = {k: power_of_two_above(v) for k, v in extents.items() if k != "N"}
    return {**key, "N": power_of_two_above(n)} if tile is None else {**key, "row_tile": tile}


for _kernel in (*FORWARD.values(), *BACKWARD.values()):
    _kernel.tuning_key(row_tile_key)


def one_tile_requirement(values: dict, extents: dict) -> str | None:
    """Why a variant of the one-tile backward cannot be right: its tile is narrower than
    the row (the columns past it would stay unwritten)."""
    if values["BLOCK_N"] >= extents["N"]:
        return None
    return f"BLOCK_N={values['BLOCK_N']} is narrower than a row (N={extents['N']})"


for _kernel in BACKWARD.values():
    _kernel.requires(one_tile_requirement)


def element_type(array) -> str:
    """``f16`` or ``bf16`` for a numpy (ml_dtypes for bf16) or torch array."""
    name = str(array.dtype).removeprefix("torch.")
    types = {"float16": "f16", "bfloat16": "bf16"}
    if name not in types:
        raise TypeError(f"RMS norm takes float16 or bfloat16 arrays, not {name}")
    return types[name]


def row_blocks(meta) -> tuple[int]:
    """The forward's grid, and the wide backward's first: one block per ROWS rows."""
    return (-(-meta["M"] // meta["ROWS"]),)


def partial_blocks(meta) -> tuple[int]:
    """The one-tile backward's grid: one block per row of dw_partial."""
    return (meta["GROUPS"],)


def band_blocks(meta) -> tuple[int, int]:
    """The wide backward's second grid: one block per row of dw_partial and band of BLOCK_N
    columns, so a few rows (M small) still give the GPU many blocks."""
    return (meta["GROUPS"], -(-meta["N"] // meta["BLOCK_N"]))


def column_blocks(meta) -> tuple[int]:
    """The backward's last grid: one block per BLOCK_N columns."""
    return (-(-meta["N"] // meta["BLOCK_N"]),)


def forward(x, w, y, rstd, eps: float = 1e-6, **launch) -> None:
    """``y = x / sqrt(mean(x * x, axis=-1) + eps) * w``, keeping each row's rstd (f32).

    ``launch`` passes launch options (``race_check=True``, ``stream=``) and may fix
    compile-time names (``ROWS=4``); by default the tuner chooses them.
    """
    FORWARD[element_type(x)][row_blocks](x, w, y, rstd, eps, **launch)


def partial_rows(x) -> int:
    """Rows of ``dw_partial`` (blocks of the backward's first kernel) for ``x``: two blocks
    an SM on a GPU (torch tensors), four in the interpreter, never more than ``x``'s rows."""
    blocks = 4
    device = getattr(x, "device", None)
    if getattr(device, "type", None) == "cuda":
        import torch

        blocks = 2 * torch.cuda.get_device_properties(device).multi_processor_count
    return max(1, min(blocks, x.shape[0]))


def row_buffer(x):
    """An f32 buffer of one value per row of ``x``, where ``x`` is (numpy, or torch on its
    device): the wide backward's ``c``."""
    if isinstance(x, np.ndarray):
        return np.empty(x.shape[0], np.float32)
    import torch

    return torch.empty(x.shape[0], dtype=torch.float32, device=x.device)


def backward_launches(
    dy, x, w, rstd, dx, dw, dw_partial, dw_names: dict | None = None, **launch
) -> list[tuple]:
    """The kernels ``backward`` launches for these arrays, in order, each as ``(kernel,
    grid, args, names)``: the compile-time names it fixes, and launch options.

    A row one tile holds takes ``rms_norm_backward_*``, which is wrong with a narrower
    tile: it says so (``one_tile_requirement``), so the tuner prunes those and chooses
    ``ROWS`` and a ``BLOCK_N`` among the tiles that hold the row.  A wider row, or a
    ``BLOCK_N`` given narrower than the row, takes the wide backward: ``rms_norm_backward_c_*`` (each row's c, into an f32 buffer
    allocated here), then ``rms_norm_backward_chunked_*``; every variant of both is right
    for every width.  Either path ends with ``rms_norm_backward_dw_*``.
    """
    kind = element_type(x)
    n = x.shape[1]
    options = {k: v for k, v in launch.items() if not k.isupper()}
    given = launch.pop("BLOCK_N", None)
    tile = covering_tile(n) if given is None else given
    last = (BACKWARD_DW[kind], column_blocks, (dw_partial, dw), {**options, **(dw_names or {})})
    if tile is not None and tile >= n:
        names = launch if given is None else {**launch, "BLOCK_N": given}
        return [(BACKWARD[kind], partial_blocks, (dy, x, w, rstd, dx, dw_partial), names), last]
    names = launch if tile is None else {**launch, "BLOCK_N": tile}
    c = row_buffer(x)
    return [
        (BACKWARD_C[kind], row_blocks, (dy, x, w, rstd, c), names),
        (BACKWARD_CHUNKED[kind], band_blocks, (dy, x, w, rstd, c, dx, dw_partial), names),
        last,
    ]


def backward(dy, x, w, rstd, dx, dw, dw_partial, dw_names: dict | None = None, **launch) -> None:
    """``dx`` and ``dw`` from ``dy``, with ``rstd`` from ``forward``, for rows of any width
    (the kernels: ``backward_launches``).

    ``dw_partial`` is an f32 ``[GROUPS, N]`` buffer (``GROUPS = partial_rows(x)``, say);
    each row of it is written before it is read, so it needs no initial value.
    Compile-time names in ``launch`` (``ROWS=4``) fix the row kernels' (both of the wide
    path's), ``dw_names`` (``{"BLOCK_G": 16}``) the last kernel's; the tuner chooses the
    rest.  Launch options (``race_check=True``, ``stream=``) go to every kernel.
    """
    for kernel, grid, args, names in backward_launches(
        dy, x, w, rstd, dx, dw, dw_partial, dw_names, **launch
    ):
        kernel[grid](*args, **names)


def reference(x, w, dy, eps: float = 1e-6) -> dict[str, np.ndarray]:
    """Forward and backward in float64 with numpy: y, rstd, dx, dw."""
    x, w, dy = (np.asarray(a, dtype=np.float64) for a in (x, w, dy))
    n = x.shape[1]
    rstd = 1.0 / np.sqrt((x * x).mean(axis=1) + eps)
    xhat = x * rstd[:, None]
    wdy = w * dy
    c = (xhat * wdy).sum(axis=1, keepdims=True) / n
    return {
        "y": xhat * w,
        "rstd": rstd,
        "dx": (wdy - xhat * c) * rstd[:, None],
        "dw": (dy * xhat).sum(axis=0),
    }


def relative_error(got, expected) -> float:
    """max |got - expected| / max |expected| (numpy or torch arrays), in float64."""
    if hasattr(got, "double"):
        diff, scale = (got.double() - expected).abs().max(), expected.abs().max()
        return float(diff / scale)
    got = np.asarray(got, dtype=np.float64)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


# Relative errors (to the largest |value|) allowed against float64: twice what rounding one
# result to f16 or bf16 can cost (half a unit in the last place of a value just above a power
# of two: 2^-11 and 2^-8 of the largest); the f32 sums before it add far less.  rstd is f32.
TOLERANCE = {"f16": 1e-3, "bf16": 8e-3, "rstd": 1e-5}


def numpy_dtype(kind: str) -> np.dtype:
    """numpy's dtype for f16 or bf16 (``ml_dtypes.bfloat16``, which numpy lacks)."""
    if kind == "f16":
        return np.dtype(np.float16)
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def cpu_inputs(m: int, n: int, kind: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Random x, w and dy of one type (never zeros), w around 1 as a trained norm's is."""
    rng = np.random.default_rng(seed)
    dtype = numpy_dtype(kind)
    return {
        "x": (2 * rng.standard_normal((m, n)) + 0.5).astype(dtype),
        "w": rng.uniform(0.5, 1.5, n).astype(dtype),
        "dy": rng.standard_normal((m, n)).astype(dtype),
    }


def run_on_cpu(
    data: dict, groups: int | None = None, forward_names: dict | None = None, **launch
) -> dict[str, np.ndarray]:
    """Forward then backward in the interpreter, every output NaN-poisoned first;
    ``forward_names`` fixes the forward's compile-time names, ``launch`` the backward's."""
    x, w, dy = data["x"], data["w"], data["dy"]
    m, n = x.shape
    out = {
        "y": np.full((m, n), np.nan, x.dtype),
        "rstd": np.full(m, np.nan, np.float32),
        "dx": np.full((m, n), np.nan, x.dtype),
        "dw": np.full(n, np.nan, x.dtype),
        "dw_partial": np.full((groups or partial_rows(x), n), np.nan, np.float32),
    }
    options = {k: v for k, v in launch.items() if not k.isupper()}
    forward(x, w, out["y"], out["rstd"], **options, **(forward_names or {}))
    backward(dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"], **launch)
    return out


def check_on_cpu(
    m: int = 37, n: int = 300, kinds=("f16", "bf16"), forward_names: dict | None = None
) -> None:
    """Forward and backward in the interpreter against numpy, sizes no tile divides."""
    for kind in kinds:
        data = cpu_inputs(m, n, kind)
        expected = reference(**data)
        got = run_on_cpu(data, forward_names=forward_names, race_check=True)
        for name in ("y", "rstd", "dx", "dw"):
            error = relative_error(got[name], expected[name])
            bound = TOLERANCE["rstd" if name == "rstd" else kind]
            assert error < bound, f"{kind} {name}: relative error {error:.1e} (bound {bound})"
        print(f"interpreter: {kind} RMS norm forward and backward on {m}x{n} match numpy (float64)")


def triton_rms_norm():
    """Forward and backward in Triton, written the way Triton's tutorial 05 writes layer norm
    (its mean and bias taken out): the forward loops over a row in BLOCK chunks, the backward
    holds a row in one block and adds its dW into one of GROUP buffers under a spin lock, and
    a second kernel sums the buffers.  As in tutorial 05 here, the buffers are f32 (the
    tutorial's are f16).  Returns ``(forward(x, w, eps) -> (y, rstd), backward(dy, x, w, rstd)
    -> (dx, dw))``.
    """
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def fwd_kernel(X, Y, W, Rstd, stride, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        X += row * stride
        Y += row * stride
        squares = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, N, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
            squares += a * a
        rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
        tl.store(Rstd + row, rstd)
        for off in range(0, N, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            mask = cols < N
            w = tl.load(W + cols, mask=mask).to(tl.float32)
            a = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(Y + cols, (a * rstd * w).to(Y.dtype.element_ty), mask=mask)

    @triton.jit
    def bwd_dx_kernel(
        DX, DY, DW, X, W, Rstd, Lock, stride, N, GROUP: tl.constexpr, BLOCK: tl.constexpr
    ):
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
        x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
        dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        rstd = tl.load(Rstd + row)
        xhat = x * rstd
        wdy = tl.where(mask, w * dy, 0.0)
        c = tl.sum(xhat * wdy, axis=0) / N
        dx = (wdy - xhat * c) * rstd
        tl.store(DX + cols, dx.to(DX.dtype.element_ty), mask=mask)
        partial_dw = dy * xhat
        while tl.atomic_cas(Lock, 0, 1) == 1:
            pass
        count = tl.load(Count)
        if count == 0:
            tl.atomic_xchg(Count, 1)
        else:
            partial_dw += tl.load(DW, mask=mask)
        tl.store(DW, partial_dw, mask=mask)
        tl.atomic_xchg(Lock, 0)

    @triton.jit
    def bwd_dw_kernel(DW, FINAL_DW, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for i in range(0, M, BLOCK_M):
            rows = i + tl.arange(0, BLOCK_M)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            dw += tl.load(DW + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        total = tl.sum(dw, axis=0)
        tl.store(FINAL_DW + cols, total.to(FINAL_DW.dtype.element_ty), mask=cols < N)

    def block_and_warps(x):
        block = min(65536 // x.element_size(), triton.next_power_of_2(x.shape[1]))
        return block, min(max(block // 256, 1), 8)

    def forward_launch(x, w, eps):
        m, n = x.shape
        y = torch.empty_like(x)
        rstd = torch.empty(m, dtype=torch.float32, device=x.device)
        block, warps = block_and_warps(x)
        fwd_kernel[(m,)](x, y, w, rstd, x.stride(0), n, eps, BLOCK=block, num_warps=warps)
        return y, rstd

    def backward_launch(dy, x, w, rstd):
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
        dx = torch.empty_like(dy)
        dw = torch.empty_like(w)
        block, warps = block_and_warps(x)
        bwd_dx_kernel[(m,)](
            dx, dy, partial_dw, x, w, rstd, locks, x.stride(0), n,
            GROUP=group, BLOCK=block, num_warps=warps,
        )  # fmt: skip
        bwd_dw_kernel[(triton.cdiv(n, 128),)](partial_dw, dw, group, n, BLOCK_M=32, BLOCK_N=128)
        return dx, dw

    return forward_launch, backward_launch


def gpu_inputs(m: int, n: int, dtype):
    """Random x, w and dy of ``dtype`` on the GPU (never zeros)."""
    import torch

    x = -2.3 + 0.5 * torch.randn(m, n, device="cuda", dtype=dtype)
    w = 0.5 + torch.rand(n, device="cuda", dtype=dtype)
    return x, w, 0.1 * torch.randn_like(x)


def torch_rms_norm(x, w, dy, eps: float = 1e-6) -> dict:
    """``torch.nn.functional.rms_norm``, forward and backward: y, dx, dw (float64 inputs: the
    reference), and the graph, to time the backward again."""
    import torch

    leaves = [t.detach().requires_grad_() for t in (x, w)]
    y = torch.nn.functional.rms_norm(leaves[0], (x.shape[1],), leaves[1], eps)
    dx, dw = torch.autograd.grad(y, leaves, dy, retain_graph=True)
    return {"y": y.detach(), "dx": dx, "dw": dw, "graph": (y, leaves)}


def eager_rms_norm(x, w, dy, eps: float = 1e-6) -> dict:
    """RMS norm as a model writes it in torch's eager operations (f32 statistics, no fused
    kernel, no torch.compile), forward and backward by autograd."""
    import torch

    def norm(a, weight):
        squares = a.float().pow(2).mean(-1, keepdim=True)
        return (a.float() * torch.rsqrt(squares + eps)).to(a.dtype) * weight

    leaves = [t.detach().requires_grad_() for t in (x, w)]
    y = norm(*leaves)
    dx, dw = torch.autograd.grad(y, leaves, dy, retain_graph=True)
    return {"y": y.detach(), "dx": dx, "dw": dw, "graph": (y, leaves), "forward": norm}


def phobos_buffers(x) -> dict:
    """Every output of ``forward`` and ``backward`` for ``x``, NaN-poisoned."""
    import torch

    m, n = x.shape

    def nan(*shape, dtype=x.dtype):
        return torch.full(shape, float("nan"), device=x.device, dtype=dtype)

    return {
        "y": nan(m, n),
        "rstd": nan(m, dtype=torch.float32),
        "dx": nan(m, n),
        "dw": nan(n),
        "dw_partial": nan(partial_rows(x), n, dtype=torch.float32),
    }


def check_and_time_on_gpu(m: int = 4096, sizes=(1024, 4096, 8192, 32768)) -> None:
    """Check against torch in float64, then time Phobos, Triton and torch (median, L2 flushed)."""
    import torch
    from triton.testing import do_bench

    triton_forward, triton_backward = triton_rms_norm()
    for dtype in (torch.float16, torch.bfloat16):
        kind = element_type(torch.empty(0, dtype=dtype))
        for n in sizes:
            x, w, dy = gpu_inputs(m, n, dtype)
            expected = torch_rms_norm(x.double(), w.double(), dy.double())
            out = phobos_buffers(x)

            def phobos_forward():
                forward(x, w, out["y"], out["rstd"])  # noqa: B023

            def phobos_backward():
                backward(dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"])  # noqa: B023

            phobos_forward()
            phobos_backward()
            y, rstd = triton_forward(x, w, 1e-6)
            dx, dw = triton_backward(dy, x, w, rstd)
            results = {
                "phobos": out,
                "triton": {"y": y, "dx": dx, "dw": dw},
                "torch": torch_rms_norm(x, w, dy),
            }
            for system, got in results.items():
                for name in ("y", "dx", "dw"):
                    error = relative_error(got[name], expected[name])
                    bad = not error < TOLERANCE[kind] or bool(got[name].isnan().any())
                    print(f"{kind} N={n} {system:7s} {name}: error {error:.1e}{'  FAILS' * bad}")
                    assert not (bad and system == "phobos"), f"phobos {kind} {name} at N={n}"
            torch_y, leaves = results["torch"]["graph"]
            runs = {
                "phobos": (phobos_forward, phobos_backward),
                "triton": (
                    lambda: triton_forward(x, w, 1e-6),  # noqa: B023
                    lambda: triton_backward(dy, x, w, rstd),  # noqa: B023
                ),
                "torch": (
                    lambda: torch.nn.functional.rms_norm(x, (n,), w, 1e-6),  # noqa: B023
                    lambda: torch.autograd.grad(torch_y, leaves, dy, retain_graph=True),  # noqa: B023
                ),
            }
            for system, (fwd, bwd) in runs.items():
                fwd_gbps = (2 * m * n + n) * x.element_size() / do_bench(fwd, return_mode="median")
                bwd_gbps = 3 * m * n * x.element_size() / do_bench(bwd, return_mode="median")
                print(
                    f"{kind} N={n} {system:7s} forward {fwd_gbps / 1e6:7.0f} GB/s  "
                    f"backward {bwd_gbps / 1e6:7.0f} GB/s"
                )


def main() -> None:
    print(rms_norm_forward_bf16.source)
    check_on_cpu()
    check_on_cpu(m=9, n=3000, kinds=("bf16",))
    check_on_cpu(m=5, n=300, forward_names={"ROWS": 2, "BLOCK_N": 128})  # forward in chunks
    check_on_cpu(m=3, n=20000, kinds=("bf16",))  # wider than every tile: the wide backward
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    if on_gpu:
        check_and_time_on_gpu()


if __name__ == "__main__":
    main()
