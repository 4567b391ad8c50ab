"""Row-wise int8 quantisation (absmax scale per row) and dequantisation, f16 and bf16.

For each row ``x`` of an ``[M, N]`` matrix (LLM.int8's and SmoothQuant's per-token
activation quantisation):

    absmax = max(|x|),   scale = absmax / 127,   q = round(x * (127 / absmax))  (an i8)

and back, ``x' = q * scale``.  ``round`` is to the nearest integer, ties to even (``ph.round``,
``torch.round``); ``|x * 127 / absmax| <= 127`` keeps ``q`` in [-127, 127].  A row of zeros
has ``absmax = 0``: its ``scale`` is 0 and its ``q`` is 0, so it dequantises to zeros.  Inputs
are taken finite.  ``127 / absmax`` is one correctly rounded f32 division and ``x`` times it
one f32 product, so ``q`` is the same to the bit in the interpreter, on the GPU and in numpy's
or torch's f32 (a float64 computation differs only where ``x * 127 / absmax`` is within
f32's rounding of a tie, by one).

``quantize_*`` takes ``ROWS`` rows a block.  A row that fits one ``BLOCK_N`` tile
(``N <= BLOCK_N``) is read once; a wider row is read twice in ``BLOCK_N`` chunks, for its
absmax and then for ``q``, so every variant is right for every width and the tuner may
choose any.  ``dequantize_*`` is elementwise on ``[ROWS, BLOCK_N]`` tiles of a 2-D grid.
Columns past ``N`` and rows past ``M`` are absent throughout.

``quantize(x, q, scale)`` and ``dequantize(q, scale, out)`` launch ``kernel[grid](...)`` with
the tile names left to the tuner; on numpy arrays they run the CPU interpreter.  Run
``python docs/examples/corpus/int8_quant.py`` to check both in the interpreter against numpy
in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import phobos.lang as ph

QMAX: ph.const = 127.0


# 127 / absmax of each row, or 0 for a row of zeros (whose q is then 0, not NaN).
@ph.func
def inverse_scale(absmax: ph.f32) -> ph.f32:
    return ph.where(absmax > 0.0, QMAX / absmax, 0.0)


# Quantise: ROWS rows a block; a row that fits one BLOCK_N tile is read once, a wider row
# twice in BLOCK_N chunks (its absmax, then q).
@ph.kernel
@ph.autotune(ROWS={1, 2, 4, 8}, BLOCK_N={16384, 128, 256, 512, 1024, 2048, 4096, 8192})
def quantize_f16(
    x: ph.tensor[ph.f16][M, N], q: ph.tensor[ph.i8][M, N], scale: ph.tensor[ph.f32][M]
):
    first: ph.let = ph.ctx.block.x * ROWS
    if N <= BLOCK_N:
        values: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N])
        absmax: ph.let = ph.max(ph.abs(values), axis=1)
        scale[first:+ROWS] = absmax / QMAX
        inv: ph.let = inverse_scale(absmax)[:, None]
        q[first:+ROWS, 0:+BLOCK_N] = ph.i8(ph.round(values * inv))
    else:
        absmax: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.abs(ph.f32(x[first:+ROWS, start:+BLOCK_N]))
            absmax = ph.maximum(absmax, ph.fill(ph.max(chunk, axis=1), 0.0))
        scale[first:+ROWS] = absmax / QMAX
        inv: ph.let = inverse_scale(absmax)[:, None]
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            q[first:+ROWS, start:+BLOCK_N] = ph.i8(ph.round(chunk * inv))


# The same for bf16 rows.
@ph.kernel
@ph.autotune(ROWS={1, 2, 4, 8}, BLOCK_N={16384, 128, 256, 512, 1024, 2048, 4096, 8192})
def quantize_bf16(
    x: ph.tensor[ph.bf16][M, N], q: ph.tensor[ph.i8][M, N], scale: ph.tensor[ph.f32][M]
):
    first: ph.let = ph.ctx.block.x * ROWS
    if N <= BLOCK_N:
        values: ph.let = ph.f32(x[first:+ROWS, 0:+BLOCK_N])
        absmax: ph.let = ph.max(ph.abs(values), axis=1)
        scale[first:+ROWS] = absmax / QMAX
        inv: ph.let = inverse_scale(absmax)[:, None]
        q[first:+ROWS, 0:+BLOCK_N] = ph.i8(ph.round(values * inv))
    else:
        absmax: ph.var = ph.zeros[ph.f32][ROWS]
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.abs(ph.f32(x[first:+ROWS, start:+BLOCK_N]))
            absmax = ph.maximum(absmax, ph.fill(ph.max(chunk, axis=1), 0.0))
        scale[first:+ROWS] = absmax / QMAX
        inv: ph.let = inverse_scale(absmax)[:, None]
        for start in range(0, N, BLOCK_N):
            chunk: ph.let = ph.f32(x[first:+ROWS, start:+BLOCK_N])
            q[first:+ROWS, start:+BLOCK_N] = ph.i8(ph.round(chunk * inv))


# Dequantise: out = q * scale of its row, a [ROWS, BLOCK_N] tile a block, rounded once.
@ph.kernel
@ph.autotune(ROWS={4, 1, 2, 8, 16}, BLOCK_N={1024, 128, 256, 512, 2048, 4096})
def dequantize_f16(
    q: ph.tensor[ph.i8][M, N], scale: ph.tensor[ph.f32][M], out: ph.tensor[ph.f16][M, N]
):
    first: ph.let = ph.ctx.block.x * ROWS
    start: ph.let = ph.ctx.block.y * BLOCK_N
    values: ph.let = ph.f32(q[first:+ROWS, start:+BLOCK_N])
    out[first:+ROWS, start:+BLOCK_N] = ph.f16(values * scale[first:+ROWS][:, None])


# The same, giving bf16.
@ph.kernel
@ph.autotune(ROWS={4, 1, 2, 8, 16}, BLOCK_N={1024, 128, 256, 512, 2048, 4096})
def dequantize_bf16(
    q: ph.tensor[ph.i8][M, N], scale: ph.tensor[ph.f32][M], out: ph.tensor[ph.bf16][M, N]
):
    first: ph.let = ph.ctx.block.x * ROWS
    start: ph.let = ph.ctx.block.y * BLOCK_N
    values: ph.let = ph.f32(q[first:+ROWS, start:+BLOCK_N])
    out[first:+ROWS, start:+BLOCK_N] = ph.bf16(values * scale[first:+ROWS][:, None])


QUANTIZE = {"f16": quantize_f16, "bf16": quantize_bf16}
DEQUANTIZE = {"f16": dequantize_f16, "bf16": dequantize_bf16}

# scale is one f32 division of an exact absmax: within 2^-24 of itself, checked to 1e-6.
# Dequantised values are q * scale rounded once to f16 or bf16: relative to the largest
# |value|, twice that rounding's cost (2^-11 and 2^-8).  q is checked exactly (test_corpus).
TOLERANCE = {"scale": 1e-6, "f16": 1e-3, "bf16": 8e-3}

# A numpy array (the launch runs in the CPU interpreter) or a GPU array (torch, CuPy).
Array = Any


def element_type(array: Array) -> str:
    """``f16`` or ``bf16`` for a numpy (ml_dtypes for bf16) or torch array."""
    name = str(array.dtype).removeprefix("torch.")
    types = {"float16": "f16", "bfloat16": "bf16"}
    if name not in types:
        raise TypeError(f"int8 quantisation takes float16 or bfloat16 rows, not {name}")
    return types[name]


def row_blocks(meta: dict[str, int]) -> tuple[int]:
    """Quantise: one block per ROWS rows."""
    return (-(-meta["M"] // meta["ROWS"]),)


def tile_blocks(meta: dict[str, int]) -> tuple[int, int]:
    """Dequantise: one block per [ROWS, BLOCK_N] tile."""
    return (-(-meta["M"] // meta["ROWS"]), -(-meta["N"] // meta["BLOCK_N"]))


def quantize(x: Array, q: Array, scale: Array, **launch: Any) -> None:
    """``q`` (i8 ``[M, N]``) and ``scale`` (f32 ``[M]``) of the rows of ``x``; ``launch`` passes
    launch options or fixes compile-time names (``ROWS=4``)."""
    QUANTIZE[element_type(x)][row_blocks](x, q, scale, **launch)


def dequantize(q: Array, scale: Array, out: Array, **launch: Any) -> None:
    """``out = q * scale[:, None]`` in ``out``'s type (f16 or bf16)."""
    DEQUANTIZE[element_type(out)][tile_blocks](q, scale, out, **launch)


def reference(x: np.ndarray) -> dict[str, np.ndarray]:
    """In float64 with numpy: ``q`` (as float64, unrounded: ``x * 127 / absmax``), its
    rounding ``q_round``, ``scale`` and the dequantised rows ``x_deq`` of ``q_round``."""
    x = np.asarray(x, np.float64)
    absmax = np.abs(x).max(axis=1, keepdims=True)
    safe = np.where(absmax > 0, absmax, 1.0)
    exact = np.where(absmax > 0, x * 127.0 / safe, 0.0)
    rounded = np.round(exact)
    scale = absmax[:, 0] / 127.0
    return {"q": exact, "q_round": rounded, "scale": scale, "x_deq": rounded * scale[:, None]}


def definition(x: np.ndarray) -> dict[str, np.ndarray]:
    """``q`` and ``scale`` computed in f32 with numpy as the kernels compute them, from ``x``
    as f32 (exact for f16 and bf16): the kernels' results are these, to the bit."""
    x = np.asarray(x, np.float32)
    absmax = np.abs(x).max(axis=1)
    safe = np.where(absmax > 0, absmax, np.float32(1))
    inv = np.where(absmax > 0, np.float32(127) / safe, np.float32(0))
    return {"q": np.round(x * inv[:, None]).astype(np.int8), "scale": absmax / np.float32(127)}


def near_ties(exact: np.ndarray, width: float = 1e-4) -> np.ndarray:
    """Where ``exact`` is within ``width`` of a half-integer: there an f32 ``x * (127 /
    absmax)`` (a few 2^-24 of at most 127 from the exact value, about 2e-5) may round the
    other way."""
    return np.abs(np.abs(exact - np.floor(exact)) - 0.5) < width


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


def cpu_inputs(m: int, n: int, kind: str, seed: int = 0) -> np.ndarray:
    """Random rows of one type whose scales differ (1e-3 to 1e2), one of them all zeros."""
    rng = np.random.default_rng(seed)
    scales = 10.0 ** rng.uniform(-3, 2, (m, 1))
    x = rng.standard_normal((m, n)) * scales
    x[m // 2] = 0.0
    return x.astype(numpy_dtype(kind))


def run_on_cpu(x: np.ndarray, **launch: Any) -> dict[str, np.ndarray]:
    """Quantise then dequantise in the interpreter, every output poisoned first."""
    m, n = x.shape
    out = {
        "q": np.full((m, n), -128, np.int8),  # never a result: |q| <= 127
        "scale": np.full(m, np.nan, np.float32),
        "x_deq": np.full((m, n), np.nan, x.dtype),
    }
    quantize(x, out["q"], out["scale"], **launch)
    dequantize(out["q"], out["scale"], out["x_deq"], **launch)
    return out


def check(got: dict[str, Array], x: np.ndarray, kind: str) -> None:
    """Assert ``got`` (numpy or torch) matches numpy in float64: q exactly but at near ties
    (there within 1), scale and the dequantised rows within TOLERANCE."""
    expected = reference(x)
    q = np.asarray(got["q"].cpu() if hasattr(got["q"], "cpu") else got["q"], np.float64)
    off = q != expected["q_round"]
    assert np.all(np.abs(q - expected["q_round"])[off] == 1), "q off by more than 1"
    assert near_ties(expected["q"])[off].all(), f"q differs away from a tie at {np.argwhere(off)}"
    scale = relative_error(got["scale"], expected["scale"])
    assert scale < TOLERANCE["scale"], f"scale: relative error {scale:.1e}"
    # Dequantised against the float64 dequantisation of the q the kernel chose.
    deq = expected["scale"][:, None] * q
    error = relative_error(got["x_deq"], deq)
    assert error < TOLERANCE[kind], f"{kind} dequantised: relative error {error:.1e}"


def check_on_cpu(m: int = 37, n: int = 300, **launch: Any) -> None:
    """Quantise and dequantise in the interpreter against numpy, sizes no tile divides."""
    for kind in ("f16", "bf16"):
        x = cpu_inputs(m, n, kind)
        check(run_on_cpu(x, **launch), x, kind)
        print(f"interpreter: {kind} int8 row-wise quantisation on {m}x{n} matches numpy")


if __name__ == "__main__":
    check_on_cpu()
    check_on_cpu(m=5, n=3000, ROWS=2, BLOCK_N=1024)  # rows in chunks
