"""The GPU IR executor agrees with the tile-IR interpreter on every variant of every example.

For every kernel of ``examples/*.ph`` (the tutorials in ``docs/tutorials/*.py`` spell the
same programs: ``test_tutorial_kernels_are_the_examples`` checks it) and every variant of
its ``@autotune`` space, the variant goes through the whole back end
(``gpu.pipeline.build``) and the final GPU IR runs in the executor, next to the
interpreter on the same random inputs (never zeros); every tensor must agree, to the
tolerance of its dtype (f16 1e-2 relative, f32 1e-4), NaN where NaN (outputs start as
NaN, so a lane written by one and not the other fails).

Sizes are no multiple of any tile, grids are the tutorials' host wrappers' (``GRIDS``),
and small (the executor runs a CTA at a time, in Python over numpy): a row kernel's rows
are 3/4 of its tile less one (the tile's last quarter absent), ``ROWS - 1`` of them (a
block's last row absent; two blocks of one row for ``ROWS`` = 1); the online softmax
walks a full chunk and a partial one (a partial one alone past 2048 lanes); matmul is
70 x 50 x 90; attention runs S = 100, one head, D from the variant, lse and delta as
the forward and the preprocess make them.

The combinations, and what CI runs of them:

* sm_90a (wgmma), fully specialised (unit stride, 16-byte aligned: the cp.async path):
  **every variant**;
* sm_90a unspecialised (unit stride False, align 1: no cp.async, no vector access),
  sm_80 (mma.sync + ldmatrix) specialised and unspecialised: a deterministic sample of
  each kernel's variants (``sample``: ``SAMPLES_PER_COMBO`` of them evenly spaced, at
  least 2, shifted per combination so that the three together take different ones).

That is about 450 runs and 85 s of CPU time (45 s on two idle cores with ``-n 2``);
``PHOBOS_GPU_IR_ALL=1`` runs the full cross product (about 10 minutes).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower, tune_space
from phobos.compile.diagnostics import PhobosError
from phobos.compile.gpu import ir, pipeline
from phobos.compile.interp import run as interpret
from phobos.compile.ir import nodes as tir
from phobos.compile.pipeline import parse_file
from phobos.compile.syntax import format_module, parse

from .conftest import assert_same_tensors, execute, ops, specialisation
from .pruned import assert_a_true_limit

ROOT = Path(__file__).resolve().parents[4]
EXAMPLES = sorted((ROOT / "examples").glob("*.ph"))
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.py"))
MODULES = {path.name: parse_file(path) for path in EXAMPLES}
KERNELS = {k.name: name for name, module in MODULES.items() for k in module.kernels}

FULL = os.environ.get("PHOBOS_GPU_IR_ALL") == "1"
COMBOS = (("sm_90a", True), ("sm_90a", False), ("sm_80", True), ("sm_80", False))
SAMPLES_PER_COMBO = 1 / 8  # of a kernel's variants, at least 2


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------------------- inputs


def normal(rng: np.random.Generator, shape, dtype, scale: float = 1.0) -> np.ndarray:
    x = (scale * rng.standard_normal(shape)).astype(dtype)
    return np.where(x == 0, np.asarray(0.5, dtype), x)  # never zero


def poisoned(shape, dtype) -> np.ndarray:
    return np.full(shape, np.nan, dtype)


def row_length(block_n: int) -> int:
    """A row of 3/4 of the tile less one: the tile's last quarter and one more lane absent."""
    return 3 * block_n // 4 - 1


def rows_for(rows: int) -> int:
    """Rows of a ``ROWS``-rows-per-block kernel: one block missing its last row (two blocks
    of one row for ``ROWS`` = 1), so the high rows of a block run, and an absent one."""
    return rows - 1 if rows > 1 else 2


def attention_tensors(rng, bh: int, s: int, d: int, causal: bool):
    """q, k, v, do (f16), and o, lse, delta as the forward and the preprocess make them
    (float64 numpy), so the backward kernels see the values they are made for."""
    q, k, v, do = (normal(rng, (bh, s, d), np.float16) for _ in range(4))
    sm_scale = np.float32(1 / math.sqrt(d))
    scores = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 2, 1) * float(sm_scale)
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    peak = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - peak)
    total = e.sum(axis=-1, keepdims=True)
    o = ((e / total) @ v.astype(np.float64)).astype(np.float16)
    lse = (peak + np.log(total))[..., 0].astype(np.float32)
    delta = (o.astype(np.float32) * do.astype(np.float32)).sum(axis=-1).astype(np.float32)
    return q, k, v, do, o, lse, delta, sm_scale


Case = tuple[list[object], tuple[int, ...]]


def dropout(v, rng) -> Case:
    n = 300
    args = [normal(rng, n, np.float32), poisoned(n, np.float32), np.float32(0.3), np.int64(-5)]
    return args, (cdiv(n, v["BLOCK"]),)


def vector_add(v, rng) -> Case:
    n = 300
    args = [normal(rng, n, np.float32), normal(rng, n, np.float32), poisoned(n, np.float32)]
    return args, (cdiv(n, v["BLOCK"]),)


def saxpy(v, rng) -> Case:
    n = 300
    x, y = normal(rng, n, np.float32), normal(rng, n, np.float32)
    return [x, y, poisoned(n, np.float32), np.float32(1.7)], (cdiv(n, v["BLOCK"]),)


def softmax(v, rng) -> Case:
    m, n = rows_for(v["ROWS"]), row_length(v["BLOCK_N"])
    x = normal(rng, (m, n), np.float32, scale=3.0)
    return [x, poisoned((m, n), np.float32)], (cdiv(m, v["ROWS"]),)


def softmax_online(v, rng) -> Case:
    # One full chunk and a partial one, in both loops (a partial one alone for tiles past
    # 2048 lanes, whose loops the smaller tiles' test the same way).
    block = v["BLOCK_N"]
    m, n = rows_for(v["ROWS"]), (block if block <= 2048 else 0) + row_length(block)
    x = normal(rng, (m, n), np.float32, scale=3.0)
    return [x, poisoned((m, n), np.float32)], (cdiv(m, v["ROWS"]),)


def layer_norm_forward(v, rng) -> Case:
    m, n = 3, row_length(v["BLOCK_N"])
    args = [
        normal(rng, (m, n), np.float16),
        normal(rng, n, np.float16),
        normal(rng, n, np.float16),
        poisoned((m, n), np.float16),
        poisoned(m, np.float32),
        poisoned(m, np.float32),
        np.float32(1e-5),
    ]
    return args, (m,)


def layer_norm_backward_dx(v, rng) -> Case:
    m, n = 3, row_length(v["BLOCK_N"])
    groups = cdiv(m, v["ROWS"])
    mean = normal(rng, m, np.float32, scale=0.1)
    rstd = (1 + rng.random(m)).astype(np.float32)
    args = [
        normal(rng, (m, n), np.float16),
        normal(rng, (m, n), np.float16),
        normal(rng, n, np.float16),
        mean,
        rstd,
        poisoned((m, n), np.float16),
        poisoned((groups, n), np.float32),
        poisoned((groups, n), np.float32),
    ]
    return args, (groups,)


def layer_norm_backward_dwdb(v, rng) -> Case:
    groups, n = 37, 100
    args = [
        normal(rng, (groups, n), np.float32),
        normal(rng, (groups, n), np.float32),
        poisoned(n, np.float16),
        poisoned(n, np.float16),
    ]
    return args, (cdiv(n, v["BLOCK_N"]),)


def rms_norm_forward(v, rng, dtype) -> Case:
    # Tiles up to 2048 lanes take the chunked path (a full chunk and a partial one), wider
    # ones hold the row in one tile (its last quarter absent).
    block = v["BLOCK_N"]
    m, n = rows_for(v["ROWS"]), (block if block <= 2048 else 0) + row_length(block)
    args = [
        normal(rng, (m, n), dtype),
        normal(rng, n, dtype),
        poisoned((m, n), dtype),
        poisoned(m, np.float32),
        np.float32(1e-6),
    ]
    return args, (cdiv(m, v["ROWS"]),)


def rms_norm_backward(v, rng, dtype) -> Case:
    # Up to 2048 lanes, 19 rows: a chunk of 16 and a partial one, both in the one block's
    # grid-stride loop; wider tiles (slow in the executor) one partial chunk of 3 rows.
    block = v["BLOCK_N"]
    m, n, groups = (19 if block <= 2048 else 3), row_length(block), 1
    args = [
        normal(rng, (m, n), dtype),
        normal(rng, (m, n), dtype),
        normal(rng, n, dtype),
        (1 + rng.random(m)).astype(np.float32),
        poisoned((m, n), dtype),
        poisoned((groups, n), np.float32),
    ]
    return args, (groups,)


def rms_norm_backward_c(v, rng, dtype) -> Case:
    # A full chunk and a partial one up to 2048 lanes, one partial chunk past.
    block = v["BLOCK_N"]
    m, n = rows_for(v["ROWS"]), (block if block <= 2048 else 0) + row_length(block)
    args = [
        normal(rng, (m, n), dtype),
        normal(rng, (m, n), dtype),
        normal(rng, n, dtype),
        (1 + rng.random(m)).astype(np.float32),
        poisoned(m, np.float32),
    ]
    return args, (cdiv(m, v["ROWS"]),)


def rms_norm_backward_chunked(v, rng, dtype) -> Case:
    # Up to 1024 lanes, 19 rows (a chunk of 16 and a partial one, in one group's grid-stride
    # loop) in two bands, the second partial; wider tiles one partial band of 3 rows.
    block = v["BLOCK_N"]
    m = 19 if block <= 1024 else 3
    n, groups = (block if block <= 1024 else 0) + row_length(block), 1
    args = [
        normal(rng, (m, n), dtype),
        normal(rng, (m, n), dtype),
        normal(rng, n, dtype),
        (1 + rng.random(m)).astype(np.float32),
        normal(rng, m, np.float32, scale=0.1),
        poisoned((m, n), dtype),
        poisoned((groups, n), np.float32),
    ]
    return args, (groups, cdiv(n, block))


def rms_norm_backward_dw(v, rng, dtype) -> Case:
    groups, n = 37, 100
    return [normal(rng, (groups, n), np.float32), poisoned(n, dtype)], (cdiv(n, v["BLOCK_N"]),)


def _bf16() -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def _typed(case, suffix: str, dtype: Callable[[], np.dtype]):
    """``case`` for the kernel of one element type (``rms_norm_forward_bf16``, ...)."""

    def typed(v, rng) -> Case:
        return case(v, rng, dtype())

    typed.__name__ = f"{case.__name__}_{suffix}"
    return typed


IGNORE = np.int64(-100)


def cross_entropy_rows(v, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Logits of 3 rows, a full chunk and a partial one up to 2048 lanes (one partial chunk
    past that), labels at the first column, ignored and at the last column, and each row's
    lse in f32 as the forward makes it."""
    block = v["BLOCK_V"]
    t, n = 3, (block if block <= 2048 else 0) + row_length(block)
    logits = normal(rng, (t, n), np.float32, scale=2.0)
    labels = np.array([0, IGNORE, n - 1], np.int64)
    x = logits.astype(np.float64)
    peak = x.max(axis=1)
    lse = (peak + np.log(np.exp(x - peak[:, None]).sum(axis=1))).astype(np.float32)
    return logits, labels, lse


def cross_entropy_forward(v, rng) -> Case:
    logits, labels, _ = cross_entropy_rows(v, rng)
    t = logits.shape[0]
    return [logits, labels, poisoned(t, np.float32), poisoned(t, np.float32), IGNORE], (t,)


def cross_entropy_backward(v, rng) -> Case:
    logits, labels, lse = cross_entropy_rows(v, rng)
    t = logits.shape[0]
    grad_loss = (1 + rng.random(t)).astype(np.float32)  # one a token: G = T
    divisor = np.array([2.0], np.float32)
    grad = poisoned(logits.shape, np.float32)
    return [logits, labels, lse, grad_loss, divisor, grad, IGNORE], (t,)


def cross_entropy_fused(v, rng) -> Case:
    logits, labels, _ = cross_entropy_rows(v, rng)
    t = logits.shape[0]
    outs = [poisoned(t, np.float32), poisoned(t, np.float32)]
    scalars = [np.array([0.7], np.float32), np.array([2.0], np.float32)]
    return [logits, labels, *outs, *scalars, IGNORE], (t,)


SMALL_TOKENS = 4096 + 300  # two chunks of the one-block kernels' 4096 lanes, the last partial


def cross_entropy_count(v, rng) -> Case:
    labels = rng.integers(0, 50, SMALL_TOKENS).astype(np.int64)
    labels[rng.random(SMALL_TOKENS) < 0.2] = IGNORE
    return [labels, poisoned(1, np.float32), IGNORE], (1,)


def cross_entropy_mean(v, rng) -> Case:
    loss = normal(rng, SMALL_TOKENS, np.float32)
    return [loss, np.array([3.0], np.float32), poisoned(1, np.float32)], (1,)


def matmul(v, rng) -> Case:
    m, n, k = 70, 50, 90
    a, b = normal(rng, (m, k), np.float16), normal(rng, (k, n), np.float16)
    return [a, b, poisoned((m, n), np.float16)], (cdiv(m, v["BM"]) * cdiv(n, v["BN"]),)


BH, S = 1, 100


def attention_forward(v, rng) -> Case:
    q, k, vv, _, _, _, _, scale = attention_tensors(rng, BH, S, v["D"], v["CAUSAL"] == 1)
    out = [poisoned((BH, S, v["D"]), np.float16), poisoned((BH, S), np.float32)]
    return [q, k, vv, *out, scale], (cdiv(S, v["BLOCK_M"]), BH)


def attention_backward_preprocess(v, rng) -> Case:
    _, _, _, do, o, _, _, _ = attention_tensors(rng, BH, S, v["D"], False)
    return [o, do, poisoned((BH, S), np.float32)], (cdiv(S, v["BLOCK_M"]), BH)


def attention_backward_dkdv(v, rng) -> Case:
    q, k, vv, do, _, lse, delta, scale = attention_tensors(rng, BH, S, v["D"], v["CAUSAL"] == 1)
    grads = [poisoned((BH, S, v["D"]), np.float16) for _ in range(2)]
    return [q, k, vv, do, lse, delta, *grads, scale], (cdiv(S, v["BLOCK_N"]), BH)


def attention_backward_dq(v, rng) -> Case:
    q, k, vv, do, _, lse, delta, scale = attention_tensors(rng, BH, S, v["D"], v["CAUSAL"] == 1)
    dq = poisoned((BH, S, v["D"]), np.float16)
    return [q, k, vv, do, lse, delta, dq, scale], (cdiv(S, v["BLOCK_M"]), BH)


# Each kernel's inputs and grid, the grid as its tutorial's host wrapper launches it:
# 01 cdiv(N, BLOCK); 02 cdiv(M, ROWS); 03 cdiv(M, BM) * cdiv(N, BN); 05 (M,), (groups,),
# cdiv(N, BLOCK_N); 06 (cdiv(S, BLOCK_M or BLOCK_N), BH); 07 cdiv(M, ROWS), (GROUPS,),
# (GROUPS, cdiv(N, BLOCK_N)), cdiv(N, BLOCK_N); 08 (T,) and (1,).
GRIDS: dict[str, Callable[[dict[str, int], np.random.Generator], Case]] = {
    f.__name__: f
    for f in (
        dropout,
        vector_add,
        saxpy,
        softmax,
        softmax_online,
        layer_norm_forward,
        layer_norm_backward_dx,
        layer_norm_backward_dwdb,
        *(
            _typed(case, suffix, dtype)
            for case in (
                rms_norm_forward,
                rms_norm_backward,
                rms_norm_backward_c,
                rms_norm_backward_chunked,
                rms_norm_backward_dw,
            )
            for suffix, dtype in (("f16", lambda: np.dtype(np.float16)), ("bf16", _bf16))
        ),
        cross_entropy_forward,
        cross_entropy_backward,
        cross_entropy_fused,
        cross_entropy_count,
        cross_entropy_mean,
        matmul,
        attention_forward,
        attention_backward_preprocess,
        attention_backward_dkdv,
        attention_backward_dq,
    )
}

# ---------------------------------------------------------------------------- the variants


def sample(count: int, combo: int) -> list[int]:
    """The variant indices combination ``combo`` (1..3) runs of a kernel's ``count``."""
    k = min(count, max(2, round(count * SAMPLES_PER_COMBO)))
    shift = (combo - 1) * count // (3 * k)
    return sorted({(j * count // k + shift) % count for j in range(k)})


def cases():
    for kernel, file in sorted(KERNELS.items()):
        variants = tune_space(MODULES[file], kernel).variants()
        for combo, (arch, specialised) in enumerate(COMBOS):
            chosen = range(len(variants)) if combo == 0 or FULL else sample(len(variants), combo)
            for i in chosen:
                values = variants[i]
                spec = "spec" if specialised else "plain"
                ident = f"{kernel}[{','.join(f'{k}={v}' for k, v in values.items())}]-{arch}-{spec}"
                yield pytest.param(kernel, values, arch, specialised, id=ident)


def row_alignment(tile, args) -> dict[str, int]:
    """Each tensor's row alignment as ``phobos.lang`` reads it from its array: the largest
    power of two up to 16 dividing every row stride in bytes (1 for an empty array)."""
    out = {}
    for param, arg in zip(tile.params, args):
        if isinstance(arg, np.ndarray) and arg.ndim:
            rows = [s for s, n in zip(arg.strides[:-1], arg.shape[:-1]) if n > 1]
            align = 16
            for s in rows:
                while s % align:
                    align //= 2
            out[param.name] = 1 if arg.size == 0 else align
    return out


def test_every_example_kernel_has_inputs():
    assert sorted(KERNELS) == sorted(GRIDS), "add the new kernel's inputs and grid to GRIDS"


def test_tutorial_kernels_are_the_examples():
    """The tutorials' Python kernels are the examples' (so the variants below cover them)."""
    from phobos.frontend import translate_file

    seen = set()
    for script in TUTORIALS:
        module = parse(translate_file(script).text, script.name)
        kernels = [k.name for k in module.kernels]
        files = {KERNELS[k] for k in kernels}
        assert len(files) == 1, f"{script.name}: kernels from several examples {files}"
        assert format_module(module) == format_module(MODULES[files.pop()])
        seen.update(kernels)
    assert seen <= set(KERNELS) and len(seen) >= 11


def test_the_sample_covers_each_kernel_three_ways():
    for count in (7, 10, 12, 16, 32, 44, 77):
        picks = [sample(count, combo) for combo in (1, 2, 3)]
        assert all(len(p) >= 2 for p in picks)
        assert all(0 <= i < count for p in picks for i in p)
        assert len(set().union(*map(set, picks))) > len(picks[0]), count


@pytest.mark.usefixtures("memoised_layouts")
@pytest.mark.parametrize(("kernel", "values", "arch", "specialised"), list(cases()))
def test_executor_matches_interpreter(kernel, values, arch, specialised):
    tile = lower(MODULES[KERNELS[kernel]], kernel, values)
    rng = np.random.default_rng(sum(map(ord, kernel)))
    args, grid = GRIDS[kernel](values, rng)
    facts = specialisation(tile, specialised)
    if specialised:  # rows on what the arrays give, as a launch reads it (TMA where 16)
        facts["row_align"] = row_alignment(tile, args)
    try:
        gpu = pipeline.build(tile, arch=arch, index_width=32, **facts)
    except PhobosError as exc:  # a variant past a limit is refused (the tuner prunes it)
        assert_a_true_limit(exc, values, arch)
        return
    assert_took_the_path(gpu, tile, arch, specialised)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpret(tile, grid, expected)
    execute(gpu, grid, got)
    names = [p.name for p in tile.params]
    assert_same_tensors(names, expected, got, args)


def assert_took_the_path(gpu: ir.Kernel, tile: tir.Kernel, arch: str, specialised: bool) -> None:
    """The variant runs the instructions its combination is there to test."""
    dots = ops(gpu, (ir.Wgmma, ir.MmaSync, ir.DotShared))
    if arch == "sm_80":
        assert not ops(gpu, ir.Wgmma)
    if not specialised:
        assert not ops(gpu, ir.CopyAsync)
    if arch == "sm_80" or not specialised:
        assert not ops(gpu, ir.CopyTma)
    elif tile.name == "attention_forward" and dict(tile.values)["D"] >= 64:
        assert ops(gpu, ir.CopyTma)  # k and v by TMA: rows on 16 bytes, both in wgmma layouts
    if tile.name == "matmul":
        assert dots
        if arch == "sm_80":
            assert all(isinstance(d, ir.MmaSync) for d in dots)
        elif tile.values and dict(tile.values)["NUM_THREADS"] == 128:  # one warpgroup: wgmma
            assert all(isinstance(d, ir.Wgmma) for d in dots)
        if specialised:
            assert ops(gpu, ir.CopyAsync)
