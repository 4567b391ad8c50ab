"""The kernel corpus (docs/examples/corpus/) on the GPU against torch in float64, f16 and
bf16, through each script's wrappers (``kernel[grid](...)``, the tuner choosing every tile
name) and at fixed variants; every output NaN-poisoned before the launch.  Where a result is
defined to the bit (dropout's ``h``, int8's ``q`` and ``scale``) it is compared bit for bit
with numpy's definition and with the CPU interpreter's run on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_corpus import geglu, ln, quant, rope, swiglu

pytestmark = pytest.mark.gpu

KINDS = ["f16", "bf16"]


def torch_dtype(kind: str):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16}[kind]


def nan_like(t):
    import torch

    return torch.full_like(t, float("nan"))


def to_numpy(t) -> np.ndarray:
    """A GPU tensor on the host with its bits (bf16 as ``ml_dtypes.bfloat16``)."""
    import ml_dtypes
    import torch

    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    return t.cpu().numpy()


def assert_close(module, got: dict, want: dict, kind: str) -> None:
    for name, expected in want.items():
        value = got[name]
        assert not bool(value.isnan().any()), f"{kind} {name}: NaN (an element left unwritten?)"
        error = module.relative_error(value, expected)
        bound = module.TOLERANCE[kind]
        assert error < bound, f"{kind} {name}: relative error {error:.2e} (bound {bound})"


def autograd(fn, *inputs, grad):
    """``fn(*inputs)`` and its gradients for ``grad``, in float64."""
    import torch

    leaves = [t.detach().double().requires_grad_() for t in inputs]
    out = fn(*leaves)
    return out.detach(), torch.autograd.grad(out, leaves, grad.double())


# ---------------------------------------------------------------- SwiGLU and GeGLU

GLU_SHAPES = [(37, 111), (1, 1), (3, 8193), (4096, 11008)]


def glu_inputs(shape, kind: str) -> dict:
    import torch

    dtype = torch_dtype(kind)
    return {
        "gate": 3 * torch.randn(shape, device="cuda", dtype=dtype),
        "up": torch.randn(shape, device="cuda", dtype=dtype),
        "dc": torch.randn(shape, device="cuda", dtype=dtype),
    }


def run_glu(module, data: dict, extra: tuple, **names) -> dict:
    out = {k: nan_like(data["gate"]) for k in ("c", "d_gate", "d_up")}
    module.forward(data["gate"], data["up"], out["c"], *extra, **names)
    module.backward(data["dc"], data["gate"], data["up"], out["d_gate"], out["d_up"], *extra,
                    **names)  # fmt: skip
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", GLU_SHAPES, ids=str)
@pytest.mark.parametrize("block", [None, 256, 8192])
def test_swiglu_matches_torch_in_float64(kind, shape, block):
    import torch.nn.functional as F

    data = glu_inputs(shape, kind)
    c, (d_gate, d_up) = autograd(lambda g, u: F.silu(g) * u, data["gate"], data["up"],
                                 grad=data["dc"])  # fmt: skip
    names = {} if block is None else {"BLOCK": block}
    got = run_glu(swiglu, data, (), **names)
    assert_close(swiglu, got, {"c": c, "d_gate": d_gate, "d_up": d_up}, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["tanh", "none"])
@pytest.mark.parametrize("shape", GLU_SHAPES, ids=str)
@pytest.mark.parametrize("block", [None, 256, 8192])
def test_geglu_matches_torch_in_float64(kind, form, shape, block):
    import torch.nn.functional as F

    data = glu_inputs(shape, kind)
    data["gate"] = data["gate"] * (2 / 3)  # GELU's bend, as the CPU test's inputs
    c, (d_gate, d_up) = autograd(lambda g, u: F.gelu(g, approximate=form) * u,
                                 data["gate"], data["up"], grad=data["dc"])  # fmt: skip
    names = {} if block is None else {"BLOCK": block}
    got = run_glu(geglu, data, (form,), **names)
    assert_close(geglu, got, {"c": c, "d_gate": d_gate, "d_up": d_up}, kind)


# ---------------------------------------------------------------- RoPE

ROPE_SHAPES = [(7, 5, 3, 80), (1, 1, 1, 24), (4096, 32, 8, 128), (333, 33, 2, 64)]


def rope_inputs(t: int, heads: int, kv_heads: int, dim: int, kind: str) -> dict:
    import torch

    cos, sin = rope.tables(4096, dim)
    dtype = torch_dtype(kind)
    return {
        "q": torch.randn(t, heads, dim, device="cuda", dtype=dtype),
        "k": torch.randn(t, kv_heads, dim, device="cuda", dtype=dtype),
        "cos": torch.from_numpy(cos).cuda(),
        "sin": torch.from_numpy(sin).cuda(),
        "positions": torch.randint(0, 4096, (t,), device="cuda", dtype=torch.int32),
    }


def torch_rope(q, k, cos, sin, positions) -> dict:
    """Hugging Face's ``apply_rotary_pos_emb`` in float64."""
    import torch

    c = cos.double()[positions.long()][:, None, :]
    s = sin.double()[positions.long()][:, None, :]

    def rotate(x):
        x = x.double()
        x1, x2 = x.chunk(2, dim=-1)
        return x * c + torch.cat([-x2, x1], dim=-1) * s

    return {"q_out": rotate(q), "k_out": rotate(k)}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROPE_SHAPES, ids=str)
@pytest.mark.parametrize("tiles", [None, (1, 16), (32, 128)], ids=str)
def test_rope_matches_torch_in_float64(kind, shape, tiles):
    data = rope_inputs(*shape, kind)
    out = {"q_out": nan_like(data["q"]), "k_out": nan_like(data["k"])}
    names = {} if tiles is None else {"BLOCK_H": tiles[0], "BLOCK_D": tiles[1]}
    rope.rope(**data, **out, **names)
    assert_close(rope, out, torch_rope(**data), kind)


def test_rope_takes_heads_sliced_from_a_qkv_buffer():
    import torch

    data = rope_inputs(300, 8, 2, 128, "bf16")
    qkv = torch.cat([data["q"], data["k"]], dim=1)
    data.update(q=qkv[:, :8], k=qkv[:, 8:])
    out = {"q_out": nan_like(data["q"]), "k_out": nan_like(data["k"])}
    rope.rope(**data, **out)
    assert_close(rope, out, torch_rope(**data), "bf16")


# ---------------------------------------------------------------- dropout + add + layer norm

LN_SHAPES = [(37, 300), (4096, 4096), (1000, 3000), (64, 16384), (9, 20000)]


def ln_inputs(m: int, n: int, kind: str) -> dict:
    import torch

    dtype = torch_dtype(kind)
    offset = 4 * torch.rand(m, 1, device="cuda") - 2
    return {
        "x": torch.randn(m, n, device="cuda", dtype=dtype),
        "residual": (torch.randn(m, n, device="cuda") + offset).to(dtype),
        "w": (0.5 + torch.rand(n, device="cuda")).to(dtype),
        "b": (0.1 * torch.randn(n, device="cuda")).to(dtype),
    }


def run_ln(data: dict, p: float, seed: int, **names) -> dict:
    import torch

    x = data["x"]
    m = x.shape[0]
    out = {
        "h": nan_like(x),
        "y": nan_like(x),
        "mean": torch.full((m,), float("nan"), device="cuda"),
        "rstd": torch.full((m,), float("nan"), device="cuda"),
    }
    ln.forward(**data, **out, p=p, seed=seed, **names)
    return out


def check_ln(got: dict, data: dict, p: float, seed: int) -> None:
    """h to the bit against the definition on a sample of rows (drawing the mask on the host
    is slow), y, mean and rstd against torch's float64 layer norm of the kernel's h."""
    import torch

    kind = ln.element_type(data["x"])
    m, n = data["x"].shape
    rows = np.unique(np.linspace(0, m - 1, min(m, 64)).astype(np.int64))
    keep = ln.keep_mask(seed, p, m, n, rows)
    host = {k: to_numpy(data[k])[rows] for k in ("x", "residual")}
    want_h = ln.definition(host["x"], host["residual"], p, keep)
    got_h = to_numpy(got["h"])[rows]
    assert np.array_equal(got_h.view(np.uint16), want_h.view(np.uint16)), "h differs"
    h = got["h"].double()
    w, b = data["w"].double(), data["b"].double()
    y = torch.nn.functional.layer_norm(h, (n,), w, b, 1e-5)
    var, mean = torch.var_mean(h, dim=1, unbiased=False)
    want = {"y": y, "mean": mean, "rstd": 1 / torch.sqrt(var + 1e-5)}
    for name, expected in want.items():
        bound = ln.TOLERANCE[kind if name == "y" else "stats"]
        error = ln.relative_error(got[name], expected)
        assert error < bound, f"{kind} {name}: relative error {error:.2e} (bound {bound})"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("p", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("m, n", LN_SHAPES, ids=[f"{m}x{n}" for m, n in LN_SHAPES])
def test_dropout_add_layer_norm_tuned_matches_float64(kind, p, m, n):
    data = ln_inputs(m, n, kind)
    got = run_ln(data, p, seed=2024)
    check_ln(got, data, p, seed=2024)
    assert ln.KERNELS[kind].tuning_report().choice


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "rows, block_n, n", [(1, 1024, 3000), (4, 256, 1000), (8, 128, 300), (2, 4096, 4096)]
)
def test_dropout_add_layer_norm_fixed_variants(kind, rows, block_n, n):
    """Both paths: chunks of BLOCK_N (the block reads back the h it stored) and one tile."""
    data = ln_inputs(4 * rows + 3, n, kind)  # the last block has 3 of its rows
    got = run_ln(data, 0.25, seed=7, ROWS=rows, BLOCK_N=block_n)
    check_ln(got, data, 0.25, seed=7)


@pytest.mark.parametrize("kind", KINDS)
def test_dropout_h_is_the_interpreters_to_the_bit(kind):
    """The same inputs in the CPU interpreter and on the GPU give the same h, bit for bit
    (and y within rounding: its sums go in another order)."""
    data = ln_inputs(37, 1100, kind)
    gpu = run_ln(data, 0.3, seed=99)
    host = {k: to_numpy(v) for k, v in data.items()}
    cpu = ln.run_on_cpu(host, 0.3, 99)
    assert np.array_equal(to_numpy(gpu["h"]).view(np.uint16), cpu["h"].view(np.uint16))
    error = ln.relative_error(to_numpy(gpu["y"]), np.asarray(cpu["y"], np.float64))
    assert error < 2 * ln.TOLERANCE[kind]  # each within TOLERANCE of float64


# ---------------------------------------------------------------- int8 quantisation

QUANT_SHAPES = [(37, 300), (4096, 4096), (1000, 3000), (5, 20000), (9, 1)]


def quant_inputs(m: int, n: int, kind: str):
    import torch

    scales = 10 ** (5 * torch.rand(m, 1, device="cuda") - 3)
    x = torch.randn(m, n, device="cuda") * scales
    x[m // 2] = 0
    return x.to(torch_dtype(kind))


def run_quant(x, **names) -> dict:
    import torch

    m, n = x.shape
    out = {
        "q": torch.full((m, n), -128, device="cuda", dtype=torch.int8),
        "scale": torch.full((m,), float("nan"), device="cuda"),
        "x_deq": nan_like(x),
    }
    quant.quantize(x, out["q"], out["scale"], **names)
    quant.dequantize(out["q"], out["scale"], out["x_deq"], **names)
    return out


def check_quant(got: dict, x) -> None:
    """q and scale to the bit against numpy's f32 definition; then the float64 checks."""
    kind = quant.element_type(x)
    host = x.float().cpu().numpy()  # exact: f16 and bf16 are f32 values
    definition = quant.definition(host)
    q, scale = got["q"].cpu().numpy(), got["scale"].cpu().numpy()
    assert np.array_equal(q, definition["q"]), "q differs from the f32 definition"
    assert np.array_equal(scale, definition["scale"]), "scale differs from the f32 definition"
    deq = got["x_deq"].float().cpu().numpy()
    quant.check({"q": q, "scale": scale, "x_deq": deq}, host, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m, n", QUANT_SHAPES, ids=[f"{m}x{n}" for m, n in QUANT_SHAPES])
def test_int8_quantisation_tuned_matches(kind, m, n):
    x = quant_inputs(m, n, kind)
    check_quant(run_quant(x), x)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows, block_n", [(1, 1024), (8, 128), (2, 4096)])
def test_int8_quantisation_fixed_variants(kind, rows, block_n):
    x = quant_inputs(4 * rows + 3, 3000, kind)
    check_quant(run_quant(x, ROWS=rows, BLOCK_N=block_n), x)
