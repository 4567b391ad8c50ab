"""Tutorial 01, vector add: Phobos against Triton (written as its tutorial does) and torch.

GB/s counts two reads and one write of fp32 per element.  Run on a GPU:
``PYTHONPATH=... python benchmarks/bench_01_vector_add.py`` (gpu_suite.py runs it).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

import phobos.lang as ph
from benchmarks.common import environment, median_ms, plot, write_json


@ph.kernel
@ph.autotune(BLOCK=[256, 16384])
def vector_add(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = x[base:+BLOCK] + y[base:+BLOCK]


@triton.jit
def triton_add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def phobos_add(x, y, out, block: int) -> None:
    vector_add[lambda m: (triton.cdiv(m["N"], m["BLOCK"]),)](x, y, out, BLOCK=block)


def triton_launch(x, y, out) -> None:
    n = out.numel()
    triton_add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)


PHOBOS_BLOCKS = (1024, 4096, 8192)


def measure(n: int) -> dict:
    """Check then time every system on one size; GB/s for two reads and one write."""
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    expected = x + y
    row: dict = {"n": n}
    best_ms, best_block = float("inf"), 0
    for block in PHOBOS_BLOCKS:
        out = torch.full_like(x, float("nan"))
        phobos_add(x, y, out, block)
        torch.testing.assert_close(out, expected, rtol=0, atol=0)
        ms = median_ms(lambda: phobos_add(x, y, out, block))  # noqa: B023
        row[f"phobos_block{block}_gbps"] = gbps(n, ms)
        if ms < best_ms:
            best_ms, best_block = ms, block
    row["phobos_gbps"] = gbps(n, best_ms)
    row["phobos_block"] = best_block
    out = torch.full_like(x, float("nan"))
    triton_launch(x, y, out)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)
    row["triton_gbps"] = gbps(n, median_ms(lambda: triton_launch(x, y, out)))
    row["torch_gbps"] = gbps(n, median_ms(lambda: torch.add(x, y, out=out)))
    return row


def gbps(n: int, ms: float) -> float:
    return 3 * n * 4 / (ms * 1e-3) / 1e9


def main() -> dict:
    rows = []
    for log2n in (12, 14, 16, 18, 20, 22, 24, 26, 27):
        row = measure(1 << log2n)
        rows.append(row)
        print(
            f"n=2^{log2n:<3} phobos {row['phobos_gbps']:8.1f} (BLOCK {row['phobos_block']})  "
            f"triton {row['triton_gbps']:8.1f}  torch {row['torch_gbps']:8.1f} GB/s",
            flush=True,
        )
    plot(
        "01_vector_add",
        "Vector add, fp32 (H200)",
        "elements",
        "GB/s",
        {
            name: [(r["n"], r[f"{name}_gbps"]) for r in rows]
            for name in ("phobos", "triton", "torch")
        },
    )
    return {"benchmark": "01_vector_add", "rows": rows}


if __name__ == "__main__":
    write_json("01_vector_add", {**main(), "environment": environment()})
