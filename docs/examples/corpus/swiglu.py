"""SwiGLU, forward and backward, in f16 and bf16 (the gated MLP of LLaMA-style models).

The MLP's two projections give ``gate = x @ W_gate`` and ``up = x @ W_up``; SwiGLU joins
them elementwise:

    silu(g) = g * sigmoid(g),   c = silu(gate) * up

and its backward pass, from ``dc``, is

    d_gate = dc * up * sigmoid(g) * (1 + g * (1 - sigmoid(g))),   d_up = dc * silu(gate)

Every kernel reads its operands in f16 or bf16, computes in f32 and rounds each result
once to the operands' type (torch's eager ``F.silu(gate) * up`` rounds twice: once after
``silu``, once after the product).  The arrays are seen as one run of ``N`` elements
(``flat``: C-contiguous arrays of any shape), ``BLOCK`` of them a block; the last block's
window hangs past ``N`` and its lanes there are absent, neither read nor written.

``forward`` and ``backward`` launch ``kernel[grid](...)`` and leave ``BLOCK`` to the
tuner on a GPU; on numpy arrays they run in the CPU interpreter (bf16 arrays are
``ml_dtypes.bfloat16``).  Run ``python docs/examples/corpus/swiglu.py`` to check the
kernels in the interpreter against numpy in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import phobos.lang as ph


# silu(g) = g * sigmoid(g), in f32.
@ph.func
def silu(g: ph.f32) -> ph.f32:
    return g * ph.sigmoid(g)


# d silu(g) / dg = sigmoid(g) * (1 + g * (1 - sigmoid(g))), in f32.
@ph.func
def silu_grad(g: ph.f32) -> ph.f32:
    s: ph.let = ph.sigmoid(g)
    return s * (1.0 + g * (1.0 - s))


# Forward: c = silu(gate) * up, BLOCK elements a block, rounded once to f16.
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def swiglu_forward_f16(
    gate: ph.tensor[ph.f16][N], up: ph.tensor[ph.f16][N], c: ph.tensor[ph.f16][N]
):
    base: ph.let = ph.ctx.block.x * BLOCK
    g: ph.let = ph.f32(gate[base:+BLOCK])
    c[base:+BLOCK] = ph.f16(silu(g) * ph.f32(up[base:+BLOCK]))


# The forward for bf16 operands.
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def swiglu_forward_bf16(
    gate: ph.tensor[ph.bf16][N], up: ph.tensor[ph.bf16][N], c: ph.tensor[ph.bf16][N]
):
    base: ph.let = ph.ctx.block.x * BLOCK
    g: ph.let = ph.f32(gate[base:+BLOCK])
    c[base:+BLOCK] = ph.bf16(silu(g) * ph.f32(up[base:+BLOCK]))


# Backward: d_gate = dc * up * silu'(gate) and d_up = dc * silu(gate), from one read of each.
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def swiglu_backward_f16(
    dc: ph.tensor[ph.f16][N],
    gate: ph.tensor[ph.f16][N],
    up: ph.tensor[ph.f16][N],
    d_gate: ph.tensor[ph.f16][N],
    d_up: ph.tensor[ph.f16][N],
):
    base: ph.let = ph.ctx.block.x * BLOCK
    grad: ph.let = ph.f32(dc[base:+BLOCK])
    g: ph.let = ph.f32(gate[base:+BLOCK])
    d_gate[base:+BLOCK] = ph.f16(grad * ph.f32(up[base:+BLOCK]) * silu_grad(g))
    d_up[base:+BLOCK] = ph.f16(grad * silu(g))


# The backward for bf16 operands.
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def swiglu_backward_bf16(
    dc: ph.tensor[ph.bf16][N],
    gate: ph.tensor[ph.bf16][N],
    up: ph.tensor[ph.bf16][N],
    d_gate: ph.tensor[ph.bf16][N],
    d_up: ph.tensor[ph.bf16][N],
):
    base: ph.let = ph.ctx.block.x * BLOCK
    grad: ph.let = ph.f32(dc[base:+BLOCK])
    g: ph.let = ph.f32(gate[base:+BLOCK])
    d_gate[base:+BLOCK] = ph.bf16(grad * ph.f32(up[base:+BLOCK]) * silu_grad(g))
    d_up[base:+BLOCK] = ph.bf16(grad * silu(g))


FORWARD = {"f16": swiglu_forward_f16, "bf16": swiglu_forward_bf16}
BACKWARD = {"f16": swiglu_backward_f16, "bf16": swiglu_backward_bf16}
KERNELS = (*FORWARD.values(), *BACKWARD.values())

# A numpy array (the launch runs in the CPU interpreter) or a GPU array (torch, CuPy).
Array = Any

# Relative errors (to the largest |value|) allowed against float64: twice what rounding one
# result to f16 or bf16 can cost (2^-11 and 2^-8 of the largest value); the f32 arithmetic
# before the rounding adds far less.
TOLERANCE = {"f16": 1e-3, "bf16": 8e-3}


def element_type(array: Array) -> str:
    """``f16`` or ``bf16`` for a numpy (ml_dtypes for bf16) or torch array."""
    name = str(array.dtype).removeprefix("torch.")
    types = {"float16": "f16", "bfloat16": "bf16"}
    if name not in types:
        raise TypeError(f"SwiGLU takes float16 or bfloat16 arrays, not {name}")
    return types[name]


def flat(array: Array) -> Array:
    """The C-contiguous ``array`` as one axis, without a copy (numpy or torch)."""
    if isinstance(array, np.ndarray):
        if not array.flags.c_contiguous:
            raise ValueError("SwiGLU takes C-contiguous arrays")
        return array.reshape(-1)
    return array.view(-1)


def blocks(meta: dict[str, int]) -> tuple[int]:
    """One block per BLOCK elements, rounding up."""
    return (-(-meta["N"] // meta["BLOCK"]),)


def forward(gate: Array, up: Array, c: Array, **launch: Any) -> None:
    """``c = silu(gate) * up``; ``launch`` passes launch options or fixes ``BLOCK``."""
    FORWARD[element_type(gate)][blocks](flat(gate), flat(up), flat(c), **launch)


def backward(dc: Array, gate: Array, up: Array, d_gate: Array, d_up: Array, **launch: Any) -> None:
    """``d_gate`` and ``d_up`` from ``dc``."""
    kernel = BACKWARD[element_type(gate)]
    kernel[blocks](flat(dc), flat(gate), flat(up), flat(d_gate), flat(d_up), **launch)


def reference(gate: np.ndarray, up: np.ndarray, dc: np.ndarray) -> dict[str, np.ndarray]:
    """Forward and backward in float64 with numpy: c, d_gate, d_up."""
    g, u, d = (np.asarray(a, dtype=np.float64) for a in (gate, up, dc))
    s = 1.0 / (1.0 + np.exp(-g))
    return {"c": g * s * u, "d_gate": d * u * s * (1.0 + g * (1.0 - s)), "d_up": d * g * s}


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


def cpu_inputs(shape: tuple[int, ...], kind: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Random gate, up and dc of one type: gate spans sigmoid's curve, up and dc around 1."""
    rng = np.random.default_rng(seed)
    dtype = numpy_dtype(kind)
    return {
        "gate": (3 * rng.standard_normal(shape)).astype(dtype),
        "up": rng.standard_normal(shape).astype(dtype),
        "dc": rng.standard_normal(shape).astype(dtype),
    }


def run_on_cpu(data: dict[str, np.ndarray], **launch: Any) -> dict[str, np.ndarray]:
    """Forward and backward in the interpreter, every output NaN-poisoned first."""
    gate = data["gate"]
    out = {name: np.full(gate.shape, np.nan, gate.dtype) for name in ("c", "d_gate", "d_up")}
    forward(gate, data["up"], out["c"], **launch)
    backward(data["dc"], gate, data["up"], out["d_gate"], out["d_up"], **launch)
    return out


def check_on_cpu(
    shape: tuple[int, ...] = (37, 111), kinds: tuple[str, ...] = ("f16", "bf16"), **launch: Any
) -> None:
    """Forward and backward in the interpreter against numpy, a size no BLOCK divides."""
    for kind in kinds:
        data = cpu_inputs(shape, kind)
        expected = reference(**data)
        got = run_on_cpu(data, **launch)
        for name, want in expected.items():
            error = relative_error(got[name], want)
            assert error < TOLERANCE[kind], f"{kind} {name}: relative error {error:.1e}"
        print(f"interpreter: {kind} SwiGLU forward and backward on {shape} match numpy")


if __name__ == "__main__":
    check_on_cpu()
