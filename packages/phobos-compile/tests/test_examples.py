"""Every example compiles to PTX and a cubin for sm_80, sm_90 and sm_90a, on the CPU.

Without the CUDA toolchain these fail, naming the install command: CI must
compile the examples, so a missing toolchain is never a silent skip.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from phobos.compile.contract import Contract
from phobos.compile.pipeline import compile_file

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
PROGRAMS = sorted(EXAMPLES.glob("*.ph"))
ARCHS = ("sm_80", "sm_90", "sm_90a")


def test_there_are_examples():
    assert PROGRAMS, f"no .ph files in {EXAMPLES}"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_example_compiles(program: Path, arch: str):
    compiled = compile_file(program, arch=arch)
    assert compiled, f"{program.name} has no kernels"
    for name, kernel in compiled.items():
        contract = kernel.contract
        assert contract.kernel == name
        assert contract.arch == arch
        assert f".target {arch}" in kernel.ptx
        assert f".entry {contract.entry}(" in kernel.ptx
        assert kernel.cubin.startswith(b"\x7fELF")
        assert Contract.from_json(contract.to_json()) == contract


WGMMA_TILES = [  # (BM, BN, BK, NUM_THREADS): swizzles of 128 and 64 bytes, 1 and 2 slabs a group
    (128, 128, 64, 128),
    (128, 128, 64, 256),
    (128, 64, 32, 256),
    (64, 64, 32, 128),
]


@pytest.mark.parametrize("tile", WGMMA_TILES, ids=lambda t: "x".join(map(str, t)))
def test_matmul_compiles_to_warpgroup_mma_for_sm_90a(tile):
    """ptxas accepts the wgmma k-loop, fed by TMA copies, and it keeps to its registers."""
    bm, bn, bk, threads = tile
    values = {"BM": bm, "BN": bn, "BK": bk, "NUM_THREADS": threads, "ACTIVATION": 1}
    (kernel,) = compile_file(
        EXAMPLES / "matmul.ph", "matmul", values, arch="sm_90a", verbose=True
    ).values()
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.f16.f16" in kernel.ptx
    assert "cp.async.bulk.tensor.2d" in kernel.ptx and "mbarrier.try_wait.parity" in kernel.ptx
    assert kernel.resources is not None and kernel.resources.spill_stores == 0
    sm_90 = compile_file(EXAMPLES / "matmul.ph", "matmul", values, arch="sm_90")["matmul"]
    assert "wgmma" not in sm_90.ptx  # sm_90 without "a" keeps mma.sync
