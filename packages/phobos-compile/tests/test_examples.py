"""Every example compiles to PTX and a cubin for sm_80 and sm_90, on the CPU.

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
ARCHS = ("sm_80", "sm_90")


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
