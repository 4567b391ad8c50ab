"""Rotary position embedding (RoPE, rotate-half), q and k in one launch, f16 and bf16.

Attention's queries and keys are ``[tokens, heads, head_dim]``.  Rotate-half RoPE (GPT-NeoX,
LLaMA and Hugging Face's ``apply_rotary_pos_emb``) splits each head in two halves ``x1`` and
``x2`` of ``head_dim / 2`` lanes and rotates them by the angles of the token's position:

    out = x * cos[pos] + rotate_half(x) * sin[pos],   rotate_half(x) = (-x2, x1)

that is ``out1 = x1 * cos1 - x2 * sin1`` and ``out2 = x2 * cos2 + x1 * sin2``, where ``cos``
and ``sin`` are f32 tables ``[positions, head_dim]`` (halves ``cos1``, ``cos2``) and
``pos = positions[token]`` is an i32 per token, so one table serves a whole batch of
sequences.  The usual tables repeat one half (``cat(freqs, freqs)``); the kernel reads both
halves and assumes nothing of them.

The kernel sees every head as ``[2, head_dim / 2]`` (a view: ``flat`` below), so ``x1`` and
``x2`` are windows of one tensor, ``x[t, h :+ BLOCK_H, 0, d :+ BLOCK_D]`` and the same at 1.
Block ``t`` takes token ``t``: for each ``BLOCK_D`` band of the half it reads the band of
the four table halves once, then rotates the band of ``BLOCK_H`` heads at a time, first the
queries' heads, then the keys' (they may be fewer: grouped-query attention).  Heads past
the last and lanes past ``head_dim / 2`` are absent, so every variant is right for every
shape and the tuner may choose any.  Arithmetic is f32; each result is rounded once.

``rope(q, k, cos, sin, positions, q_out, k_out)`` launches ``kernel[grid](...)`` with the
tile names left to the tuner; on numpy arrays it runs the CPU interpreter.  A position
outside the tables has absent table lanes, and its token's outputs are left unwritten.
Run ``python docs/examples/corpus/rope.py`` to check it in the interpreter against numpy in
float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import phobos.lang as ph


# The first half of a rotated head: x1 * cos1 - x2 * sin1, in f32.
@ph.func
def first_half(x1: ph.f32, x2: ph.f32, c: ph.f32, s: ph.f32) -> ph.f32:
    return x1 * c - x2 * s


# The second half of a rotated head: x2 * cos2 + x1 * sin2, in f32.
@ph.func
def second_half(x1: ph.f32, x2: ph.f32, c: ph.f32, s: ph.f32) -> ph.f32:
    return x2 * c + x1 * s


# Block t rotates token t's query and key heads by the angles of its position, BLOCK_D lanes
# of each half and BLOCK_H heads at a time; the table bands are read once per BLOCK_D band.
@ph.kernel
@ph.autotune(BLOCK_H={4, 1, 2, 8, 16, 32}, BLOCK_D={64, 16, 32, 128})
def rope_f16(
    q: ph.tensor[ph.f16][T, H, 2, HALF],
    k: ph.tensor[ph.f16][T, KH, 2, HALF],
    cos: ph.tensor[ph.f32][S, 2, HALF],
    sin: ph.tensor[ph.f32][S, 2, HALF],
    positions: ph.tensor[ph.i32][T],
    q_out: ph.tensor[ph.f16][T, H, 2, HALF],
    k_out: ph.tensor[ph.f16][T, KH, 2, HALF],
):
    t: ph.let = ph.ctx.block.x
    pos: ph.let = positions[t]
    for d in range(0, HALF, BLOCK_D):
        c1: ph.let = cos[pos, 0, d:+BLOCK_D]
        c2: ph.let = cos[pos, 1, d:+BLOCK_D]
        s1: ph.let = sin[pos, 0, d:+BLOCK_D]
        s2: ph.let = sin[pos, 1, d:+BLOCK_D]
        for h in range(0, H, BLOCK_H):
            x1: ph.let = ph.f32(q[t, h:+BLOCK_H, 0, d:+BLOCK_D])
            x2: ph.let = ph.f32(q[t, h:+BLOCK_H, 1, d:+BLOCK_D])
            q_out[t, h:+BLOCK_H, 0, d:+BLOCK_D] = ph.f16(first_half(x1, x2, c1, s1))
            q_out[t, h:+BLOCK_H, 1, d:+BLOCK_D] = ph.f16(second_half(x1, x2, c2, s2))
        for h in range(0, KH, BLOCK_H):
            x1: ph.let = ph.f32(k[t, h:+BLOCK_H, 0, d:+BLOCK_D])
            x2: ph.let = ph.f32(k[t, h:+BLOCK_H, 1, d:+BLOCK_D])
            k_out[t, h:+BLOCK_H, 0, d:+BLOCK_D] = ph.f16(first_half(x1, x2, c1, s1))
            k_out[t, h:+BLOCK_H, 1, d:+BLOCK_D] = ph.f16(second_half(x1, x2, c2, s2))


# The same for bf16 queries and keys.
@ph.kernel
@ph.autotune(BLOCK_H={4, 1, 2, 8, 16, 32}, BLOCK_D={64, 16, 32, 128})
def rope_bf16(
    q: ph.tensor[ph.bf16][T, H, 2, HALF],
    k: ph.tensor[ph.bf16][T, KH, 2, HALF],
    cos: ph.tensor[ph.f32][S, 2, HALF],
    sin: ph.tensor[ph.f32][S, 2, HALF],
    positions: ph.tensor[ph.i32][T],
    q_out: ph.tensor[ph.bf16][T, H, 2, HALF],
    k_out: ph.tensor[ph.bf16][T, KH, 2, HALF],
):
    t: ph.let = ph.ctx.block.x
    pos: ph.let = positions[t]
    for d in range(0, HALF, BLOCK_D):
        c1: ph.let = cos[pos, 0, d:+BLOCK_D]
        c2: ph.let = cos[pos, 1, d:+BLOCK_D]
        s1: ph.let = sin[pos, 0, d:+BLOCK_D]
        s2: ph.let = sin[pos, 1, d:+BLOCK_D]
        for h in range(0, H, BLOCK_H):
            x1: ph.let = ph.f32(q[t, h:+BLOCK_H, 0, d:+BLOCK_D])
            x2: ph.let = ph.f32(q[t, h:+BLOCK_H, 1, d:+BLOCK_D])
            q_out[t, h:+BLOCK_H, 0, d:+BLOCK_D] = ph.bf16(first_half(x1, x2, c1, s1))
            q_out[t, h:+BLOCK_H, 1, d:+BLOCK_D] = ph.bf16(second_half(x1, x2, c2, s2))
        for h in range(0, KH, BLOCK_H):
            x1: ph.let = ph.f32(k[t, h:+BLOCK_H, 0, d:+BLOCK_D])
            x2: ph.let = ph.f32(k[t, h:+BLOCK_H, 1, d:+BLOCK_D])
            k_out[t, h:+BLOCK_H, 0, d:+BLOCK_D] = ph.bf16(first_half(x1, x2, c1, s1))
            k_out[t, h:+BLOCK_H, 1, d:+BLOCK_D] = ph.bf16(second_half(x1, x2, c2, s2))


KERNELS = {"f16": rope_f16, "bf16": rope_bf16}

# Relative errors (to the largest |value|) allowed against float64: twice what rounding one
# result to f16 or bf16 can cost (2^-11 and 2^-8 of the largest value); the f32 products and
# sum before it add about 2^-23 of the largest.
TOLERANCE = {"f16": 1e-3, "bf16": 8e-3}

# A numpy array (the launch runs in the CPU interpreter) or a GPU array (torch, CuPy).
Array = Any


def element_type(array: Array) -> str:
    """``f16`` or ``bf16`` for a numpy (ml_dtypes for bf16) or torch array."""
    name = str(array.dtype).removeprefix("torch.")
    types = {"float16": "f16", "bfloat16": "bf16"}
    if name not in types:
        raise TypeError(f"RoPE takes float16 or bfloat16 queries and keys, not {name}")
    return types[name]


def halves(array: Array) -> Array:
    """``[..., head_dim]`` seen as ``[..., 2, head_dim / 2]``, without a copy (numpy or torch):
    the kernel's two halves of a head are then windows at index 0 and 1."""
    *outer, dim = array.shape
    if dim % 2:
        raise ValueError(f"RoPE rotates halves of a head: head_dim {dim} is odd")
    if isinstance(array, np.ndarray):
        view = array.view()
        view.shape = (*outer, 2, dim // 2)  # raises rather than copy
        return view
    return array.view(*outer, 2, dim // 2)


def tokens(meta: dict[str, int]) -> tuple[int]:
    """One block per token."""
    return (meta["T"],)


def rope(
    q: Array,
    k: Array,
    cos: Array,
    sin: Array,
    positions: Array,
    q_out: Array,
    k_out: Array,
    **launch: Any,
) -> None:
    """Rotate ``q [T, H, D]`` and ``k [T, KH, D]`` into ``q_out`` and ``k_out`` by the angles of
    ``positions [T]`` (i32) in the f32 tables ``cos`` and ``sin [S, D]``.  ``launch`` passes
    launch options or fixes compile-time names (``BLOCK_H=8``)."""
    kernel = KERNELS[element_type(q)]
    views = (halves(a) for a in (q, k, cos, sin))
    kernel[tokens](*views, positions, halves(q_out), halves(k_out), **launch)


def reference(
    q: np.ndarray, k: np.ndarray, cos: np.ndarray, sin: np.ndarray, positions: np.ndarray
) -> dict[str, np.ndarray]:
    """Rotate-half RoPE in float64 with numpy, as Hugging Face writes it: q_out, k_out."""
    c = np.asarray(cos, np.float64)[positions][:, None, :]
    s = np.asarray(sin, np.float64)[positions][:, None, :]

    def rotate(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float64)
        x1, x2 = np.split(x, 2, axis=-1)
        return x * c + np.concatenate([-x2, x1], axis=-1) * s

    return {"q_out": rotate(q), "k_out": rotate(k)}


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


def tables(positions: int, dim: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """LLaMA's f32 cos and sin tables ``[positions, dim]``: angle ``p * base^(-2i/dim)`` for
    lane ``i`` of a half, both halves alike."""
    inverse = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    angles = np.outer(np.arange(positions), inverse)
    angles = np.concatenate([angles, angles], axis=1)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def cpu_inputs(
    t: int, heads: int, kv_heads: int, dim: int, kind: str, seed: int = 0
) -> dict[str, np.ndarray]:
    """Random q and k of one type, LLaMA's tables for 64 positions, and random positions."""
    rng = np.random.default_rng(seed)
    dtype = numpy_dtype(kind)
    cos, sin = tables(64, dim)
    return {
        "q": rng.standard_normal((t, heads, dim)).astype(dtype),
        "k": rng.standard_normal((t, kv_heads, dim)).astype(dtype),
        "cos": cos,
        "sin": sin,
        "positions": rng.integers(0, 64, t).astype(np.int32),
    }


def run_on_cpu(data: dict[str, np.ndarray], **launch: Any) -> dict[str, np.ndarray]:
    """RoPE in the interpreter, the outputs NaN-poisoned first."""
    out = {
        "q_out": np.full_like(data["q"], np.nan),
        "k_out": np.full_like(data["k"], np.nan),
    }
    rope(**data, **out, **launch)
    return out


def check_on_cpu(
    t: int = 7, heads: int = 5, kv_heads: int = 3, dim: int = 80, **launch: Any
) -> None:
    """RoPE in the interpreter against numpy, with head_dim / 2 = 40 (no tile divides it)."""
    for kind in ("f16", "bf16"):
        data = cpu_inputs(t, heads, kv_heads, dim, kind)
        expected = reference(**data)
        got = run_on_cpu(data, **launch)
        for name, want in expected.items():
            error = relative_error(got[name], want)
            assert error < TOLERANCE[kind], f"{kind} {name}: relative error {error:.1e}"
        print(f"interpreter: {kind} RoPE on q {data['q'].shape}, k {data['k'].shape} matches numpy")


if __name__ == "__main__":
    check_on_cpu()
