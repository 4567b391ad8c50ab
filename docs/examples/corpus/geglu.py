"""GeGLU, forward and backward, in f16 and bf16: GELU's tanh approximation and its erf form.

GeGLU gates the MLP's ``up`` projection with GELU of its ``gate`` projection,
``c = gelu(gate) * up``, where GELU is one of

    erf form:   gelu(g) = g / 2 * (1 + erf(g / sqrt(2)))
    tanh form:  gelu(g) = g / 2 * (1 + tanh(u)),   u = sqrt(2 / pi) * (g + 0.044715 g^3)

(torch's ``F.gelu(g, approximate="none")`` and ``approximate="tanh"``).  The backward pass,
from ``dc``, is ``d_gate = dc * up * gelu'(gate)`` and ``d_up = dc * gelu(gate)``, with

    erf form:   gelu'(g) = (1 + erf(g / sqrt(2))) / 2 + g * exp(-g^2 / 2) / sqrt(2 pi)
    tanh form:  gelu'(g) = (1 + t) / 2 + g / 2 * (1 - t^2) * sqrt(2 / pi) * (1 + 3 * 0.044715 g^2)

with ``t = tanh(u)``.  The wrappers take the tanh form unless told ``approximate="none"``
(GeGLU is usually defined with it).  The form is the kernels' scalar argument
``approximate`` (1: tanh, 0: erf), a block-uniform branch, so one kernel serves both.  As in ``swiglu.py``, operands
are f16 or bf16, arithmetic f32, each result rounded once, and the arrays are one run of
``N`` elements, ``BLOCK`` a block, the lanes past ``N`` absent.

``forward`` and ``backward`` launch ``kernel[grid](...)``, ``BLOCK`` left to the tuner.  Run
``python docs/examples/corpus/geglu.py`` to check both forms in the CPU interpreter against
numpy in float64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import phobos.lang as ph

SQRT_2_OVER_PI: ph.const = 0.7978845608028654
INV_SQRT_2: ph.const = 0.7071067811865476
INV_SQRT_2PI: ph.const = 0.3989422804014327
CUBIC: ph.const = 0.044715


# GELU's erf form, in f32.
@ph.func
def gelu_erf(g: ph.f32) -> ph.f32:
    return 0.5 * g * (1.0 + ph.erf(g * INV_SQRT_2))


# The derivative of GELU's erf form.
@ph.func
def gelu_erf_grad(g: ph.f32) -> ph.f32:
    return 0.5 * (1.0 + ph.erf(g * INV_SQRT_2)) + g * INV_SQRT_2PI * ph.exp(-0.5 * g * g)


# GELU's tanh approximation, in f32.
@ph.func
def gelu_tanh(g: ph.f32) -> ph.f32:
    t: ph.let = ph.tanh(SQRT_2_OVER_PI * (g + CUBIC * g * g * g))
    return 0.5 * g * (1.0 + t)


# The derivative of GELU's tanh approximation.
@ph.func
def gelu_tanh_grad(g: ph.f32) -> ph.f32:
    t: ph.let = ph.tanh(SQRT_2_OVER_PI * (g + CUBIC * g * g * g))
    slope: ph.let = SQRT_2_OVER_PI * (1.0 + 3.0 * CUBIC * g * g)
    return 0.5 * (1.0 + t) + 0.5 * g * (1.0 - t * t) * slope


# Forward: c = gelu(gate) * up, the tanh form where approximate != 0, rounded once to f16.
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def geglu_forward_f16(
    gate: ph.tensor[ph.f16][N],
    up: ph.tensor[ph.f16][N],
    c: ph.tensor[ph.f16][N],
    approximate: ph.i32,
):
    base: ph.let = ph.ctx.block.x * BLOCK
    g: ph.let = ph.f32(gate[base:+BLOCK])
    u: ph.let = ph.f32(up[base:+BLOCK])
    if approximate != 0:
        c[base:+BLOCK] = ph.f16(gelu_tanh(g) * u)
    else:
        c[base:+BLOCK] = ph.f16(gelu_erf(g) * u)


# The forward for bf16 operands.
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def geglu_forward_bf16(
    gate: ph.tensor[ph.bf16][N],
    up: ph.tensor[ph.bf16][N],
    c: ph.tensor[ph.bf16][N],
    approximate: ph.i32,
):
    base: ph.let = ph.ctx.block.x * BLOCK
    g: ph.let = ph.f32(gate[base:+BLOCK])
    u: ph.let = ph.f32(up[base:+BLOCK])
    if approximate != 0:
        c[base:+BLOCK] = ph.bf16(gelu_tanh(g) * u)
    else:
        c[base:+BLOCK] = ph.bf16(gelu_erf(g) * u)


# Backward: d_gate = dc * up * gelu'(gate) and d_up = dc * gelu(gate).
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def geglu_backward_f16(
    dc: ph.tensor[ph.f16][N],
    gate: ph.tensor[ph.f16][N],
    up: ph.tensor[ph.f16][N],
    d_gate: ph.tensor[ph.f16][N],
    d_up: ph.tensor[ph.f16][N],
    approximate: ph.i32,
):
    base: ph.let = ph.ctx.block.x * BLOCK
    grad: ph.let = ph.f32(dc[base:+BLOCK])
    g: ph.let = ph.f32(gate[base:+BLOCK])
    u: ph.let = ph.f32(up[base:+BLOCK])
    if approximate != 0:
        d_gate[base:+BLOCK] = ph.f16(grad * u * gelu_tanh_grad(g))
        d_up[base:+BLOCK] = ph.f16(grad * gelu_tanh(g))
    else:
        d_gate[base:+BLOCK] = ph.f16(grad * u * gelu_erf_grad(g))
        d_up[base:+BLOCK] = ph.f16(grad * gelu_erf(g))


# The backward for bf16 operands.
@ph.kernel
@ph.autotune(BLOCK=[256, 8192])
def geglu_backward_bf16(
    dc: ph.tensor[ph.bf16][N],
    gate: ph.tensor[ph.bf16][N],
    up: ph.tensor[ph.bf16][N],
    d_gate: ph.tensor[ph.bf16][N],
    d_up: ph.tensor[ph.bf16][N],
    approximate: ph.i32,
):
    base: ph.let = ph.ctx.block.x * BLOCK
    grad: ph.let = ph.f32(dc[base:+BLOCK])
    g: ph.let = ph.f32(gate[base:+BLOCK])
    u: ph.let = ph.f32(up[base:+BLOCK])
    if approximate != 0:
        d_gate[base:+BLOCK] = ph.bf16(grad * u * gelu_tanh_grad(g))
        d_up[base:+BLOCK] = ph.bf16(grad * gelu_tanh(g))
    else:
        d_gate[base:+BLOCK] = ph.bf16(grad * u * gelu_erf_grad(g))
        d_up[base:+BLOCK] = ph.bf16(grad * gelu_erf(g))


FORWARD = {"f16": geglu_forward_f16, "bf16": geglu_forward_bf16}
BACKWARD = {"f16": geglu_backward_f16, "bf16": geglu_backward_bf16}
KERNELS = (*FORWARD.values(), *BACKWARD.values())

# A numpy array (the launch runs in the CPU interpreter) or a GPU array (torch, CuPy).
Array = Any
FORMS = {"tanh": 1, "none": 0}  # torch's names for the two forms: approximate="tanh" / "none"

# Relative errors (to the largest |value|) allowed against float64: twice what rounding one
# result to f16 or bf16 can cost (2^-11 and 2^-8 of the largest value).
TOLERANCE = {"f16": 1e-3, "bf16": 8e-3}


def element_type(array: Array) -> str:
    """``f16`` or ``bf16`` for a numpy (ml_dtypes for bf16) or torch array."""
    name = str(array.dtype).removeprefix("torch.")
    types = {"float16": "f16", "bfloat16": "bf16"}
    if name not in types:
        raise TypeError(f"GeGLU takes float16 or bfloat16 arrays, not {name}")
    return types[name]


def flat(array: Array) -> Array:
    """The C-contiguous ``array`` as one axis, without a copy (numpy or torch)."""
    if isinstance(array, np.ndarray):
        if not array.flags.c_contiguous:
            raise ValueError("GeGLU takes C-contiguous arrays")
        return array.reshape(-1)
    return array.view(-1)


def blocks(meta: dict[str, int]) -> tuple[int]:
    """One block per BLOCK elements, rounding up."""
    return (-(-meta["N"] // meta["BLOCK"]),)


def forward(gate: Array, up: Array, c: Array, approximate: str = "tanh", **launch: Any) -> None:
    """``c = gelu(gate) * up``; ``approximate`` is ``"tanh"`` (GeGLU's usual form, the
    default) or ``"none"`` (erf), named as torch's ``F.gelu`` names them."""
    kernel = FORWARD[element_type(gate)]
    kernel[blocks](flat(gate), flat(up), flat(c), FORMS[approximate], **launch)


def backward(
    dc: Array,
    gate: Array,
    up: Array,
    d_gate: Array,
    d_up: Array,
    approximate: str = "tanh",
    **launch: Any,
) -> None:
    """``d_gate`` and ``d_up`` from ``dc``."""
    kernel = BACKWARD[element_type(gate)]
    args = (flat(dc), flat(gate), flat(up), flat(d_gate), flat(d_up), FORMS[approximate])
    kernel[blocks](*args, **launch)


def reference(
    gate: np.ndarray, up: np.ndarray, dc: np.ndarray, approximate: str = "tanh"
) -> dict[str, np.ndarray]:
    """Forward and backward in float64 with numpy: c, d_gate, d_up."""
    g, u, d = (np.asarray(a, dtype=np.float64) for a in (gate, up, dc))
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        t = np.tanh(k * (g + 0.044715 * g**3))
        gelu = 0.5 * g * (1 + t)
        grad = 0.5 * (1 + t) + 0.5 * g * (1 - t * t) * k * (1 + 3 * 0.044715 * g * g)
    else:
        erf = np.vectorize(math.erf)(g / math.sqrt(2))
        gelu = 0.5 * g * (1 + erf)
        grad = 0.5 * (1 + erf) + g * np.exp(-0.5 * g * g) / math.sqrt(2 * math.pi)
    return {"c": gelu * u, "d_gate": d * u * grad, "d_up": d * gelu}


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
    """Random gate, up and dc of one type: gate spans GELU's bend, up and dc around 1."""
    rng = np.random.default_rng(seed)
    dtype = numpy_dtype(kind)
    return {
        "gate": (2 * rng.standard_normal(shape)).astype(dtype),
        "up": rng.standard_normal(shape).astype(dtype),
        "dc": rng.standard_normal(shape).astype(dtype),
    }


def run_on_cpu(
    data: dict[str, np.ndarray], approximate: str, **launch: Any
) -> dict[str, np.ndarray]:
    """Forward and backward in the interpreter, every output NaN-poisoned first."""
    gate, up = data["gate"], data["up"]
    out = {name: np.full(gate.shape, np.nan, gate.dtype) for name in ("c", "d_gate", "d_up")}
    forward(gate, up, out["c"], approximate, **launch)
    backward(data["dc"], gate, up, out["d_gate"], out["d_up"], approximate, **launch)
    return out


def check_on_cpu(
    shape: tuple[int, ...] = (37, 111), kinds: tuple[str, ...] = ("f16", "bf16"), **launch: Any
) -> None:
    """Both forms, forward and backward, in the interpreter against numpy."""
    for kind in kinds:
        for approximate in FORMS:
            data = cpu_inputs(shape, kind)
            expected = reference(**data, approximate=approximate)
            got = run_on_cpu(data, approximate, **launch)
            for name, want in expected.items():
                error = relative_error(got[name], want)
                assert error < TOLERANCE[kind], f"{kind} {approximate} {name}: error {error:.1e}"
            print(f"interpreter: {kind} GeGLU ({approximate}) on {shape} matches numpy")


if __name__ == "__main__":
    check_on_cpu()
