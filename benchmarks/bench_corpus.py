"""The kernel corpus (docs/examples/corpus/) against torch: eager and torch.compile.

Each corpus kernel runs through its script's wrapper (``kernel[grid](...)``, every tile name
left to the tuner; the first launch of a shape tunes and is not timed, and each row records
the choices).  Beside it, the same computation in torch's eager operations as a model writes
it ("eager") and that function under ``torch.compile(dynamic=False)`` ("compiled"), whose
backward passes (SwiGLU, GeGLU) come from autograd.  bf16 and f16:

- SwiGLU and GeGLU (tanh), forward and backward, ``[4096, N]`` for the MLP widths N of
  LLaMA-style models;
- rotate-half RoPE of q ``[T, 32, 128]`` and k ``[T, 8, 128]`` (grouped-query attention);
- dropout (p = 0.1) + residual add + layer norm forward, ``[4096, N]``;
- int8 row-wise quantisation and dequantisation, ``[4096, N]``.

Correctness first: every system's outputs against float64 (the eager function on float64
inputs), NaN anywhere an infinite error; Phobos must pass its script's ``TOLERANCE``, the
others' errors are recorded.  Dropout masks differ between systems, so each system's ``y`` is
checked against float64 layer norm of its own ``h``, and Phobos's ``h`` to the bit against
the definition on a sample of rows.  int8's ``q`` is compared exactly (mismatches counted).
GB/s: the bytes each operation must move (named at each case), over the median of
device-event timings with L2 flushed between repeats.  A system that fails to run (a
torch.compile error) is recorded with its error, and the others still run.  Run on a GPU:
``python -m benchmarks.bench_corpus``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from benchmarks.common import environment, load_corpus, median_ms, plot, write_json

M = 4096
GLU_WIDTHS = (4096, 11008, 14336)
ROPE_TOKENS = (1024, 4096, 16384)
ROPE_HEADS = (32, 8, 128)  # query heads, key heads, head_dim
ROW_WIDTHS = (1024, 4096, 8192, 12288)
P = 0.1
EPS = 1e-5
KINDS = ("bf16", "f16")
SYSTEMS = ("phobos", "eager", "compiled")

# Every shape and dtype compiles once: keep torch.compile from falling back to eager after
# its default number of recompilations of one function.
for _name in ("cache_size_limit", "recompile_limit"):
    if hasattr(torch._dynamo.config, _name):
        setattr(torch._dynamo.config, _name, 256)


def dtype_of(kind: str) -> torch.dtype:
    return {"bf16": torch.bfloat16, "f16": torch.float16}[kind]


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


def error(module, got: torch.Tensor, expected: torch.Tensor) -> float:
    """Relative error (to the largest |expected|); NaN anywhere counts as infinite."""
    if bool(got.isnan().any()):
        return float("inf")
    return module.relative_error(got, expected)


def require(module, system: str, bound: float, found: dict[str, float]) -> None:
    bad = {k: v for k, v in found.items() if not v < bound}
    if bad:
        raise AssertionError(f"{system}: relative errors {bad} against float64 ({bound})")


def attempt(row: dict, key: str, run: Callable[[], None]) -> None:
    """Run one system's check and timing; a failure is recorded, not raised."""
    try:
        run()
    except Exception:
        row[f"{key}_error"] = traceback.format_exc(limit=3)


def on_host(t: torch.Tensor) -> np.ndarray:
    """A GPU tensor on the host with its bits (bf16 as ``ml_dtypes.bfloat16``)."""
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).cpu().numpy().view(ml_dtypes.bfloat16)
    return t.cpu().numpy()


def nan_like(t: torch.Tensor) -> torch.Tensor:
    return torch.full_like(t, float("nan"))


def record_tuning(row: dict, part: str, kernel) -> None:
    report = kernel.tuning_report()
    row[f"phobos_{part}_choice"] = report.choice
    row[f"phobos_{part}_tuning"] = str(report)


# ---------------------------------------------------------------- SwiGLU and GeGLU


def glu_row(stem: str, kind: str, n: int) -> dict:
    """Forward reads gate and up and writes c, ``3 * M * n`` elements; backward reads dc,
    gate and up and writes d_gate and d_up, ``5 * M * n``."""
    module = load_corpus(stem)
    extra = ("tanh",) if stem == "geglu" else ()

    def activation(g):
        return F.gelu(g, approximate="tanh") if stem == "geglu" else F.silu(g)

    def eager(gate, up):
        return activation(gate) * up

    dtype = dtype_of(kind)
    gate = (2.0 if stem == "geglu" else 3.0) * torch.randn(M, n, device="cuda", dtype=dtype)
    up = torch.randn(M, n, device="cuda", dtype=dtype)
    dc = torch.randn(M, n, device="cuda", dtype=dtype)
    leaves = [t.double().requires_grad_() for t in (gate, up)]
    c64 = eager(*leaves)
    expected = dict(
        zip(("c", "d_gate", "d_up"), (c64.detach(), *torch.autograd.grad(c64, leaves, dc.double())))
    )
    size = gate.element_size()
    row: dict = {"kernel": stem, "kind": kind, "m": M, "n": n}
    bound = module.TOLERANCE[kind]

    out = {k: nan_like(gate) for k in expected}

    def phobos_forward():
        module.forward(gate, up, out["c"], *extra)

    def phobos_backward():
        module.backward(dc, gate, up, out["d_gate"], out["d_up"], *extra)

    phobos_forward()
    phobos_backward()
    found = {k: error(module, out[k], v) for k, v in expected.items()}
    require(module, "phobos", bound, found)
    row.update({f"phobos_{k}_error": v for k, v in found.items()})
    record_tuning(row, "forward", module.FORWARD[kind])
    record_tuning(row, "backward", module.BACKWARD[kind])
    row["phobos_forward_gbps"] = gbps(3 * M * n * size, median_ms(phobos_forward))
    row["phobos_backward_gbps"] = gbps(5 * M * n * size, median_ms(phobos_backward))

    for system, fn in (("eager", eager), ("compiled", torch.compile(eager, dynamic=False))):

        def run(system=system, fn=fn):
            grads = [t.detach().requires_grad_() for t in (gate, up)]
            c = fn(*grads)
            d_gate, d_up = torch.autograd.grad(c, grads, dc, retain_graph=True)
            got = {"c": c.detach(), "d_gate": d_gate, "d_up": d_up}
            row.update(
                {f"{system}_{k}_error": error(module, got[k], v) for k, v in expected.items()}
            )
            with torch.no_grad():
                row[f"{system}_forward_gbps"] = gbps(
                    3 * M * n * size, median_ms(lambda: fn(gate, up))
                )
            row[f"{system}_backward_gbps"] = gbps(
                5 * M * n * size,
                median_ms(lambda: torch.autograd.grad(c, grads, dc, retain_graph=True)),
            )

        attempt(row, system, run)
    return row


# ---------------------------------------------------------------- RoPE


def eager_rope(q, k, cos, sin, positions):
    """Hugging Face's ``apply_rotary_pos_emb``, the tables gathered by position."""
    c = cos[positions][:, None, :]
    s = sin[positions][:, None, :]

    def rotate_half(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    return (q * c + rotate_half(q) * s).to(q.dtype), (k * c + rotate_half(k) * s).to(k.dtype)


def rope_row(kind: str, t: int) -> dict:
    """Reads q and k and writes them rotated, ``2 * t * (H + KH) * D`` elements, and reads
    a row of each f32 table per token, ``2 * t * D * 4`` bytes."""
    module = load_corpus("rope")
    heads, kv_heads, dim = ROPE_HEADS
    dtype = dtype_of(kind)
    cos, sin = (torch.from_numpy(a).cuda() for a in module.tables(max(t, 4096), dim))
    positions = torch.randint(0, cos.shape[0], (t,), device="cuda", dtype=torch.int32)
    positions64 = positions.long()
    q = torch.randn(t, heads, dim, device="cuda", dtype=dtype)
    k = torch.randn(t, kv_heads, dim, device="cuda", dtype=dtype)
    expected = dict(
        zip(
            ("q_out", "k_out"),
            eager_rope(q.double(), k.double(), cos.double(), sin.double(), positions64),
        )
    )
    nbytes = 2 * t * (heads + kv_heads) * dim * q.element_size() + 2 * t * dim * 4
    row: dict = {
        "kernel": "rope",
        "kind": kind,
        "t": t,
        "heads": heads,
        "kv_heads": kv_heads,
        "dim": dim,
    }
    out = {"q_out": nan_like(q), "k_out": nan_like(k)}

    def phobos():
        module.rope(q, k, cos, sin, positions, out["q_out"], out["k_out"])

    phobos()
    found = {name: error(module, out[name], v) for name, v in expected.items()}
    require(module, "phobos", module.TOLERANCE[kind], found)
    row.update({f"phobos_{k}_error": v for k, v in found.items()})
    record_tuning(row, "forward", module.KERNELS[kind])
    row["phobos_forward_gbps"] = gbps(nbytes, median_ms(phobos))

    for system, fn in (
        ("eager", eager_rope),
        ("compiled", torch.compile(eager_rope, dynamic=False)),
    ):

        def run(system=system, fn=fn):
            got = dict(zip(("q_out", "k_out"), fn(q, k, cos, sin, positions64)))
            row.update(
                {f"{system}_{k}_error": error(module, got[k], v) for k, v in expected.items()}
            )
            row[f"{system}_forward_gbps"] = gbps(
                nbytes, median_ms(lambda: fn(q, k, cos, sin, positions64))
            )

        attempt(row, system, run)
    return row


# ---------------------------------------------------------------- dropout + add + layer norm


def eager_dropout_add_layer_norm(x, residual, w, b):
    h = residual + F.dropout(x, P, training=True)
    return h, F.layer_norm(h, (x.shape[1],), w, b, EPS)


def layer_norm_of(h, w, b):
    return F.layer_norm(h.double(), (h.shape[1],), w.double(), b.double(), EPS)


def dropout_row(kind: str, n: int) -> dict:
    """Reads x and residual and writes h and y, ``4 * M * n`` elements (w and b, ``2 * n``,
    and mean and rstd, ``8 * M`` bytes, beside them)."""
    module = load_corpus("dropout_add_layer_norm")
    dtype = dtype_of(kind)
    x = torch.randn(M, n, device="cuda", dtype=dtype)
    residual = (torch.randn(M, n, device="cuda") + 4 * torch.rand(M, 1, device="cuda") - 2).to(
        dtype
    )
    w = (0.5 + torch.rand(n, device="cuda")).to(dtype)
    b = (0.1 * torch.randn(n, device="cuda")).to(dtype)
    size = x.element_size()
    nbytes = (4 * M * n + 2 * n) * size
    row: dict = {"kernel": "dropout_add_layer_norm", "kind": kind, "m": M, "n": n, "p": P}
    bound = module.TOLERANCE[kind]
    out = {
        "h": nan_like(x),
        "y": nan_like(x),
        "mean": torch.full((M,), float("nan"), device="cuda"),
        "rstd": torch.full((M,), float("nan"), device="cuda"),
    }
    seed = 2024

    def phobos():
        module.forward(
            x, residual, w, b, out["h"], out["y"], out["mean"], out["rstd"], P, seed, EPS
        )

    phobos()
    sample = np.unique(np.linspace(0, M - 1, 64).astype(np.int64))  # the mask on the host
    keep = module.keep_mask(seed, P, M, n, sample)
    want_h = module.definition(on_host(x)[sample], on_host(residual)[sample], P, keep)
    got_h = on_host(out["h"])[sample]
    row["phobos_h_bits_equal"] = bool(np.array_equal(got_h.view(np.uint16), want_h.view(np.uint16)))
    if not row["phobos_h_bits_equal"]:
        raise AssertionError("phobos: h differs from the definition")
    found = {"y": error(module, out["y"], layer_norm_of(out["h"], w, b))}
    require(module, "phobos", bound, found)
    row["phobos_y_error"] = found["y"]
    record_tuning(row, "forward", module.KERNELS[kind])
    row["phobos_forward_gbps"] = gbps(nbytes, median_ms(phobos))

    for system, fn in (
        ("eager", eager_dropout_add_layer_norm),
        ("compiled", torch.compile(eager_dropout_add_layer_norm, dynamic=False)),
    ):

        def run(system=system, fn=fn):
            with torch.no_grad():
                h, y = fn(x, residual, w, b)
                row[f"{system}_y_error"] = error(module, y, layer_norm_of(h, w, b))
                row[f"{system}_forward_gbps"] = gbps(
                    nbytes, median_ms(lambda: fn(x, residual, w, b))
                )

        attempt(row, system, run)
    return row


# ---------------------------------------------------------------- int8 quantisation


def eager_quantize(x):
    values = x.float()
    absmax = values.abs().amax(dim=1)
    inv = torch.where(absmax > 0, 127.0 / absmax, torch.zeros_like(absmax))
    return torch.round(values * inv[:, None]).to(torch.int8), absmax / 127.0


def eager_dequantize(q, scale, dtype):
    return (q.float() * scale[:, None]).to(dtype)


def quant_row(kind: str, n: int) -> dict:
    """Quantise reads x and writes q, ``M * n * (size + 1)`` bytes (and the scales, ``4 *
    M``); dequantise reads q and writes x, the same."""
    module = load_corpus("int8_quant")
    dtype = dtype_of(kind)
    x = (torch.randn(M, n, device="cuda") * 10 ** (5 * torch.rand(M, 1, device="cuda") - 3)).to(
        dtype
    )
    nbytes = M * n * (x.element_size() + 1) + 4 * M
    definition = module.definition(x.float().cpu().numpy())
    row: dict = {"kernel": "int8_quant", "kind": kind, "m": M, "n": n}
    out = {
        "q": torch.full((M, n), -128, device="cuda", dtype=torch.int8),
        "scale": torch.full((M,), float("nan"), device="cuda"),
        "x_deq": nan_like(x),
    }

    def phobos_quantize():
        module.quantize(x, out["q"], out["scale"])

    def phobos_dequantize():
        module.dequantize(out["q"], out["scale"], out["x_deq"])

    phobos_quantize()
    phobos_dequantize()
    q = out["q"].cpu().numpy()
    if not (
        np.array_equal(q, definition["q"])
        and np.array_equal(out["scale"].cpu().numpy(), definition["scale"])
    ):
        raise AssertionError("phobos: q or scale differs from the f32 definition")
    module.check(
        {"q": q, "scale": out["scale"].cpu().numpy(), "x_deq": out["x_deq"].float().cpu().numpy()},
        x.float().cpu().numpy(),
        kind,
    )
    record_tuning(row, "quantize", module.QUANTIZE[kind])
    record_tuning(row, "dequantize", module.DEQUANTIZE[kind])
    row["phobos_forward_gbps"] = gbps(nbytes, median_ms(phobos_quantize))
    row["phobos_backward_gbps"] = gbps(nbytes, median_ms(phobos_dequantize))

    compiled_quantize = torch.compile(eager_quantize, dynamic=False)
    compiled_dequantize = torch.compile(eager_dequantize, dynamic=False)
    for system, quantize, dequantize in (
        ("eager", eager_quantize, eager_dequantize),
        ("compiled", compiled_quantize, compiled_dequantize),
    ):

        def run(system=system, quantize=quantize, dequantize=dequantize):
            q, scale = quantize(x)
            row[f"{system}_q_mismatches"] = int((q.cpu().numpy() != definition["q"]).sum())
            row[f"{system}_forward_gbps"] = gbps(nbytes, median_ms(lambda: quantize(x)))
            row[f"{system}_backward_gbps"] = gbps(
                nbytes, median_ms(lambda: dequantize(q, scale, dtype))
            )

        attempt(row, system, run)
    return row


# ---------------------------------------------------------------- the run

# (row maker, its argument, the x axis of its plot, its parts: what forward and backward are)
CASES = (
    *((glu_row, ("swiglu", n), "n", ("forward", "backward")) for n in GLU_WIDTHS),
    *((glu_row, ("geglu", n), "n", ("forward", "backward")) for n in GLU_WIDTHS),
    *((rope_row, (t,), "t", ("forward",)) for t in ROPE_TOKENS),
    *((dropout_row, (n,), "n", ("forward",)) for n in ROW_WIDTHS),
    *((quant_row, (n,), "n", ("forward", "backward")) for n in ROW_WIDTHS),
)
PART_NAMES = {"int8_quant": {"forward": "quantize", "backward": "dequantize"}}


def main() -> dict:
    rows = []
    for kind in KINDS:
        for make, args, axis, parts in CASES:
            if make is glu_row:
                row = make(args[0], kind, *args[1:])
            else:
                row = make(kind, *args)
            row["axis"] = axis
            row["parts"] = list(parts)
            rows.append(row)
            for part in parts:
                cells = "  ".join(f"{s} {row.get(f'{s}_{part}_gbps') or 0:8.1f}" for s in SYSTEMS)
                shown = PART_NAMES.get(row["kernel"], {}).get(part, part)
                print(
                    f"{kind} {row['kernel']:<23} {axis}={row[axis]:<6} {shown:10s} {cells} GB/s",
                    flush=True,
                )
    for kernel in ("swiglu", "geglu", "rope", "dropout_add_layer_norm", "int8_quant"):
        mine = [r for r in rows if r["kernel"] == kernel and r["kind"] == "bf16"]
        for part in mine[0]["parts"]:
            series = {
                s: [
                    (r[r["axis"]], r[f"{s}_{part}_gbps"]) for r in mine if r.get(f"{s}_{part}_gbps")
                ]
                for s in SYSTEMS
            }
            shown = PART_NAMES.get(kernel, {}).get(part, part)
            plot(
                f"corpus_{kernel}_{shown}_bf16",
                f"{kernel} {shown}, bf16 (H200)",
                "T (tokens)" if mine[0]["axis"] == "t" else "N (columns)",
                "GB/s",
                {k: v for k, v in series.items() if v},
            )
    return {"benchmark": "corpus", "m": M, "rows": rows}


if __name__ == "__main__":
    write_json("corpus", {**main(), "environment": environment()})
