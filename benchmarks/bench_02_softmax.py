"""Tutorial 02, fused softmax: Phobos against Triton (written as its tutorial does) and torch.

The kernels come from docs/tutorials/02_fused_softmax.py, so the benchmark times
exactly what the tutorial teaches, through its ``run_softmax(x, out)``: the tile
that holds a row, and ``ROWS`` left to the tuner (its first launch of each shape
tunes; the row records the variant chosen and the tuning report).  Rows of M=4096
fp32; GB/s counts one read and one write of the matrix (2 * M * N * 4 bytes), as
Triton's tutorial does.  Every system is checked against torch in float64 (relative
error below 1e-5, no NaN) before it is timed.  Run on a GPU:
``python -m benchmarks.bench_02_softmax``.
"""

from __future__ import annotations

import torch

from benchmarks.common import environment, load_tutorial, median_ms, plot, write_json

M = 4096
SIZES = (512, 1024, 2048, 3000, 4096, 8192, 12288)


def relative_error(got: torch.Tensor, expected: torch.Tensor) -> float:
    return float((got.double() - expected).abs().max() / expected.abs().max())


def checked(name: str, got: torch.Tensor, expected: torch.Tensor) -> float:
    """The relative error; raises if it is 1e-5 or more, or if anything is NaN."""
    error = relative_error(got, expected)
    if not error < 1e-5 or bool(got.isnan().any()):
        raise AssertionError(f"{name}: relative error {error:.2e} against float64 torch")
    return error


def gbps(n: int, ms: float) -> float:
    return 2 * M * n * 4 / (ms * 1e-3) / 1e9


def measure(tutorial, triton_run, n: int) -> dict:
    """Check then time every system on an [M, n] matrix."""
    x = torch.randn(M, n, device="cuda")
    expected = torch.softmax(x.double(), dim=1)
    out = torch.empty_like(x)
    row: dict = {"n": n, "block_n": tutorial.covering_tile(n)}
    out.fill_(float("nan"))
    tutorial.run_softmax(x, out)  # the first launch of the shape tunes ROWS
    report = tutorial.softmax.tuning_report()
    row["phobos_error"] = checked("phobos", out, expected)
    row["phobos_gbps"] = gbps(n, median_ms(lambda: tutorial.run_softmax(x, out)))
    row["phobos_rows"] = report.choice["ROWS"]
    row["phobos_tuning"] = str(report)
    out.fill_(float("nan"))
    triton_run(x, out)
    row["triton_error"] = checked("triton", out, expected)
    row["triton_gbps"] = gbps(n, median_ms(lambda: triton_run(x, out)))
    row["torch_error"] = checked("torch", torch.softmax(x, dim=1), expected)
    row["torch_gbps"] = gbps(n, median_ms(lambda: torch.softmax(x, dim=1)))
    return row


def main() -> dict:
    tutorial = load_tutorial("02_fused_softmax")
    triton_run = tutorial.triton_softmax()
    rows = []
    for n in SIZES:
        row = measure(tutorial, triton_run, n)
        rows.append(row)
        print(
            f"{M}x{n:<6} phobos {row['phobos_gbps']:8.1f} (ROWS {row['phobos_rows']})  "
            f"triton {row['triton_gbps']:8.1f}  torch {row['torch_gbps']:8.1f} GB/s",
            flush=True,
        )
    plot(
        "02_softmax",
        f"Fused softmax, fp32, M={M} (H200)",
        "N (columns)",
        "GB/s",
        {
            name: [(r["n"], r[f"{name}_gbps"]) for r in rows]
            for name in ("phobos", "triton", "torch")
        },
    )
    return {"benchmark": "02_softmax", "m": M, "rows": rows}


if __name__ == "__main__":
    write_json("02_softmax", {**main(), "environment": environment()})
