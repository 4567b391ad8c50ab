"""Tutorial 06, fused attention forward and backward: Phobos against Triton and torch.

The kernels (Phobos, and Triton written as Triton's tutorial writes it) come
from docs/tutorials/06_fused_attention.py, so the benchmark times what the
tutorial teaches.  fp16 q, k, v of [B*H, S, D] with B=4, H=32, S=4096 and D 64
and 128, causal and not; sm_scale = 1/sqrt(D).  TFLOP/s: the forward counts
4 * B * H * S^2 * D (half when causal), the backward 2.5 times that (Triton's
tutorial's convention).  torch is ``scaled_dot_product_attention`` and its
autograd backward.  Every system is checked against a float64 reference (relative
error below 1e-2, no NaN) before it is timed.  Phobos's first launches tune each
kernel's tile names; the row records the variants chosen.  Run on a GPU:
``python -m benchmarks.bench_06_attention``.
"""

from __future__ import annotations

from benchmarks.common import environment, load_tutorial, median_ms, plot, write_json

B, H, S = 4, 32, 4096
HEAD_DIMS = (64, 128)
SYSTEMS = ("phobos", "triton", "torch")


def main() -> dict:
    tutorial = load_tutorial("06_fused_attention")
    triton_fns = tutorial.triton_attention()
    rows = []
    for d in HEAD_DIMS:
        for causal in (False, True):
            row = tutorial.measure_on_gpu(B, H, S, d, causal, triton_fns, median_ms)
            rows.append(row)
            for part in ("forward", "backward"):
                print(
                    f"D={d:<4} causal={causal!s:5} {part:8s} "
                    + "  ".join(f"{s} {row[f'{s}_{part}_tflops']:6.1f}" for s in SYSTEMS)
                    + " TFLOP/s",
                    flush=True,
                )
    for part in ("forward", "backward"):
        plot(
            f"06_attention_{part}",
            f"Fused attention {part}, fp16, B={B} H={H} S={S} (H200)",
            "D (head dim)",
            "TFLOP/s",
            {
                f"{system}{' causal' if causal else ''}": [
                    (r["d"], r[f"{system}_{part}_tflops"]) for r in rows if r["causal"] == causal
                ]
                for system in SYSTEMS
                for causal in (False, True)
            },
        )
    return {"benchmark": "06_attention", "b": B, "h": H, "s": S, "rows": rows}


if __name__ == "__main__":
    write_json("06_attention", {**main(), "environment": environment()})
