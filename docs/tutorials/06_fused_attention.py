"""Tutorial 06: fused attention (FlashAttention-2), forward and backward.

The Phobos version of Triton's sixth tutorial.  For queries, keys and values
``q``, ``k``, ``v`` of one head, ``[S, D]`` each,

    O = softmax(sm_scale * q @ k^T) @ v

(with ``causal``, query ``i`` sees only keys ``j <= i``).  Tensors here are
``[B*H, S, D]``: batch and heads flattened into one axis, which a contiguous
torch tensor ``[B, H, S, D]`` gives with ``.view(B * H, S, D)`` at no cost.  The
kernels take the head dim ``D`` as a compile-time name (a tile must have a
compile-time shape); the host wrappers fix it from the tensors, along with
``CAUSAL``.

**Forward** (``attention_forward``): block ``(x, y)`` takes the ``BLOCK_M``
queries from ``x * BLOCK_M`` of head ``y``, and walks the keys in blocks of
``BLOCK_N`` with the online softmax: it keeps each row's running maximum and
sum of exponentials, rescales the fp32 accumulator whenever the maximum grows,
and divides once at the end, so the ``[S, S]`` score matrix never exists in
memory.  The exponentials are ``exp2``, with the scale ``sm_scale * log2(e)``
folded into the scores.  It also stores each row's log-sum-exp of the scaled
scores, in natural-log units (``lse``, what torch calls the logsumexp), for the
backward pass.  With ``causal`` the loop stops at the block's last query, and
``where(rows >= cols, scores, -inf)`` (indices from ``arange``) masks the rest.

**Backward**, in three kernels and no atomics, as Triton's tutorial splits it:

1. ``attention_backward_preprocess``: ``delta = rowsum(o * do)``, fp32.
2. ``attention_backward_dkdv``: a block owns ``BLOCK_N`` keys and loops over
   query blocks (with ``causal``, from the first that sees them), rebuilding
   ``p^T = exp2(k @ q^T * scale - lse * log2(e))``; it accumulates
   ``dv += p^T @ do`` and ``dk += (p^T * (v @ do^T - delta)) @ q``.
3. ``attention_backward_dq``: a block owns ``BLOCK_M`` queries and loops over
   key blocks: ``dq += (p * (do @ v^T - delta)) @ k``.

Each block writes only its own rows of ``dk``/``dv`` or ``dq``, so nothing is
added across blocks.

**Edges.**  ``S`` need not be a multiple of the blocks.  Keys past ``S`` are
absent: their scores are absent, ``max`` and ``sum`` skip them and ``dot``
counts them as 0.  Queries past ``S`` are absent rows whose stores are skipped.

**Tiles.**  Each kernel's ``@autotune`` space is small, since a GPU launch compiles
every variant before it times them.  ``NUM_THREADS`` is 256 or 128: on Hopper a
warpgroup (128 threads) multiplies 64-row slabs, so a 64-row tile on 256 threads splits
each product's columns between two warpgroups, and the next product, which needs all of
them, gets them through shared memory; on 128 threads it needs none.  The CPU check
runs the smallest and largest tiles.

FLOPs: the forward does two ``[S, S, D]`` products per head, ``4·B·H·S²·D``
(half with ``causal``); the backward counts as 2.5 times the forward, Triton's
tutorial's convention (five products of the same size, two for the recomputed
scores and ``dp`` included).

Run it: ``python docs/tutorials/06_fused_attention.py``.  It checks the kernels
in the CPU interpreter against numpy; with a GPU and torch it also checks them
against torch in float64 and times Phobos, Triton and torch's
``scaled_dot_product_attention``.
"""

from __future__ import annotations

import math

import numpy as np

import phobos.lang as ph

# log2(e): exp(x) is exp2(x * LOG2E).
LOG2E: ph.const = 1.4426950408889634


# Tutorial 06, forward: BLOCK_M queries of one head per block, keys in BLOCK_N blocks with
# the online softmax (exp2, scale sm_scale * log2(e)); stores o and each row's logsumexp.
@ph.kernel
@ph.autotune(
    D={64, 128, 16, 32},
    BLOCK_M={64, 128},
    BLOCK_N={64, 32},
    NUM_THREADS={256, 128},
    CAUSAL={0, 1},
)
def attention_forward(
    q: ph.tensor[ph.f16][BH, S, D],
    k: ph.tensor[ph.f16][BH, S, D],
    v: ph.tensor[ph.f16][BH, S, D],
    o: ph.tensor[ph.f16][BH, S, D],
    lse: ph.tensor[ph.f32][BH, S],
    sm_scale: ph.f32,
):
    start: ph.let = ph.ctx.block.x * BLOCK_M
    head: ph.let = ph.ctx.block.y
    scale: ph.let = sm_scale * LOG2E
    queries: ph.let = q[head, start:+BLOCK_M, 0:+D]
    rows: ph.let = start + ph.arange(BLOCK_M)
    row_max: ph.var = ph.zeros[ph.f32][BLOCK_M] - ph.inf
    row_sum: ph.var = ph.zeros[ph.f32][BLOCK_M]
    acc: ph.var = ph.zeros[ph.f32][BLOCK_M, D]
    end: ph.var = S
    if CAUSAL == 1:
        end = ph.minimum(S, start + BLOCK_M)
    for kv in range(0, end, BLOCK_N):
        scores: ph.var = ph.dot(queries, ph.trans(k[head, kv:+BLOCK_N, 0:+D])) * scale
        if CAUSAL == 1:
            cols: ph.let = kv + ph.arange(BLOCK_N)
            scores = ph.where(rows[:, None] >= cols[None, :], scores, -ph.inf)
        new_max: ph.let = ph.maximum(row_max, ph.max(scores, axis=1))
        rescale: ph.let = ph.exp2(row_max - new_max)
        p: ph.let = ph.exp2(scores - new_max[:, None])
        row_sum = row_sum * rescale + ph.sum(p, axis=1)
        acc = ph.dot(ph.f16(p), v[head, kv:+BLOCK_N, 0:+D], acc * rescale[:, None])
        row_max = new_max
    o[head, start:+BLOCK_M, 0:+D] = ph.f16(acc / row_sum[:, None])
    lse[head, start:+BLOCK_M] = (row_max + ph.log2(row_sum)) / LOG2E


# Backward, first kernel: delta = rowsum(o * do) in fp32, BLOCK_M rows per block.
@ph.kernel
@ph.autotune(D={64, 128, 16, 32}, BLOCK_M={64, 32, 128})
def attention_backward_preprocess(
    o: ph.tensor[ph.f16][BH, S, D],
    do: ph.tensor[ph.f16][BH, S, D],
    delta: ph.tensor[ph.f32][BH, S],
):
    start: ph.let = ph.ctx.block.x * BLOCK_M
    head: ph.let = ph.ctx.block.y
    out: ph.let = ph.f32(o[head, start:+BLOCK_M, 0:+D])
    grad: ph.let = ph.f32(do[head, start:+BLOCK_M, 0:+D])
    delta[head, start:+BLOCK_M] = ph.sum(out * grad, axis=1)


# Backward, second kernel: a block owns BLOCK_N keys of one head and loops over the query
# blocks that see them, accumulating dk and dv in fp32.
@ph.kernel
@ph.autotune(
    D={64, 128, 16, 32},
    BLOCK_M={32, 64},
    BLOCK_N={64},
    NUM_THREADS={256, 128},
    CAUSAL={0, 1},
)
def attention_backward_dkdv(
    q: ph.tensor[ph.f16][BH, S, D],
    k: ph.tensor[ph.f16][BH, S, D],
    v: ph.tensor[ph.f16][BH, S, D],
    do: ph.tensor[ph.f16][BH, S, D],
    lse: ph.tensor[ph.f32][BH, S],
    delta: ph.tensor[ph.f32][BH, S],
    dk: ph.tensor[ph.f16][BH, S, D],
    dv: ph.tensor[ph.f16][BH, S, D],
    sm_scale: ph.f32,
):
    start: ph.let = ph.ctx.block.x * BLOCK_N
    head: ph.let = ph.ctx.block.y
    scale: ph.let = sm_scale * LOG2E
    keys: ph.let = k[head, start:+BLOCK_N, 0:+D]
    values: ph.let = v[head, start:+BLOCK_N, 0:+D]
    key_index: ph.let = start + ph.arange(BLOCK_N)
    dk_acc: ph.var = ph.zeros[ph.f32][BLOCK_N, D]
    dv_acc: ph.var = ph.zeros[ph.f32][BLOCK_N, D]
    first: ph.var = ph.index(0)
    if CAUSAL == 1:
        first = start / BLOCK_M * BLOCK_M
    for qs in range(first, S, BLOCK_M):
        queries: ph.let = q[head, qs:+BLOCK_M, 0:+D]
        grad: ph.let = do[head, qs:+BLOCK_M, 0:+D]
        # Transposed: row j is key start + j, column i is query qs + i.
        scores_t: ph.let = ph.dot(keys, ph.trans(queries)) * scale
        p_t: ph.var = ph.exp2(scores_t - lse[head, qs:+BLOCK_M][None, :] * LOG2E)
        if CAUSAL == 1:
            query_index: ph.let = qs + ph.arange(BLOCK_M)
            p_t = ph.where(query_index[None, :] >= key_index[:, None], p_t, 0.0)
        dv_acc = ph.dot(ph.f16(p_t), grad, dv_acc)
        dp_t: ph.let = ph.dot(values, ph.trans(grad))
        ds_t: ph.let = p_t * (dp_t - delta[head, qs:+BLOCK_M][None, :])
        dk_acc = ph.dot(ph.f16(ds_t), queries, dk_acc)
    dk[head, start:+BLOCK_N, 0:+D] = ph.f16(dk_acc * sm_scale)
    dv[head, start:+BLOCK_N, 0:+D] = ph.f16(dv_acc)


# Backward, third kernel: a block owns BLOCK_M queries of one head and loops over the key
# blocks they see, accumulating dq in fp32.
@ph.kernel
@ph.autotune(
    D={64, 128, 16, 32},
    BLOCK_M={64},
    BLOCK_N={32, 64},
    NUM_THREADS={256, 128},
    CAUSAL={0, 1},
)
def attention_backward_dq(
    q: ph.tensor[ph.f16][BH, S, D],
    k: ph.tensor[ph.f16][BH, S, D],
    v: ph.tensor[ph.f16][BH, S, D],
    do: ph.tensor[ph.f16][BH, S, D],
    lse: ph.tensor[ph.f32][BH, S],
    delta: ph.tensor[ph.f32][BH, S],
    dq: ph.tensor[ph.f16][BH, S, D],
    sm_scale: ph.f32,
):
    start: ph.let = ph.ctx.block.x * BLOCK_M
    head: ph.let = ph.ctx.block.y
    scale: ph.let = sm_scale * LOG2E
    queries: ph.let = q[head, start:+BLOCK_M, 0:+D]
    grad: ph.let = do[head, start:+BLOCK_M, 0:+D]
    row_lse: ph.let = lse[head, start:+BLOCK_M] * LOG2E
    row_delta: ph.let = delta[head, start:+BLOCK_M]
    query_index: ph.let = start + ph.arange(BLOCK_M)
    dq_acc: ph.var = ph.zeros[ph.f32][BLOCK_M, D]
    end: ph.var = S
    if CAUSAL == 1:
        end = ph.minimum(S, start + BLOCK_M)
    for kv in range(0, end, BLOCK_N):
        keys: ph.let = k[head, kv:+BLOCK_N, 0:+D]
        p: ph.var = ph.exp2(ph.dot(queries, ph.trans(keys)) * scale - row_lse[:, None])
        if CAUSAL == 1:
            key_index: ph.let = kv + ph.arange(BLOCK_N)
            p = ph.where(query_index[:, None] >= key_index[None, :], p, 0.0)
        dp: ph.let = ph.dot(grad, ph.trans(v[head, kv:+BLOCK_N, 0:+D]))
        ds: ph.let = p * (dp - row_delta[:, None])
        dq_acc = ph.dot(ph.f16(ds), keys, dq_acc)
    dq[head, start:+BLOCK_M, 0:+D] = ph.f16(dq_acc * sm_scale)


def blocks_of(name: str):
    """The grid: one block per ``meta[name]`` positions of S, one row of blocks per head."""

    def grid(meta):
        return (-(-meta["S"] // meta[name]), meta["BH"])

    return grid


def forward(q, k, v, o, lse, sm_scale: float, causal: bool, **launch) -> None:
    """``o = attention(q, k, v)`` for ``[B*H, S, D]`` tensors, and each row's logsumexp.

    ``launch`` may fix tile names (``BLOCK_M=64``); the others are tuned on a GPU.
    """
    names = {"D": q.shape[-1], "CAUSAL": int(causal)}
    attention_forward[blocks_of("BLOCK_M")](q, k, v, o, lse, sm_scale, **names, **launch)


def backward(
    q, k, v, o, do, lse, delta, dq, dk, dv, sm_scale: float, causal: bool,
    *, preprocess_tiles=None, dkdv_tiles=None, dq_tiles=None, **launch,
) -> None:  # fmt: skip
    """``dq``, ``dk`` and ``dv`` from ``do``, with the forward's ``o`` and ``lse``.

    ``delta`` is a ``[B*H, S]`` fp32 scratch tensor.  Each ``*_tiles`` dict fixes that
    kernel's tile names; ``launch`` goes to every kernel (``race_check=True``).
    """
    names = {"D": q.shape[-1]}
    attention_backward_preprocess[blocks_of("BLOCK_M")](
        o, do, delta, **names, **(preprocess_tiles or {}), **launch
    )
    names["CAUSAL"] = int(causal)
    attention_backward_dkdv[blocks_of("BLOCK_N")](
        q, k, v, do, lse, delta, dk, dv, sm_scale, **names, **(dkdv_tiles or {}), **launch
    )
    attention_backward_dq[blocks_of("BLOCK_M")](
        q, k, v, do, lse, delta, dq, sm_scale, **names, **(dq_tiles or {}), **launch
    )


def reference(q, k, v, do, sm_scale: float, causal: bool) -> dict[str, np.ndarray]:
    """Forward and backward in float64 with numpy: o, lse, dq, dk, dv."""
    q, k, v, do = (a.astype(np.float64) for a in (q, k, v, do))
    scores = q @ k.transpose(0, 2, 1) * sm_scale
    if causal:
        seen = np.tril(np.ones(scores.shape[1:], bool))
        scores = np.where(seen, scores, -np.inf)
    peak = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - peak)
    total = e.sum(axis=-1, keepdims=True)
    p = e / total
    o = p @ v
    dp = do @ v.transpose(0, 2, 1)
    ds = p * (dp - (o * do).sum(axis=-1, keepdims=True))
    return {
        "o": o,
        "lse": (peak + np.log(total))[..., 0],
        "dq": ds @ k * sm_scale,
        "dk": ds.transpose(0, 2, 1) @ q * sm_scale,
        "dv": p.transpose(0, 2, 1) @ do,
    }


def relative_error(got, expected) -> float:
    """max |got - expected| / max |expected| (numpy or torch arrays), in float64."""
    if hasattr(got, "double"):
        return float((got.double() - expected).abs().max() / expected.abs().max())
    got = np.asarray(got, dtype=np.float64)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def run_on_cpu(q, k, v, do, sm_scale, causal, tiles, **launch) -> dict[str, np.ndarray]:
    """Forward and backward in the interpreter into NaN-poisoned outputs; returns them all.

    ``tiles`` holds each kernel's fixed names: keys ``forward``, ``preprocess``, ``dkdv``
    and ``dq``.
    """
    bh, s, d = q.shape
    out = {name: np.full((bh, s, d), np.nan, np.float16) for name in ("o", "dq", "dk", "dv")}
    out.update({name: np.full((bh, s), np.nan, np.float32) for name in ("lse", "delta")})
    forward(q, k, v, out["o"], out["lse"], sm_scale, causal, **tiles["forward"], **launch)
    backward(
        q, k, v, out["o"], do, out["lse"], out["delta"], out["dq"], out["dk"], out["dv"],
        sm_scale, causal, preprocess_tiles=tiles["preprocess"], dkdv_tiles=tiles["dkdv"],
        dq_tiles=tiles["dq"], **launch,
    )  # fmt: skip
    return out


# The tiles the CPU check runs: small blocks, then the largest of each space.
CPU_TILES = (
    {
        "forward": {"BLOCK_M": 64, "BLOCK_N": 32},
        "preprocess": {"BLOCK_M": 32},
        "dkdv": {"BLOCK_M": 32, "BLOCK_N": 64},
        "dq": {"BLOCK_M": 64, "BLOCK_N": 32},
    },
    {
        "forward": {"BLOCK_M": 128, "BLOCK_N": 64},
        "preprocess": {"BLOCK_M": 128},
        "dkdv": {"BLOCK_M": 64, "BLOCK_N": 64},
        "dq": {"BLOCK_M": 64, "BLOCK_N": 64},
    },
)


def check_on_cpu(bh: int = 3, s: int = 100, d: int = 16) -> None:
    """Every kernel in the interpreter, causal and not, S no multiple of any block."""
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
    sm_scale = 1 / math.sqrt(d)
    for causal in (False, True):
        expected = reference(q, k, v, do, sm_scale, causal)
        for tiles in CPU_TILES:
            got = run_on_cpu(q, k, v, do, sm_scale, causal, tiles, race_check=True)
            for name, value in expected.items():
                error = relative_error(got[name], value)
                assert error < 1e-2 and not np.isnan(got[name]).any(), f"{name}: {error:.1e}"
    print(f"interpreter: attention on [{bh}, {s}, {d}], causal and not, matches numpy (float64)")


def triton_attention():
    """Attention in Triton, written the way Triton's tutorial 06 writes it: pointer
    arithmetic, the online softmax in exp2 with the scale folded in, M = m + log2(l) kept
    for the backward, and the backward as a preprocess, a dk/dv kernel and a dq kernel.
    Like the Phobos kernels, the causal loop masks every block it visits (the current
    tutorial splits off the diagonal block; its earlier versions mask as here).  S must
    be a multiple of 128, as in the tutorial.
    Returns ``(forward(q, k, v, causal, sm_scale) -> (o, M), backward(q, k, v, o, do, M,
    causal, sm_scale) -> (dq, dk, dv))`` for ``[B*H, S, D]`` tensors."""
    import torch
    import triton
    import triton.language as tl

    configs = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_stages=s, num_warps=w)
        for bm, bn, s, w in ((128, 64, 3, 8), (128, 64, 4, 4), (128, 32, 3, 4), (64, 64, 4, 4))
    ]

    @triton.autotune(configs=configs, key=["S", "HEAD_DIM", "CAUSAL"])
    @triton.jit
    def fwd_kernel(
        Q, K, V, Out, M, sm_scale, S,
        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        CAUSAL: tl.constexpr,
    ):  # fmt: skip
        start_m = tl.program_id(0)
        head = tl.program_id(1)
        base = head.to(tl.int64) * S * HEAD_DIM
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        q = tl.load(Q + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
        m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        qk_scale = sm_scale * 1.44269504
        hi = S
        if CAUSAL:
            hi = (start_m + 1) * BLOCK_M
        for start_n in range(0, hi, BLOCK_N):
            kt = tl.load(K + base + (start_n + offs_n)[None, :] * HEAD_DIM + offs_d[:, None])
            qk = tl.dot(q, kt) * qk_scale
            if CAUSAL:
                qk = tl.where(offs_m[:, None] >= (start_n + offs_n[None, :]), qk, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            p = tl.math.exp2(qk - m_ij[:, None])
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            v = tl.load(V + base + (start_n + offs_n)[:, None] * HEAD_DIM + offs_d[None, :])
            acc = tl.dot(p.to(tl.float16), v, acc)
            m_i = m_ij
        m_i += tl.math.log2(l_i)
        acc = acc / l_i[:, None]
        tl.store(M + head * S + offs_m, m_i)
        tl.store(Out + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.float16))

    @triton.jit
    def bwd_preprocess(Out, DO, Delta, S, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
        offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        head = tl.program_id(1)
        offs = head.to(tl.int64) * S * HEAD_DIM + offs_m[:, None] * HEAD_DIM
        offs = offs + tl.arange(0, HEAD_DIM)[None, :]
        o = tl.load(Out + offs).to(tl.float32)
        do = tl.load(DO + offs).to(tl.float32)
        tl.store(Delta + head * S + offs_m, tl.sum(o * do, axis=1))

    @triton.jit
    def bwd_dkdv(
        Q, K, V, DO, M, Delta, DK, DV, sm_scale, S,
        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        CAUSAL: tl.constexpr,
    ):  # fmt: skip
        start_n = tl.program_id(0) * BLOCK_N
        head = tl.program_id(1)
        base = head.to(tl.int64) * S * HEAD_DIM
        offs_n = start_n + tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        k = tl.load(K + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
        v = tl.load(V + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
        dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
        dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
        qk_scale = sm_scale * 1.44269504
        lo = 0
        if CAUSAL:
            lo = start_n // BLOCK_M * BLOCK_M
        for start_m in range(lo, S, BLOCK_M):
            offs_m = start_m + tl.arange(0, BLOCK_M)
            qt = tl.load(Q + base + offs_m[None, :] * HEAD_DIM + offs_d[:, None])
            m = tl.load(M + head * S + offs_m)
            p_t = tl.math.exp2(tl.dot(k, qt) * qk_scale - m[None, :])
            if CAUSAL:
                p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
            do = tl.load(DO + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
            dv += tl.dot(p_t.to(tl.float16), do)
            delta = tl.load(Delta + head * S + offs_m)
            dp_t = tl.dot(v, tl.trans(do)).to(tl.float32)
            ds_t = (p_t * (dp_t - delta[None, :])).to(tl.float16)
            dk += tl.dot(ds_t, tl.trans(qt))
        out = base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        tl.store(DK + out, (dk * sm_scale).to(tl.float16))
        tl.store(DV + out, dv.to(tl.float16))

    @triton.jit
    def bwd_dq(
        Q, K, V, DO, M, Delta, DQ, sm_scale, S,
        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        CAUSAL: tl.constexpr,
    ):  # fmt: skip
        start_m = tl.program_id(0) * BLOCK_M
        head = tl.program_id(1)
        base = head.to(tl.int64) * S * HEAD_DIM
        offs_m = start_m + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, HEAD_DIM)
        rows = base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        q = tl.load(Q + rows)
        do = tl.load(DO + rows)
        m = tl.load(M + head * S + offs_m)
        delta = tl.load(Delta + head * S + offs_m)
        dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        qk_scale = sm_scale * 1.44269504
        hi = S
        if CAUSAL:
            hi = start_m + BLOCK_M
        for start_n in range(0, hi, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            kt = tl.load(K + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])
            vt = tl.load(V + base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])
            p = tl.math.exp2(tl.dot(q, kt) * qk_scale - m[:, None])
            if CAUSAL:
                p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
            dp = tl.dot(do, vt).to(tl.float32)
            ds = (p * (dp - delta[:, None])).to(tl.float16)
            dq += tl.dot(ds, tl.trans(kt))
        tl.store(DQ + rows, (dq * sm_scale).to(tl.float16))

    def forward_launch(q, k, v, causal: bool, sm_scale: float):
        bh, s, d = q.shape
        assert s % 128 == 0, "the Triton version needs S to be a multiple of 128"
        o = torch.empty_like(q)
        m = torch.empty((bh, s), device=q.device, dtype=torch.float32)

        def grid(meta):
            return (triton.cdiv(s, meta["BLOCK_M"]), bh)

        fwd_kernel[grid](q, k, v, o, m, sm_scale, s, HEAD_DIM=d, CAUSAL=causal)
        return o, m

    def backward_launch(q, k, v, o, do, m, causal: bool, sm_scale: float):
        bh, s, d = q.shape
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        delta = torch.empty_like(m)
        bwd_preprocess[(s // 128, bh)](o, do, delta, s, HEAD_DIM=d, BLOCK_M=128)
        args = (q, k, v, do, m, delta)
        warps, stages = (8, 2) if d == 128 else (4, 3)
        bwd_dkdv[(s // 128, bh)](
            *args, dk, dv, sm_scale, s, HEAD_DIM=d, BLOCK_M=32, BLOCK_N=128, CAUSAL=causal,
            num_warps=warps, num_stages=stages,
        )  # fmt: skip
        bwd_dq[(s // 128, bh)](
            *args, dq, sm_scale, s, HEAD_DIM=d, BLOCK_M=128, BLOCK_N=32, CAUSAL=causal,
            num_warps=warps, num_stages=stages,
        )  # fmt: skip
        return dq, dk, dv

    return forward_launch, backward_launch


def forward_flops(b: int, h: int, s: int, d: int, causal: bool) -> float:
    """Two [S, S, D] products per head; half of them with causal."""
    flops = 4 * b * h * s * s * d
    return flops / 2 if causal else flops


def torch_reference(q, k, v, do, sm_scale: float, causal: bool, heads: int = 8) -> dict:
    """Forward and backward in float64 with torch, ``heads`` heads at a time.

    The same formulas as ``reference``; a chunk of heads keeps the float64 ``[S, S]``
    matrices to a few GB (all 128 heads at S=4096 would need tens of GB each).
    """
    import torch

    parts: dict[str, list] = {name: [] for name in ("o", "lse", "dq", "dk", "dv")}
    s = q.shape[1]
    seen = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
    for first in range(0, q.shape[0], heads):
        qc, kc, vc, doc = (t[first : first + heads].double() for t in (q, k, v, do))
        scores = qc @ kc.transpose(1, 2) * sm_scale
        if causal:
            scores = scores.masked_fill(~seen, float("-inf"))
        lse = torch.logsumexp(scores, dim=-1)
        p = torch.exp(scores - lse[..., None])
        o = p @ vc
        ds = p * (doc @ vc.transpose(1, 2) - (o * doc).sum(dim=-1, keepdim=True))
        parts["o"].append(o)
        parts["lse"].append(lse)
        parts["dq"].append(ds @ kc * sm_scale)
        parts["dk"].append(ds.transpose(1, 2) @ qc * sm_scale)
        parts["dv"].append(p.transpose(1, 2) @ doc)
    return {name: torch.cat(values) for name, values in parts.items()}


def phobos_buffers(bh: int, s: int, d: int) -> dict:
    """Every output of ``forward`` and ``backward``, NaN-poisoned, on the GPU."""
    import torch

    out = {
        name: torch.full((bh, s, d), float("nan"), device="cuda", dtype=torch.float16)
        for name in ("o", "dq", "dk", "dv")
    }
    for name in ("lse", "delta"):
        out[name] = torch.full((bh, s), float("nan"), device="cuda", dtype=torch.float32)
    return out


def checked(system: str, got: dict, expected: dict, names=("o", "dq", "dk", "dv")) -> dict:
    """Each output's relative error; raises if one is 1e-2 or more, or holds NaN."""
    errors = {}
    for name in names:
        errors[name] = relative_error(got[name], expected[name])
        if not errors[name] < 1e-2 or bool(got[name].isnan().any()):
            raise AssertionError(f"{system} {name}: relative error {errors[name]:.1e}")
    return errors


# The kernels a Phobos forward and backward launch, for the tuning report.
PHOBOS_KERNELS = {
    "forward": (attention_forward,),
    "backward": (attention_backward_preprocess, attention_backward_dkdv, attention_backward_dq),
}


def measure_on_gpu(b: int, h: int, s: int, d: int, causal: bool, triton_fns, time_ms) -> dict:
    """Check Phobos, Triton and torch against float64, then time each; one result row.

    ``time_ms(fn)`` is the timer (a median in ms).  TFLOP/s: ``forward_flops`` for the
    forward, 2.5 times that for the backward.  Phobos's first launches tune the tile names
    of each kernel; the row records the variants chosen.
    """
    import torch

    triton_forward, triton_backward = triton_fns
    sm_scale = 1 / math.sqrt(d)
    # torch's fused kernels take [B, H, S, D]; Phobos and Triton take the free [B*H, S, D] view.
    shaped = [torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(4)]
    q, k, v, do = (t.view(b * h, s, d) for t in shaped)
    expected = torch_reference(q, k, v, do, sm_scale, causal)
    out = phobos_buffers(b * h, s, d)

    def phobos_forward():
        forward(q, k, v, out["o"], out["lse"], sm_scale, causal)

    def phobos_backward():
        grads = (out["dq"], out["dk"], out["dv"])
        backward(q, k, v, out["o"], do, out["lse"], out["delta"], *grads, sm_scale, causal)

    row: dict = {"d": d, "causal": causal, "s": s, "b": b, "h": h}
    for part, run in (("forward", phobos_forward), ("backward", phobos_backward)):
        run()
        for kernel in PHOBOS_KERNELS[part]:
            row[f"phobos_{kernel.name}_variant"] = kernel.tuning_report().choice
    errors = checked("phobos", out, expected, ("o", "lse", "dq", "dk", "dv"))
    row.update({f"phobos_{name}_error": error for name, error in errors.items()})

    o, m = triton_forward(q, k, v, causal, sm_scale)
    dq, dk, dv = triton_backward(q, k, v, o, do, m, causal, sm_scale)
    errors = checked("triton", {"o": o, "dq": dq, "dk": dk, "dv": dv}, expected)
    row.update({f"triton_{name}_error": error for name, error in errors.items()})

    sdpa = torch.nn.functional.scaled_dot_product_attention
    leaves = [t.detach().requires_grad_() for t in shaped[:3]]
    torch_o = sdpa(*leaves, is_causal=causal, scale=sm_scale)
    torch_grads = torch.autograd.grad(torch_o, leaves, shaped[3], retain_graph=True)
    got = {
        name: value.detach().reshape(b * h, s, d)
        for name, value in zip(("o", "dq", "dk", "dv"), (torch_o, *torch_grads))
    }
    errors = checked("torch", got, expected)
    row.update({f"torch_{name}_error": error for name, error in errors.items()})

    runs = {
        "phobos": (phobos_forward, phobos_backward),
        "triton": (
            lambda: triton_forward(q, k, v, causal, sm_scale),
            lambda: triton_backward(q, k, v, o, do, m, causal, sm_scale),
        ),
        "torch": (
            lambda: sdpa(*shaped[:3], is_causal=causal, scale=sm_scale),
            lambda: torch.autograd.grad(torch_o, leaves, shaped[3], retain_graph=True),
        ),
    }
    flops = forward_flops(b, h, s, d, causal)
    for system, (fwd, bwd) in runs.items():
        row[f"{system}_forward_tflops"] = flops / time_ms(fwd) / 1e9
        row[f"{system}_backward_tflops"] = 2.5 * flops / time_ms(bwd) / 1e9
    return row


def check_and_time_on_gpu(b: int = 4, h: int = 32, s: int = 4096) -> None:
    """Check against float64, then time Phobos, Triton and torch (median, L2 flushed)."""
    from triton.testing import do_bench

    def time_ms(fn):
        return do_bench(fn, return_mode="median")

    triton_fns = triton_attention()
    for d in (64, 128):
        for causal in (False, True):
            row = measure_on_gpu(b, h, s, d, causal, triton_fns, time_ms)
            for system in ("phobos", "triton", "torch"):
                print(
                    f"D={d} causal={causal!s:5} {system:7s} "
                    f"forward {row[f'{system}_forward_tflops']:6.1f}  "
                    f"backward {row[f'{system}_backward_tflops']:6.1f} TFLOP/s"
                )


def main() -> None:
    print(attention_forward.source)
    check_on_cpu()
    check_on_cpu(bh=2, s=37, d=64)
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    if on_gpu:
        check_and_time_on_gpu()


if __name__ == "__main__":
    main()
