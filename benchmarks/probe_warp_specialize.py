"""Probe: warp specialisation on and off, for the same variants of tutorials 03 and 06.

The tutorials' kernel texts with ``WARP_SPECIALIZE in {1, 0}`` added to their spaces (and
attention's ``BLOCK_N`` widened to 128),
each variant compiled for this GPU both ways (``passes/warp_specialize.py``), checked
against torch and timed (median of device events, L2 flushed): matmul at 4096³ and
8192³, the attention forward at B4 H32 S4096.  Run on a GPU:
``python -m benchmarks.probe_warp_specialize [matmul] [attention]`` (both without an argument).
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks.common import ROOT, environment, median_ms, write_json
from phobos.compile.pipeline import compile_file
from phobos.lang.dispatch import device_arch
from phobos.launch import load_kernel

CHOICE = ", WARP_SPECIALIZE in {1, 0})\nkernel "
MATMUL_TILES = [(128, 256, 64, 256), (128, 128, 64, 256), (128, 128, 64, 128)]
# D, BLOCK_M, BLOCK_N, NUM_THREADS; BLOCK_N = 128 is outside the tutorial's space, which the
# probe widens to see whether wider key blocks pay (WIDER).
ATTENTION = [
    (64, 128, 64, 256),
    (64, 128, 128, 256),
    (128, 128, 32, 256),
    (128, 128, 64, 256),
    (128, 128, 128, 256),
]
WIDER = {"BLOCK_N in {64, 32}": "BLOCK_N in {64, 32, 128}"}


def with_choice(example: str, kernel: str) -> Path:
    text = (ROOT / "examples" / example).read_text()
    marker = f")\nkernel {kernel}("
    assert marker in text, f"{example}: no @autotune line before kernel {kernel}"
    for old, new in WIDER.items():
        text = text.replace(old, new)
    path = Path(tempfile.mkdtemp()) / example
    path.write_text(text.replace(marker, CHOICE + kernel + "(", 1))
    return path


def loaded(path: Path, kernel: str, values: dict, arch: str):
    compiled = compile_file(path, kernel, values, arch=arch)[kernel]
    return load_kernel(compiled.contract.to_json(), cubin=compiled.cubin)


def matmul_rows(arch: str) -> list[dict]:
    path = with_choice("matmul.ph", "matmul")
    rows = []
    for bm, bn, bk, threads in MATMUL_TILES:
        for size in (4096, 8192):
            a = torch.randn(size, size, device="cuda", dtype=torch.float16)
            b = torch.randn(size, size, device="cuda", dtype=torch.float16)
            expected = (a.double() @ b.double()).float()
            row = {"kernel": "matmul", "tile": [bm, bn, bk, threads], "size": size}
            for ws in (1, 0):
                values = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "NUM_THREADS": threads}
                kernel = loaded(
                    path, "matmul", {**values, "ACTIVATION": 0, "WARP_SPECIALIZE": ws}, arch
                )
                c = torch.empty(size, size, device="cuda", dtype=torch.float16)

                def grid(meta, bm=bm, bn=bn):
                    return (-(-meta["M"] // bm) * -(-meta["N"] // bn),)

                kernel.launch(grid, (a, b, c))
                error = ((c.float() - expected).norm() / expected.norm()).item()
                assert error < 1e-2, (row, ws, error)
                ms = median_ms(lambda k=kernel, g=grid, args=(a, b, c): k.launch(g, args))
                row[f"tflops_ws{ws}"] = 2 * size**3 / ms / 1e9
            print(row, flush=True)
            rows.append(row)
    return rows


def attention_rows(arch: str) -> list[dict]:
    path = with_choice("attention.ph", "attention_forward")
    b, h, s = 4, 32, 4096
    rows = []
    for d, block_m, block_n, threads in ATTENTION:
        q, k, v = (torch.randn(b * h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
        scale = 1 / math.sqrt(d)
        expected = torch.nn.functional.scaled_dot_product_attention(
            q.view(b, h, s, d), k.view(b, h, s, d), v.view(b, h, s, d)
        ).view(b * h, s, d)
        row = {"kernel": "attention_forward", "tile": [d, block_m, block_n, threads]}
        for ws in (1, 0):
            values = {"D": d, "BLOCK_M": block_m, "BLOCK_N": block_n, "NUM_THREADS": threads}
            kernel = loaded(
                path, "attention_forward", {**values, "CAUSAL": 0, "WARP_SPECIALIZE": ws}, arch
            )
            o = torch.empty_like(q)
            lse = torch.empty(b * h, s, device="cuda", dtype=torch.float32)

            def grid(meta, block_m=block_m):
                return (-(-meta["S"] // block_m), meta["BH"])

            args = (q, k, v, o, lse, scale)
            kernel.launch(grid, args)
            error = ((o.float() - expected.float()).norm() / expected.float().norm()).item()
            assert error < 1e-2, (row, ws, error)
            ms = median_ms(lambda k=kernel, g=grid, a=args: k.launch(g, a))
            row[f"tflops_ws{ws}"] = 4 * b * h * s * s * d / ms / 1e9
        print(row, flush=True)
        rows.append(row)
    return rows


def main(parts: list[str]) -> dict:
    arch = device_arch(torch.cuda.current_device())
    rows = []
    for name, probe in (("matmul", matmul_rows), ("attention", attention_rows)):
        if not parts or name in parts:
            rows += probe(arch)
    return {"benchmark": "probe_warp_specialize", "arch": arch, "rows": rows}


if __name__ == "__main__":
    write_json("probe_warp_specialize", {**main(sys.argv[1:]), "environment": environment()})
