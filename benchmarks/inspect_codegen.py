"""What the code generator makes of the softmax and layer-norm variants the benchmarks launch.

No GPU: per variant it generates the CUDA, compiles it for sm_90 (NVRTC, then ptxas
through nvJitLink) and prints the CTA size, ptxas' registers, spills and stack, and
counts in the PTX (16-byte global loads and stores, shuffles, barriers, local memory),
with the compile time; where the ``nvidia-cuda-nvdisasm`` wheel is installed, also the
SASS: its instructions, branches, ``MUFU`` (exp, reciprocal) and ``FSETP`` (compares).  Run: ``python -m benchmarks.inspect_codegen [--source NAME]``;
``--source softmax:ROWS=4,BLOCK_N=4096`` prints that variant's CUDA.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

import nvidia

from benchmarks.common import ROOT
from phobos.compile.pipeline import compile_kernel, generate_kernel
from phobos.frontend import translate_file

ARCH = "sm_90"
SOFTMAX = ROOT / "docs" / "tutorials" / "02_fused_softmax.py"
LAYER_NORM = ROOT / "docs" / "tutorials" / "05_layer_norm.py"

# (file, kernel, values): the variants bench_02_softmax and bench_05_layer_norm launch.
VARIANTS = [
    *(
        (SOFTMAX, "softmax", {"ROWS": rows, "BLOCK_N": n})
        for n in (1024, 4096, 8192, 16384)
        for rows in (1, 2, 4, 8)
        if rows * n <= 16384
    ),
    *(
        (LAYER_NORM, "layer_norm_forward", {"BLOCK_N": n, **threads})
        for n in (4096, 16384)
        for threads in ({}, {"NUM_THREADS": 256}, {"NUM_THREADS": 512}, {"NUM_THREADS": 1024})
    ),
    *(
        (LAYER_NORM, "layer_norm_backward_dx", {"ROWS": rows, "BLOCK_N": n})
        for n in (4096, 16384)
        for rows in (8, 16)
    ),
    (LAYER_NORM, "layer_norm_backward_dwdb", {"BLOCK_G": 32, "BLOCK_N": 64}),
]

_COUNTS = {
    "ld.v4": r"ld\.global(\.\w+)*\.v4",
    "st.v4": r"st\.global(\.\w+)*\.v4",
    "shfl": r"shfl\.sync",
    "bar": r"bar\.sync|barrier\.sync",
    "local": r"ld\.local|st\.local",
}


_SASS_OPCODES = ("BRA", "MUFU", "FSETP")
_SASS_LINE = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z0-9_]+)", re.M)


def sass_counts(cubin: bytes) -> str:
    """The SASS's instruction count and a few opcodes' (empty without nvdisasm)."""
    tools = [Path(root) / "cu13" / "bin" / "nvdisasm" for root in nvidia.__path__]
    tool = next((t for t in tools if t.exists()), None)
    if tool is None:
        return ""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as file:
        file.write(cubin)
        file.flush()
        listing = subprocess.run([tool, "-c", file.name], capture_output=True, text=True).stdout
    opcodes = _SASS_LINE.findall(listing)
    counts = " ".join(f"{op} {opcodes.count(op)}" for op in _SASS_OPCODES)
    return f"; SASS {len(opcodes)} ({counts})"


def describe(path, kernel: str, values: dict[str, int]) -> str:
    module = translate_file(path).module
    start = time.perf_counter()
    compiled = compile_kernel(module, kernel, values, arch=ARCH, verbose=True)
    seconds = time.perf_counter() - start
    counts = " ".join(f"{k} {len(re.findall(p, compiled.ptx))}" for k, p in _COUNTS.items())
    label = ",".join(f"{k}={v}" for k, v in values.items())
    return (
        f"{kernel}[{label}] block {compiled.contract.block[0]}: "
        f"{compiled.resources.summary()}; {counts}{sass_counts(compiled.cubin)}; "
        f"{len(compiled.cuda_source) // 1024} KiB source; {seconds:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--source", help="print one variant's CUDA: KERNEL:NAME=V,NAME=V")
    args = parser.parse_args()
    if args.source:
        kernel, _, spec = args.source.partition(":")
        values = {k: int(v) for k, v in (item.split("=") for item in spec.split(",") if item)}
        path = SOFTMAX if kernel.startswith("softmax") else LAYER_NORM
        _, generated = generate_kernel(translate_file(path).module, kernel, values, arch=ARCH)
        print(generated.source)
        return
    for path, kernel, values in VARIANTS:
        print(describe(path, kernel, values), flush=True)


if __name__ == "__main__":
    main()
