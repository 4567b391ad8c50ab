"""Probe: tutorial 03's matmul at tiles outside its @autotune space, on the GPU.

Which tiles would be worth adding to the space (and the tuner's time): the
tutorial's kernel text with its BM/BN/BK lists widened, each tile compiled for this
GPU, checked against torch, and timed (median of device events, L2 flushed) at
4096³ and 8192³.  Run on a GPU: ``python -m benchmarks.probe_matmul_tiles``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

from benchmarks.common import ROOT, environment, median_ms, write_json
from phobos.compile.pipeline import compile_file
from phobos.lang.dispatch import device_arch
from phobos.launch import load_kernel

SPACE = "BM in {128, 64}, BN in {128, 256, 64}, BK in {64, 32}"
WIDE = "BM in {256, 128, 64}, BN in {256, 128, 64}, BK in {128, 64, 32}"
TILES = [  # (BM, BN, BK, NUM_THREADS)
    (128, 128, 64, 256),
    (128, 128, 64, 128),
    (128, 256, 64, 256),
    (256, 128, 64, 256),
    (128, 256, 32, 256),
    (128, 128, 128, 256),  # half the k-steps (barriers) of BK 64, two stages
    (128, 256, 128, 256),
]
SIZES = (4096, 8192)


def blocks(meta):
    m, n = -(-meta["M"] // meta["BM"]), -(-meta["N"] // meta["BN"])
    return (m * n,)


def main() -> dict:
    text = (ROOT / "examples" / "matmul.ph").read_text()
    assert SPACE in text, "the tutorial's space changed: update the probe"
    folder = Path(tempfile.mkdtemp())
    source = folder / "matmul_wide.ph"
    source.write_text(text.replace(SPACE, WIDE))
    arch = device_arch(torch.cuda.current_device())
    rows = []
    for bm, bn, bk, threads in TILES:
        values = {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "NUM_THREADS": threads}
        compiled = compile_file(source, "matmul", {**values, "ACTIVATION": 0}, arch=arch)
        kernel = compiled["matmul"]
        loaded = load_kernel(kernel.contract.to_json(), cubin=kernel.cubin)
        row = {"tile": values}
        for size in SIZES:
            a = torch.randn(size, size, device="cuda", dtype=torch.float16)
            b = torch.randn(size, size, device="cuda", dtype=torch.float16)
            c = torch.empty(size, size, device="cuda", dtype=torch.float16)
            loaded.launch(blocks, (a, b, c))
            expected = (a.double() @ b.double()).float()
            error = ((c.float() - expected).norm() / expected.norm()).item()
            assert error < 1e-2, (values, size, error)
            args = (a, b, c)
            ms = median_ms(lambda kernel=loaded, args=args: kernel.launch(blocks, args))
            row[f"tflops_{size}"] = 2 * size**3 / ms / 1e9
        print(row, flush=True)
        rows.append(row)
    return {"benchmark": "probe_matmul_tiles", "arch": arch, "rows": rows}


if __name__ == "__main__":
    write_json("probe_matmul_tiles", {**main(), "environment": environment()})
