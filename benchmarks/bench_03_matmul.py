"""Tutorial 03, fp16 matmul: Phobos against Triton (written as its tutorial does) and torch.

The kernels come from docs/tutorials/03_matmul.py, so the benchmark times exactly
what the tutorial teaches.  Square fp16 matrices, fp32 accumulation, fp16 output;
TFLOP/s = 2 * M * N * K / t.  Phobos launches without fixing its tile names, so
its first launch of each size tunes BM, BN, BK and NUM_THREADS (compiling the
variants on threads); the row records the variant chosen.  Every system is
checked against torch in float64 (relative error below 1e-2, no NaN) before it
is timed.  Run on a GPU: ``python -m benchmarks.bench_03_matmul``.
"""

from __future__ import annotations

from benchmarks.common import environment, load_tutorial, median_ms, plot, write_json

SIZES = (1024, 4096, 8192)
# The fused leaky-ReLU epilogue is timed at this size.
ACTIVATION_SIZE = 4096


def report(row: dict) -> None:
    print(
        f"{row['size']}^3 leaky_relu={row['activation']!s:5} "
        f"phobos {row['phobos_tflops']:6.1f}  triton {row['triton_tflops']:6.1f}  "
        f"torch {row['torch_tflops']:6.1f} TFLOP/s  (phobos {row['phobos_variant']})",
        flush=True,
    )


def main() -> dict:
    tutorial = load_tutorial("03_matmul")
    triton_run = tutorial.triton_matmul()
    rows = []
    for size in SIZES:
        rows.append(tutorial.measure_on_gpu(size, False, triton_run, median_ms))
        report(rows[-1])
    fused = tutorial.measure_on_gpu(ACTIVATION_SIZE, True, triton_run, median_ms)
    report(fused)
    plot(
        "03_matmul",
        "fp16 matmul, fp32 accumulation (H200)",
        "M = N = K",
        "TFLOP/s",
        {
            name: [(r["size"], r[f"{name}_tflops"]) for r in rows]
            for name in ("phobos", "triton", "torch")
        },
    )
    return {"benchmark": "03_matmul", "rows": rows, "leaky_relu": fused}


if __name__ == "__main__":
    write_json("03_matmul", {**main(), "environment": environment()})
