"""What the code generator makes of tutorials 03 and 06 (matmul, attention), read from SASS.

No GPU: per variant it generates the CUDA, compiles it for ``--arch`` (default sm_90a,
what an H100/H200 runs; sm_90 for the mma.sync path) (NVRTC, then ptxas
through nvJitLink), disassembles the cubin with nvdisasm (the ``nvidia-cuda-nvdisasm``
wheel) and prints ptxas' registers and spills, the shared memory a block asks for, the
CTAs that fit on an SM, and the instruction mix of the matmul k-loop: the innermost
backward branch whose body holds ``HMMA`` or ``HGMMA``, with counts per k-step of 16 (one
``m16n8k16`` depth), and the length of its part from the first fragment load to the
last ``HMMA``, so changes to the dot path are measurable without a GPU.  The counts are
static: they include the boundary paths of the copies (``LDG``/``STS``: boundary groups
copied lane by lane), which whole windows never take.
With ``--attention`` it does the same for tutorial 06's kernels (forward, dq, dk/dv) at
the tile sizes the tutorial tunes over; their loop is the KV (or query) loop, whose
body holds every dot of one iteration, so its counts are per iteration, not per k-step.
Run: ``python -m benchmarks.inspect_dot [--arch sm_90] [--attention] [--sass NAME=V,...]``; ``--sass``
prints that variant's loop (with ``--attention``, ``KERNEL=attention_forward`` picks one).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from benchmarks.common import ROOT
from phobos.compile.pipeline import compile_kernel, parse_file
from phobos.compile.syntax import ast

ARCH = "sm_90a"
MATMUL = ROOT / "examples" / "matmul.ph"
ATTENTION = ROOT / "examples" / "attention.ph"
REGISTERS_PER_SM = 65536
SHARED_PER_SM = 228 * 1024
SHARED_PER_CTA_RESERVED = 1024

# The variants tutorial 03 tunes over (GROUP_M=8, no activation).
VARIANTS = [
    {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": 8, "NUM_THREADS": threads, "ACTIVATION": 0}
    for bm in (128, 64)
    for bn in (128, 64)
    for bk in (64, 32)
    for threads in (256, 128)
]

# Tutorial 06's kernels at the head sizes and tiles it benchmarks (non-causal).
ATTENTION_VARIANTS = [
    {"KERNEL": "attention_forward", "D": d, "BLOCK_M": bm, "BLOCK_N": 64}
    for d in (64, 128)
    for bm in (128, 64)
] + [
    {"KERNEL": "attention_backward_dq", "D": 64, "BLOCK_M": 64, "BLOCK_N": 64},
    {"KERNEL": "attention_backward_dkdv", "D": 64, "BLOCK_M": 64, "BLOCK_N": 64},
]

# Mnemonic prefixes counted in the k-loop, in the order they are printed.
KINDS = (
    "HGMMA",
    "WARPGROUP",
    "HMMA",
    "LDSM",
    "LDS",
    "LDGSTS",
    "LDGDEPBAR",
    "DEPBAR",
    "BAR",
    "STS",
    "LDG",
    "STL",
    "LDL",
    "SHFL",
    "MUFU",
)

_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_BRANCH = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?BRA\s+(?:\w+\s+)?`?\(?\.?(\w+)")
_LABEL = re.compile(r"^\.(L_x_\d+):")


def nvdisasm() -> Path:
    """The nvdisasm binary of the ``nvidia-cuda-nvdisasm`` wheel."""
    import nvidia

    for root in nvidia.__path__:
        found = sorted(Path(root).glob("**/bin/nvdisasm"))
        if found:
            return found[0]
    raise SystemExit("nvdisasm not found: pip install nvidia-cuda-nvdisasm")


def sass_of(cubin: bytes) -> list[str]:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run(
            [str(nvdisasm()), "-c", f.name], capture_output=True, text=True, check=True
        ).stdout
    return text.splitlines()


def k_loop(lines: list[str]) -> list[str]:
    """The innermost loop (a label and a later branch back to it) that holds ``HMMA``/``HGMMA``."""
    labels: dict[str, int] = {}
    loops = []
    for number, line in enumerate(lines):
        label = _LABEL.match(line.strip())
        if label:
            labels[label.group(1)] = number
        branch = _BRANCH.search(line)
        if branch and branch.group(2) in labels:
            body = lines[labels[branch.group(2)] : number + 1]
            if any(" HMMA" in b or " HGMMA" in b for b in body):
                loops.append(body)
    if not loops:
        return []
    return min(loops, key=len)


def mix(body: list[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in body:
        found = _INSTRUCTION.search(line)
        if not found or "@!PT" in line:
            continue
        opcode = found.group(2)
        counts["total"] += 1
        for kind in KINDS:
            if opcode == kind or opcode.startswith(kind + "."):
                counts[kind] += 1
                break
    return counts


def mma_part(body: list[str]) -> int:
    """Instructions from the k-loop's first fragment load to its last ``HMMA``.

    The rest of the loop is the next stage's copies, mostly branches not taken
    (a window's boundary groups, copied lane by lane) that the counts include.
    """
    opcodes = [
        m.group(2) for line in body if (m := _INSTRUCTION.search(line)) and "@!PT" not in line
    ]
    marks = [i for i, op in enumerate(opcodes) if op.startswith(("LDSM", "HMMA", "HGMMA"))]
    return marks[-1] - marks[0] + 1 if marks else 0


def ctas_per_sm(registers: int, threads: int, shared: int) -> int:
    by_registers = REGISTERS_PER_SM // (max(registers, 1) * threads)
    by_shared = SHARED_PER_SM // (shared + SHARED_PER_CTA_RESERVED) if shared else 32
    return min(by_registers, by_shared, 2048 // threads)


def describe(values: dict[str, int], module: ast.Module, arch: str = ARCH) -> tuple[str, list[str]]:
    compiled = compile_kernel(module, "matmul", values, arch=arch, verbose=True)
    res = compiled.resources
    shared = compiled.contract.dynamic_smem + compiled.contract.static_smem
    body = k_loop(sass_of(compiled.cubin))
    counts = mix(body)
    steps = values["BK"] // 16
    per_step = " ".join(f"{kind} {counts[kind] / steps:g}" for kind in KINDS if counts[kind])
    label = ",".join(f"{k}={v}" for k, v in values.items() if k not in ("GROUP_M", "ACTIVATION"))
    fits = ctas_per_sm(res.registers, values["NUM_THREADS"], shared)
    line = (
        f"{label}: {res.registers} regs, spill {res.spill_stores}/{res.spill_loads} B, "
        f"smem {shared // 1024} KiB, {fits} CTA/SM | k-loop {counts['total']} instr "
        f"(mma part {mma_part(body)}); per k16: {per_step}"
    )
    return line, body


def describe_attention(
    values: dict[str, int], module: ast.Module, arch: str = ARCH
) -> tuple[str, list[str]]:
    """One attention kernel: resources and the instruction mix of one loop iteration."""
    kernel = str(values["KERNEL"])
    constants = {k: v for k, v in values.items() if k != "KERNEL"}
    constants = {"NUM_THREADS": 256, "CAUSAL": 0, **constants}
    compiled = compile_kernel(module, kernel, constants, arch=arch, verbose=True)
    res = compiled.resources
    shared = compiled.contract.dynamic_smem + compiled.contract.static_smem
    body = k_loop(sass_of(compiled.cubin))
    counts = mix(body)
    per_iteration = " ".join(f"{kind} {counts[kind]}" for kind in KINDS if counts[kind])
    label = ",".join(f"{k}={v}" for k, v in constants.items() if k not in ("NUM_THREADS", "CAUSAL"))
    fits = ctas_per_sm(res.registers, constants["NUM_THREADS"], shared)
    line = (
        f"{kernel.removeprefix('attention_')} {label}: {res.registers} regs, "
        f"spill {res.spill_stores}/{res.spill_loads} B, smem {shared // 1024} KiB, "
        f"{fits} CTA/SM | loop {counts['total']} instr; per iteration: {per_iteration}"
    )
    return line, body


def _parse_choice(text: str) -> dict[str, int | str]:
    pairs = (item.split("=") for item in text.split(","))
    return {k: v if k == "KERNEL" else int(v) for k, v in pairs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sass", help="print one variant's k-loop: NAME=V,NAME=V")
    parser.add_argument("--attention", action="store_true", help="tutorial 06's kernels")
    parser.add_argument("--arch", default=ARCH, help=f"the target (default {ARCH})")
    args = parser.parse_args()
    if args.attention:
        module = parse_file(ATTENTION)
        if args.sass:
            line, body = describe_attention(
                {**ATTENTION_VARIANTS[0], **_parse_choice(args.sass)}, module, args.arch
            )
            print("\n".join(body))
            print(line)
            return
        for values in ATTENTION_VARIANTS:
            print(describe_attention(values, module, args.arch)[0], flush=True)
        return
    module = parse_file(MATMUL)
    if args.sass:
        chosen = {k: int(v) for k, v in (item.split("=") for item in args.sass.split(","))}
        values = {**VARIANTS[0], **chosen}
        line, body = describe(values, module, args.arch)
        print("\n".join(body))
        print(line)
        return
    for values in VARIANTS:
        print(describe(values, module, args.arch)[0], flush=True)


if __name__ == "__main__":
    main()
