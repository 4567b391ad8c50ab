"""Tutorial 08, softmax cross-entropy forward and backward: Phobos against Triton and torch, fp32.

The kernels (Phobos, and Triton written the way Triton's tutorials write a row kernel: one
program a row, an online log-sum-exp over chunks) come from docs/tutorials/08_cross_entropy.py,
so the benchmark times what the tutorial teaches, through its wrappers: ``kernel[grid](...)``
with ``BLOCK_V`` left to the tuner.  The first launch of each shape tunes (it is not timed);
each row records the variants chosen and the tuning reports.  Beside them:
``torch.nn.functional.cross_entropy`` (``reduction="mean"``, ``ignore_index=-100``),
differentiated by autograd, and a device copy of the logits (``torch.Tensor.copy_``, "copy":
the bandwidth limit).

T = 8192 tokens of fp32 logits, V = 32000 (Llama 2), 50257 (GPT-2: rows not on 16 bytes),
65536 and 131072 (a 128k vocabulary), 1/16 of the labels ignored.  Three parts, each timed
as a user calls it:

- forward: the mean loss from the logits (Phobos: the count of labels, the row kernel, the
  mean; Triton: its row kernel and torch's count and mean; torch: ``cross_entropy``);
- backward: the gradient of the logits from the saved log-sum-exp (torch: autograd's
  backward of its graph);
- fused: the loss and the gradient in one pass (Phobos and Triton write the gradient over
  the logits, as Liger-Kernel does; torch: forward and backward in one call).  The fused
  runs overwrite a scratch copy of the logits again and again, which changes no timing.

GB/s: the bytes each part must move (``traffic`` in the tutorial), the same for every
system: the forward reads every row of logits (``4 * T * V``), the labels and writes the
losses and lse (``16 * T``); the backward reads the rows not ignored (an ignored row's
gradient is zeros without reading it) with their labels and lse and writes every row's
gradient; the fused part is both.  torch moves more than that (it writes the log-softmax
and reads it back), so its GB/s is what the work would take at its time.  The copy reads
and writes the logits, ``8 * T * V``.  Every system is checked against torch in float64
first (relative error below the tutorial's bound, no NaN): Phobos must pass, the others'
errors are recorded.  Medians of device-event timings, L2 flushed between repeats.  Run on
a GPU: ``python -m benchmarks.bench_08_cross_entropy``.
"""

from __future__ import annotations

import torch

from benchmarks.common import environment, load_tutorial, median_ms, plot, write_json

T = 8192
VOCABULARIES = (32000, 50257, 65536, 131072)
SYSTEMS = ("phobos", "triton", "torch")
PARTS = ("forward", "backward", "fused")


def error(tutorial, got, expected) -> float:
    """Relative error (NaN anywhere counts as an infinite error)."""
    return float("inf") if bool(got.isnan().any()) else tutorial.relative_error(got, expected)


def check(tutorial, expected: dict, systems: dict) -> dict[str, float]:
    """Each system's loss and gradient, plain and fused, against the float64 reference;
    Phobos's must pass."""
    found = {}
    for system, outputs in systems.items():
        for name, value in outputs.items():
            want = expected["loss"] if name.endswith("loss") else expected["grad"]
            found[f"{system}_{name}_error"] = error(tutorial, value, want)
    bad = {k: v for k, v in found.items() if k.startswith("phobos") and not v < tutorial.TOLERANCE}
    if bad:
        raise AssertionError(f"phobos: relative errors {bad} against float64 torch")
    return found


def measure(tutorial, triton_launchers, t: int, v: int) -> dict:
    """Check then time every system's forward, backward and fused pass on [t, v] logits."""
    triton_forward, triton_backward, triton_fused = triton_launchers
    logits, labels = tutorial.gpu_inputs(t, v, ignored=t // 16)
    n_valid = int((labels != tutorial.IGNORE_INDEX).sum())
    row: dict = {"t": t, "v": v, "n_valid": n_valid}
    copy = torch.empty_like(logits)
    row["copy_gbps"] = 2 * logits.numel() * 4 / (median_ms(lambda: copy.copy_(logits)) * 1e-3) / 1e9
    del copy

    # Every system's outputs, the first call of each Phobos kernel tuning it.
    ones = torch.ones(1, device="cuda")
    got = tutorial.cross_entropy(logits, labels)
    grad = torch.full_like(logits, float("nan"))
    tutorial.backward(logits, labels, got["lse"], ones, got["divisor"], grad)
    phobos_in_place = logits.clone()
    phobos_fused = tutorial.fused_cross_entropy(phobos_in_place, labels)
    triton_loss, _, triton_lse, triton_valid = triton_forward(logits, labels)
    triton_grad = triton_backward(logits, labels, triton_lse, ones, triton_valid)
    triton_in_place = logits.clone()
    triton_fused_loss = triton_fused(triton_in_place, labels)[0]
    torch_result = tutorial.torch_cross_entropy(logits, labels)
    expected = tutorial.torch_cross_entropy(logits.double(), labels)
    systems = {
        "phobos": {
            "loss": got["loss"][0],
            "grad": grad,
            "fused_loss": phobos_fused["loss"][0],
            "fused_grad": phobos_in_place,
        },
        "triton": {
            "loss": triton_loss,
            "grad": triton_grad,
            "fused_loss": triton_fused_loss,
            "fused_grad": triton_in_place,
        },
        "torch": {"loss": torch_result["loss"], "grad": torch_result["grad"]},
    }
    row.update(check(tutorial, expected, systems))
    # What the timings no longer need: the float64 reference, the gradients compared.
    del expected, systems, phobos_in_place, triton_in_place, triton_grad
    torch_result.pop("grad")
    for name in ("forward", "backward", "fused"):
        kernel = getattr(tutorial, f"cross_entropy_{name}")
        report = kernel.tuning_report()
        row[f"phobos_{name}_choice"] = report.choice
        row[f"phobos_{name}_tuning"] = str(report)

    torch_loss, leaf, _ = torch_result["graph"]
    scratch = logits.clone()

    def torch_step():
        step_leaf = logits.detach().requires_grad_()
        step_loss = torch.nn.functional.cross_entropy(step_leaf, labels)
        return torch.autograd.grad(step_loss, step_leaf)

    runs = {
        "phobos": {
            "forward": lambda: tutorial.cross_entropy(logits, labels),
            "backward": lambda: tutorial.backward(
                logits, labels, got["lse"], ones, got["divisor"], grad
            ),
            "fused": lambda: tutorial.fused_cross_entropy(scratch, labels),
        },
        "triton": {
            "forward": lambda: triton_forward(logits, labels),
            "backward": lambda: triton_backward(logits, labels, triton_lse, ones, triton_valid),
            "fused": lambda: triton_fused(scratch, labels),
        },
        "torch": {
            "forward": lambda: torch.nn.functional.cross_entropy(logits, labels),
            "backward": lambda: torch.autograd.grad(torch_loss, leaf, retain_graph=True),
            "fused": torch_step,
        },
    }
    size = tutorial.traffic(t, v, n_valid)
    for system, parts in runs.items():
        for part, run in parts.items():
            ms = median_ms(run)
            row[f"{system}_{part}_ms"] = ms
            row[f"{system}_{part}_gbps"] = size[part] / (ms * 1e-3) / 1e9
    for part in PARTS:
        row[f"phobos_{part}_of_copy"] = row[f"phobos_{part}_gbps"] / row["copy_gbps"]
    return row


def main() -> dict:
    tutorial = load_tutorial("08_cross_entropy")
    triton_launchers = tutorial.triton_cross_entropy()
    rows = []
    for v in VOCABULARIES:
        row = measure(tutorial, triton_launchers, T, v)
        rows.append(row)
        torch.cuda.empty_cache()
        for part in PARTS:
            cells = "  ".join(
                f"{system} {row[f'{system}_{part}_ms']:7.3f} ms {row[f'{system}_{part}_gbps']:7.1f}"
                for system in SYSTEMS
            )
            print(
                f"{T}x{v:<7} {part:8s} {cells}  GB/s  copy {row['copy_gbps']:7.1f} GB/s  "
                f"(phobos {100 * row[f'phobos_{part}_of_copy']:.0f}% of it)",
                flush=True,
            )
    for part in PARTS:
        series = {
            system: [(r["v"], r[f"{system}_{part}_gbps"]) for r in rows] for system in SYSTEMS
        }
        series["copy"] = [(r["v"], r["copy_gbps"]) for r in rows]
        plot(
            f"08_cross_entropy_{part}",
            f"Cross-entropy {part}, fp32, T={T} (H200)",
            "V (vocabulary)",
            "GB/s",
            series,
        )
    return {"benchmark": "08_cross_entropy", "t": T, "rows": rows}


if __name__ == "__main__":
    write_json("08_cross_entropy", {**main(), "environment": environment()})
