"""Tutorial 07, RMS norm forward and backward: Phobos against Triton and torch, bf16 and f16.

The kernels (Phobos, and Triton written the way Triton's tutorial 05 writes layer norm)
come from docs/tutorials/07_rms_norm.py, so the benchmark times what the tutorial teaches,
through its wrappers ``forward`` and ``backward``: ``kernel[grid](...)`` with every tile
name left to the tuner.  The first launch of each shape tunes (it is not timed); each row
records the variants chosen and the tuning reports.  Beside them: torch's fused
``torch.nn.functional.rms_norm`` ("torch") and RMS norm written in torch's eager operations
as models write it ("eager", no torch.compile), both differentiated by autograd, and a
device copy of the matrix (``torch.Tensor.copy_``, "copy": the bandwidth limit).

M=4096 and N from 256 to 32768, then (32768, 768) and (65536, 128), the sizes of issue 16.
GB/s: the forward reads x and w and writes y, ``(2 * M * N + N) * size`` bytes; the
backward reads x and dy and writes dx, ``3 * M * N * size`` (Triton's tutorial formula; w,
rstd and the partial sums are not counted); the copy reads and writes the matrix,
``2 * M * N * size``.  Every system is checked against torch in float64 first (relative
error below the tutorial's bound, no NaN): Phobos must pass, the others' errors are recorded.
Phobos's backward holds a row in one tile up to 16384 columns; at 32768 it takes the wide
kernels, which read x and dy twice (once for each row's c, once for dx and dw: about
``5 * M * N * size`` bytes, plus the partial sums), and its figure is still the nominal
bytes above over the elapsed time of the whole backward, as for every system.  Medians of
device-event timings, L2 flushed between repeats.  Run on a GPU:
``python -m benchmarks.bench_07_rms_norm``.
"""

from __future__ import annotations

import torch

from benchmarks.common import environment, load_tutorial, median_ms, plot, write_json

M = 4096
SHAPES = (
    *((M, n) for n in (256, 512, 1024, 2048, 3000, 4096, 8192, 12288, 16384, 32768)),
    (32768, 768),
    (65536, 128),
)
KINDS = ("bf16", "f16")
EPS = 1e-6
SYSTEMS = ("phobos", "triton", "torch", "eager")


def dtype_of(kind: str) -> torch.dtype:
    return {"bf16": torch.bfloat16, "f16": torch.float16}[kind]


def errors(tutorial, got: dict, expected: dict, names) -> dict[str, float]:
    """Relative error of each output (NaN anywhere counts as an infinite error)."""
    found = {}
    for name in names:
        value = got[name]
        nan = bool(value.isnan().any())
        found[name] = float("inf") if nan else tutorial.relative_error(value, expected[name])
    return found


def require(tutorial, system: str, kind: str, found: dict[str, float]) -> None:
    bound = tutorial.TOLERANCE[kind]
    bad = {k: v for k, v in found.items() if not v < bound}
    if bad:
        raise AssertionError(f"{system}: relative errors {bad} against float64 torch ({bound})")


def measure(tutorial, triton_forward, triton_backward, kind: str, m: int, n: int) -> dict:
    """Check then time every system's forward and backward on an [m, n] matrix."""
    size = torch.empty(0, dtype=dtype_of(kind)).element_size()
    x, w, dy = tutorial.gpu_inputs(m, n, dtype_of(kind))
    expected = tutorial.torch_rms_norm(x.double(), w.double(), dy.double(), EPS)
    row: dict = {"kind": kind, "m": m, "n": n}

    def forward_gbps(ms: float) -> float:
        return (2 * m * n + n) * size / (ms * 1e-3) / 1e9

    def backward_gbps(ms: float) -> float:
        return 3 * m * n * size / (ms * 1e-3) / 1e9

    copy = torch.empty_like(x)
    row["copy_gbps"] = 2 * m * n * size / (median_ms(lambda: copy.copy_(x)) * 1e-3) / 1e9

    # Phobos through the tutorial's wrappers; the first call of each tunes.
    out = tutorial.phobos_buffers(x)

    def phobos_forward():
        tutorial.forward(x, w, out["y"], out["rstd"], EPS)

    def phobos_backward():
        tutorial.backward(dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"])

    phobos_forward()
    found = errors(tutorial, out, expected, ("y",))
    require(tutorial, "phobos forward", kind, found)
    report = tutorial.FORWARD[kind].tuning_report()
    row["phobos_forward_choice"] = report.choice
    row["phobos_forward_tuning"] = str(report)
    row["phobos_forward_gbps"] = forward_gbps(median_ms(phobos_forward))
    launches = tutorial.backward_launches(
        dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"]
    )
    phobos_backward()
    found.update(errors(tutorial, out, expected, ("dx", "dw")))
    require(tutorial, "phobos backward", kind, found)
    row["phobos_groups"] = out["dw_partial"].shape[0]
    row["phobos_backward_kernels"] = [kernel.name for kernel, *_ in launches]
    for kernel, *_ in launches:
        report = kernel.tuning_report()
        part = kernel.name.removeprefix("rms_norm_").removesuffix(f"_{kind}")
        row[f"phobos_{part}_choice"] = report.choice
        row[f"phobos_{part}_tuning"] = str(report)
    row["phobos_backward_gbps"] = backward_gbps(median_ms(phobos_backward))
    row.update({f"phobos_{k}_error": v for k, v in found.items()})

    y, rstd = triton_forward(x, w, EPS)
    dx, dw = triton_backward(dy, x, w, rstd)
    found = errors(tutorial, {"y": y, "dx": dx, "dw": dw}, expected, ("y", "dx", "dw"))
    row.update({f"triton_{k}_error": v for k, v in found.items()})
    row["triton_forward_gbps"] = forward_gbps(median_ms(lambda: triton_forward(x, w, EPS)))
    row["triton_backward_gbps"] = backward_gbps(median_ms(lambda: triton_backward(dy, x, w, rstd)))

    for system, run in (("torch", tutorial.torch_rms_norm), ("eager", tutorial.eager_rms_norm)):
        reference = run(x, w, dy, EPS)
        found = errors(tutorial, reference, expected, ("y", "dx", "dw"))
        row.update({f"{system}_{k}_error": v for k, v in found.items()})
        graph_y, leaves = reference["graph"]
        if system == "torch":

            def fwd():
                return torch.nn.functional.rms_norm(x, (n,), w, EPS)

        else:
            norm = reference["forward"]

            def fwd():
                return norm(x, w)  # noqa: B023

        row[f"{system}_forward_gbps"] = forward_gbps(median_ms(fwd))
        row[f"{system}_backward_gbps"] = backward_gbps(
            median_ms(lambda: torch.autograd.grad(graph_y, leaves, dy, retain_graph=True))  # noqa: B023
        )
    return row


def shape_text(row: dict) -> str:
    return f"{row['m']}x{row['n']}"


def main() -> dict:
    tutorial = load_tutorial("07_rms_norm")
    triton_forward, triton_backward = tutorial.triton_rms_norm()
    rows = []
    for kind in KINDS:
        for m, n in SHAPES:
            row = measure(tutorial, triton_forward, triton_backward, kind, m, n)
            rows.append(row)
            for part in ("forward", "backward"):
                cells = "  ".join(
                    f"{system} {row[f'{system}_{part}_gbps']:8.1f}" for system in SYSTEMS
                )
                print(
                    f"{kind} {shape_text(row):<11} {part:8s} {cells}  copy {row['copy_gbps']:8.1f}"
                    f" GB/s",
                    flush=True,
                )
    for kind in KINDS:
        for part in ("forward", "backward"):
            series = {
                name: [
                    (r["n"], r[f"{name}_{part}_gbps"])
                    for r in rows
                    if r["kind"] == kind and r["m"] == M
                ]
                for name in SYSTEMS
            }
            series["copy"] = [
                (r["n"], r["copy_gbps"]) for r in rows if r["kind"] == kind and r["m"] == M
            ]
            plot(
                f"07_rms_norm_{kind}_{part}",
                f"RMS norm {part}, {kind}, M={M} (H200)",
                "N (columns)",
                "GB/s",
                series,
            )
    return {"benchmark": "07_rms_norm", "m": M, "rows": rows}


if __name__ == "__main__":
    write_json("07_rms_norm", {**main(), "environment": environment()})
