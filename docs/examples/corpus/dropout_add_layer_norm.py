"""Fused dropout, residual add and layer norm, forward, in f16 and bf16.

A pre-norm transformer block ends with ``h = residual + dropout(x)`` (the new residual
stream) and normalises it for the next block, ``y = layer_norm(h) * w + b``.  This kernel
does both in one pass over the rows of ``[M, N]`` matrices:

    keep = rand(seed, r * N + c) >= p
    h    = T(residual + where(keep, x / (1 - p), 0))          (T: f16 or bf16)
    mean = sum(h) / N,   rstd = 1 / sqrt(sum((h - mean)^2) / N + eps)
    y    = T((h - mean) * rstd * w + b)

for the element at row ``r``, column ``c``, with ``x``, ``residual``, ``w``, ``b``, ``h`` and
``y`` of one type ``T``, the arithmetic in f32 and ``mean`` and ``rstd`` kept (f32) for a
backward pass.  ``y`` normalises ``h`` as stored, so the fused kernel computes what
``layer_norm(residual + dropout(x))`` computes in ``T`` unfused.  ``p = 0`` keeps every
element (``rand`` may give 0, hence ``>=``); ``p = 1`` drops every one.

``rand`` is counter-based (docs/language.md, section 5): element ``(r, c)``'s draw depends
on the seed and ``r * N + c`` alone, so the mask does not depend on the tile names, and a
backward pass draws it again from the seed instead of storing it.  ``h`` is made of one
correctly rounded f32 division, one f32 addition and one rounding to ``T``, never an
``fma``: it is the same to the bit in the CPU interpreter, on the GPU and in numpy
(``definition`` below).  ``y``, ``mean`` and ``rstd`` come from sums whose order differs
between the interpreter and a GPU, so they agree to rounding.

The kernel takes ``ROWS`` rows a block.  A row that fits one ``BLOCK_N`` tile (``N <=
BLOCK_N``) is held in registers; a wider row goes in ``BLOCK_N`` chunks three times: the
first pass draws the mask, stores ``h`` and sums it, the second reads ``h`` back and sums the
squares about the mean, the third writes ``y``.  The block reads what it stored (the
compiler orders a block's accesses to a tensor it both writes and reads), so the mask is
drawn once.  Every variant is right for every width and the tuner may choose any.

``forward(x, residual, w, b, h, y, mean, rstd, p, seed)`` launches ``kernel[grid](...)``
with the tile names left to the tuner; on numpy arrays it runs the CPU interpreter.  Run
``python docs/examples/corpus/dropout_add_layer_norm.py`` to check it there against numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import phobos.lang as ph


# residual + dropout(x): x / (1 - p) where the draw u is at least p, else 0; in f32, with
# no product that could become an fma, so the sum is the same everywhere.
@ph.func
def dropout_add(x: ph.f32, residual: ph.f32, u: ph.f32, p: ph.f32) -> ph.f32:
    return residual + ph.where(u >= p, x / (1.0 - p), 0.0)


# Forward: ROWS rows a block. A row that fits one BLOCK_N tile is held in registers; a wider
# row goes in BLOCK_N chunks: h (stored, summed), then its squares about the mean, then y.
@ph.kernel
@ph.autotune(
    ROWS={1, 2, 4, 8},
    BLOCK_N={16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288},
)
def dropout_add_layer_norm_f16(
    x: ph.tensor[ph.f16][M, N],
    residual: ph.tensor[ph.f16][M, N],
    w: ph.tensor[ph.f16][N],
    b: ph.tensor[ph.f16][N],
    h: ph.tensor[ph.f16][M, N],
    y: ph.tensor[ph.f16][M, N],
    mean: ph.tensor[ph.f32][M],
    rstd: ph.tensor[ph.f32][M],
    p: ph.f32,
    seed: ph.i64,
    eps: ph.f32,
):
    first: ph.let = ph.ctx.block.x * ROWS
    row_offsets: ph.let = (first + ph.arange(ROWS))[:, None] * N
    if N <= BLOCK_N:
        u: ph.let = ph.rand(seed, row_offsets + ph.arange(BLOCK_N)[None, :])
        xs: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N])
        summed: ph.let = ph.f16(dropout_add(xs, ph.f32(residual[first:+ROWS, 0:+BLOCK_N]), u, p))
        h[first:+ROWS, 0:+BLOCK_N] = summed
        values: ph.let = ph.f32(summed)
        mu: ph.let = ph.sum(values, axis=1) / ph.f32(N)
        centered: ph.let = values - mu[:, None]
        inv: ph.let = ph.rsqrt(ph.sum(centered * centered, axis=1) / ph.f32(N) + eps)
        mean[first:+ROWS] = mu
        rstd[first:+ROWS] = inv
        scaled: ph.let = centered * inv[:, None] * ph.f32(w[0:+BLOCK_N])
        y[first:+ROWS, 0:+BLOCK_N] = ph.f16(scaled + ph.f32(b[0:+BLOCK_N]))
    else:
        total: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            u: ph.let = ph.rand(seed, row_offsets + (start + ph.arange(BLOCK_N))[None, :])
            xs: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            rs: ph.let = ph.f32(residual[first:+ROWS, start:+BLOCK_N])
            summed: ph.let = ph.f16(dropout_add(xs, rs, u, p))
            h[first:+ROWS, start:+BLOCK_N] = summed
            total += ph.fill(ph.sum(ph.f32(summed), axis=1), 0.0)
        mu: ph.let = total / ph.f32(N)
        squares: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            centered: ph.let = ph.f32(h[first:+ROWS, start:+BLOCK_N]) - mu[:, None]
            squares += ph.fill(ph.sum(centered * centered, axis=1), 0.0)
        inv: ph.let = ph.rsqrt(squares / ph.f32(N) + eps)
        mean[first:+ROWS] = mu
        rstd[first:+ROWS] = inv
        for start in range(0, N, BLOCK_N):
            centered: ph.let = ph.f32(h[first:+ROWS, start:+BLOCK_N]) - mu[:, None]
            scaled: ph.let = centered * inv[:, None] * ph.f32(w[start:+BLOCK_N])
            y[first:+ROWS, start:+BLOCK_N] = ph.f16(scaled + ph.f32(b[start:+BLOCK_N]))


# The same for bf16 rows.
@ph.kernel
@ph.autotune(
    ROWS={1, 2, 4, 8},
    BLOCK_N={16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288},
)
def dropout_add_layer_norm_bf16(
    x: ph.tensor[ph.bf16][M, N],
    residual: ph.tensor[ph.bf16][M, N],
    w: ph.tensor[ph.bf16][N],
    b: ph.tensor[ph.bf16][N],
    h: ph.tensor[ph.bf16][M, N],
    y: ph.tensor[ph.bf16][M, N],
    mean: ph.tensor[ph.f32][M],
    rstd: ph.tensor[ph.f32][M],
    p: ph.f32,
    seed: ph.i64,
    eps: ph.f32,
):
    first: ph.let = ph.ctx.block.x * ROWS
    row_offsets: ph.let = (first + ph.arange(ROWS))[:, None] * N
    if N <= BLOCK_N:
        u: ph.let = ph.rand(seed, row_offsets + ph.arange(BLOCK_N)[None, :])
        xs: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N])
        summed: ph.let = ph.bf16(dropout_add(xs, ph.f32(residual[first:+ROWS, 0:+BLOCK_N]), u, p))
        h[first:+ROWS, 0:+BLOCK_N] = summed
        values: ph.let = ph.f32(summed)
        mu: ph.let = ph.sum(values, axis=1) / ph.f32(N)
        centered: ph.let = values - mu[:, None]
        inv: ph.let = ph.rsqrt(ph.sum(centered * centered, axis=1) / ph.f32(N) + eps)
        mean[first:+ROWS] = mu
        rstd[first:+ROWS] = inv
        scaled: ph.let = centered * inv[:, None] * ph.f32(w[0:+BLOCK_N])
        y[first:+ROWS, 0:+BLOCK_N] = ph.bf16(scaled + ph.f32(b[0:+BLOCK_N]))
    else:
        total: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            u: ph.let = ph.rand(seed, row_offsets + (start + ph.arange(BLOCK_N))[None, :])
            xs: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            rs: ph.let = ph.f32(residual[first:+ROWS, start:+BLOCK_N])
            summed: ph.let = ph.bf16(dropout_add(xs, rs, u, p))
            h[first:+ROWS, start:+BLOCK_N] = summed
            total += ph.fill(ph.sum(ph.f32(summed), axis=1), 0.0)
        mu: ph.let = total / ph.f32(N)
        squares: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            centered: ph.let = ph.f32(h[first:+ROWS, start:+BLOCK_N]) - mu[:, None]
            squares += ph.fill(ph.sum(centered * centered, axis=1), 0.0)
        inv: ph.let = ph.rsqrt(squares / ph.f32(N) + eps)
        mean[first:+ROWS] = mu
        rstd[first:+ROWS] = inv
        for start in range(0, N, BLOCK_N):
            centered: ph.let = ph.f32(h[first:+ROWS, start:+BLOCK_N]) - mu[:, None]
            scaled: ph.let = centered * inv[:, None] * ph.f32(w[start:+BLOCK_N])
            y[first:+ROWS, start:+BLOCK_N] = ph.bf16(scaled + ph.f32(b[start:+BLOCK_N]))


KERNELS = {"f16": dropout_add_layer_norm_f16, "bf16": dropout_add_layer_norm_bf16}

# Relative errors (to the largest |value|) allowed against float64: y is rounded once to
# f16 or bf16, so twice that rounding's cost (2^-11 and 2^-8 of the largest value); mean and
# rstd are f32 sums of N terms, far inside 1e-5.  h is checked to the bit (`definition`).
TOLERANCE = {"f16": 1e-3, "bf16": 8e-3, "stats": 1e-5}

# A numpy array (the launch runs in the CPU interpreter) or a GPU array (torch, CuPy).
Array = Any


def element_type(array: Array) -> str:
    """``f16`` or ``bf16`` for a numpy (ml_dtypes for bf16) or torch array."""
    name = str(array.dtype).removeprefix("torch.")
    types = {"float16": "f16", "bfloat16": "bf16"}
    if name not in types:
        raise TypeError(f"dropout + add + layer norm takes float16 or bfloat16, not {name}")
    return types[name]


def row_blocks(meta: dict[str, int]) -> tuple[int]:
    """One block per ROWS rows, rounding up."""
    return (-(-meta["M"] // meta["ROWS"]),)


def forward(
    x: Array,
    residual: Array,
    w: Array,
    b: Array,
    h: Array,
    y: Array,
    mean: Array,
    rstd: Array,
    p: float,
    seed: int,
    eps: float = 1e-5,
    **launch: Any,
) -> None:
    """``h = residual + dropout(x, p)`` (the mask from ``seed``) and ``y = layer_norm(h) * w +
    b``, keeping each row's ``mean`` and ``rstd`` (f32).  ``launch`` passes launch options or
    fixes compile-time names (``ROWS=4``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout's p is a probability, not {p}")
    kernel = KERNELS[element_type(x)]
    kernel[row_blocks](x, residual, w, b, h, y, mean, rstd, p, seed, eps, **launch)


def keep_mask(seed: int, p: float, m: int, n: int, rows: np.ndarray | None = None) -> np.ndarray:
    """The elements kept (rows ``rows`` of an ``[m, n]`` matrix, all by default), from the
    definition of ``rand``: ``rand(seed, r * n + c) >= p`` in f32."""
    from phobos.compile.interp.philox import rand

    rows = np.arange(m) if rows is None else np.asarray(rows)
    offsets = rows[:, None].astype(np.int64) * n + np.arange(n)
    return rand(np.int64(seed), offsets) >= np.float32(p)


def definition(x: np.ndarray, residual: np.ndarray, p: float, keep: np.ndarray) -> np.ndarray:
    """``h`` in numpy's f32 as the kernel computes it (rows of ``x`` and ``residual`` matching
    ``keep``), rounded to their type: the kernel's ``h`` is this, to the bit."""
    with np.errstate(divide="ignore", invalid="ignore"):  # p = 1: every element is dropped
        scaled = np.asarray(x, np.float32) / (np.float32(1) - np.float32(p))
    total = np.asarray(residual, np.float32) + np.where(keep, scaled, np.float32(0))
    return total.astype(np.asarray(x).dtype)


def reference(
    h: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5
) -> dict[str, np.ndarray]:
    """Layer norm of ``h`` in float64 with numpy: y, mean, rstd."""
    h, w, b = (np.asarray(a, np.float64) for a in (h, w, b))
    mean = h.mean(axis=1)
    rstd = 1.0 / np.sqrt(((h - mean[:, None]) ** 2).mean(axis=1) + eps)
    return {"y": (h - mean[:, None]) * rstd[:, None] * w + b, "mean": mean, "rstd": rstd}


def relative_error(got: Array, expected: Array) -> float:
    """max |got - expected| / max |expected| (numpy or torch arrays), in float64."""
    if hasattr(got, "double"):
        return float((got.double() - expected).abs().max() / expected.abs().max())
    got = np.asarray(got, dtype=np.float64)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def numpy_dtype(kind: str) -> np.dtype:
    """numpy's dtype for f16 or bf16 (``ml_dtypes.bfloat16``, which numpy lacks)."""
    if kind == "f16":
        return np.dtype(np.float16)
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def cpu_inputs(m: int, n: int, kind: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Random x, residual, w and b of one type; the residual's rows have means off 0."""
    rng = np.random.default_rng(seed)
    dtype = numpy_dtype(kind)
    return {
        "x": rng.standard_normal((m, n)).astype(dtype),
        "residual": (rng.standard_normal((m, n)) + rng.uniform(-2, 2, (m, 1))).astype(dtype),
        "w": rng.uniform(0.5, 1.5, n).astype(dtype),
        "b": (0.1 * rng.standard_normal(n)).astype(dtype),
    }


def run_on_cpu(
    data: dict[str, np.ndarray], p: float, seed: int, **launch: Any
) -> dict[str, np.ndarray]:
    """The forward in the interpreter, every output NaN-poisoned first."""
    x = data["x"]
    m, n = x.shape
    out = {
        "h": np.full((m, n), np.nan, x.dtype),
        "y": np.full((m, n), np.nan, x.dtype),
        "mean": np.full(m, np.nan, np.float32),
        "rstd": np.full(m, np.nan, np.float32),
    }
    forward(**data, **out, p=p, seed=seed, **launch)
    return out


def check(got: dict[str, Array], data: dict[str, np.ndarray], p: float, seed: int) -> None:
    """Assert ``got`` (numpy arrays) is right: ``h`` to the bit against ``definition``, ``y``,
    ``mean`` and ``rstd`` against numpy's float64 layer norm of that ``h``."""
    kind = element_type(data["x"])
    m, n = data["x"].shape
    want_h = definition(data["x"], data["residual"], p, keep_mask(seed, p, m, n))
    assert np.array_equal(got["h"].view(np.uint16), want_h.view(np.uint16)), "h differs"
    expected = reference(want_h, data["w"], data["b"])
    for name, want in expected.items():
        bound = TOLERANCE["stats" if name != "y" else kind]
        error = relative_error(got[name], want)
        assert error < bound, f"{kind} {name}: relative error {error:.1e} (bound {bound})"


def check_on_cpu(m: int = 37, n: int = 300, p: float = 0.25, seed: int = 1234, **launch: Any):
    """The forward in the interpreter against numpy, sizes no tile divides."""
    for kind in ("f16", "bf16"):
        data = cpu_inputs(m, n, kind)
        check(run_on_cpu(data, p, seed, **launch), data, p, seed)
        print(f"interpreter: {kind} dropout + add + layer norm on {m}x{n} matches numpy")


if __name__ == "__main__":
    check_on_cpu()
    check_on_cpu(m=5, n=3000, ROWS=2, BLOCK_N=1024)  # rows in chunks
