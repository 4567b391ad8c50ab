"""The compile pipeline: parse → check → generate → PTX and cubin, and the public API."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

import phobos.compile
from phobos.compile.contract import Contract
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.pipeline import (
    CompiledKernel,
    compile_file,
    compile_kernel,
    default_specialization,
    parse_file,
    variant_values,
)
from phobos.compile.specialization import Specialization, TensorSpecialization
from phobos.compile.syntax import parse

SAXPY = Path(__file__).resolve().parents[3] / "examples" / "saxpy_fp32.ph"

TWO_KERNELS = """\
@autotune(BLOCK in [16, 8192])
kernel scale(x: tensor<f32>[N], out: tensor<f32>[N], factor: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = factor * x[base :+ BLOCK]
}

@autotune(TILE in {128, 256})
kernel shift(x: tensor<f16>[M], out: tensor<f16>[M]) {
    let base = ctx.block.x * TILE
    out[base :+ TILE] = x[base :+ TILE] + 1.0
}
"""


@pytest.fixture(scope="module")
def saxpy_module():
    return parse_file(SAXPY)


@pytest.fixture(scope="module")
def saxpy(saxpy_module) -> CompiledKernel:
    return compile_kernel(saxpy_module, "saxpy", {"BLOCK": 256}, arch="sm_80")


def test_compile_kernel_gives_every_stage(saxpy):
    assert isinstance(saxpy.ir, ir.Kernel)
    assert saxpy.ir.values == (("BLOCK", 256),)
    assert f'#line 3 "{SAXPY}"' in saxpy.cuda_source
    entry = saxpy.contract.entry
    assert "void __launch_bounds__" in saxpy.cuda_source and f"{entry}(" in saxpy.cuda_source
    assert ".target sm_80" in saxpy.ptx and f".entry {entry}(" in saxpy.ptx
    assert saxpy.cubin.startswith(b"\x7fELF")
    assert saxpy.resources is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        saxpy.ptx = ""


def test_the_contract_describes_the_variant(saxpy):
    contract = saxpy.contract
    assert (contract.kernel, contract.arch, contract.values) == ("saxpy", "sm_80", {"BLOCK": 256})
    assert contract.written == ("out",)
    assert contract.source_file == str(SAXPY)
    assert Contract.from_json(contract.to_json()) == contract


def test_the_default_specialisation_is_the_most_specialised(saxpy_module, saxpy):
    spec = default_specialization(saxpy_module, "saxpy")
    assert spec.index_width == 32
    assert {name for name, _ in spec.tensors} == {"x", "y", "out"}
    assert all(facts == TensorSpecialization(16, True, 16) for _, facts in spec.tensors)
    contract = saxpy.contract
    assert contract.index_width == 32
    assert all(t.align == 16 and t.unit_stride and t.row_align == 16 for t in contract.tensors)
    assert not any(slot.kind == "stride" for slot in contract.slots)


def test_a_specialisation_reaches_the_contract(saxpy_module):
    spec = Specialization.of(64, x=TensorSpecialization(align=4, unit_stride=False))
    compiled = compile_kernel(saxpy_module, "saxpy", {"BLOCK": 256}, arch="sm_90", spec=spec)
    contract = compiled.contract
    assert contract.index_width == 64
    x = next(t for t in contract.tensors if t.name == "x")
    assert (x.align, x.unit_stride) == (4, False)
    strides = [slot for slot in contract.slots if slot.kind == "stride"]
    # y and out are not named, so nothing is assumed about them either.
    assert [(s.param, s.axis, s.type) for s in strides] == [
        ("x", 0, "i64"),
        ("y", 0, "i64"),
        ("out", 0, "i64"),
    ]
    assert [s.type for s in contract.slots if s.kind == "extent"] == ["i64"]


def test_verbose_adds_ptxas_resources(saxpy_module):
    compiled = compile_kernel(saxpy_module, "saxpy", {"BLOCK": 256}, arch="sm_90", verbose=True)
    assert compiled.resources is not None
    assert compiled.resources.registers > 0
    assert compiled.resources.spill_stores == 0


def test_compile_file_compiles_every_kernel_at_its_default(tmp_path):
    path = tmp_path / "two.ph"
    path.write_text(TWO_KERNELS)
    compiled = compile_file(path, arch="sm_90", values={"TILE": 256})
    assert list(compiled) == ["scale", "shift"]
    assert compiled["scale"].contract.values == {"BLOCK": 1024}
    assert compiled["shift"].contract.values == {"TILE": 256}
    only = compile_file(path, "shift", arch="sm_90")
    assert list(only) == ["shift"] and only["shift"].contract.values == {"TILE": 128}


def test_a_value_no_kernel_takes_is_an_error_at_the_file():
    module = parse(TWO_KERNELS, "two.ph")
    with pytest.raises(PhobosError) as raised:
        variant_values(module, ["scale", "shift"], {"BLOK": 64})
    text = str(raised.value)
    assert text.startswith(
        "two.ph:2:1: error: no kernel of the file has a compile-time name 'BLOK'"
    )
    assert "did you mean 'BLOCK'?" in text


def test_with_one_kernel_the_checker_judges_the_values():
    module = parse(TWO_KERNELS, "two.ph")
    assert variant_values(module, ["scale"], {"BLOCK": 64}) == {"scale": {"BLOCK": 64}}
    assert variant_values(module, ["scale", "shift"], {"NUM_THREADS": 64}) == {
        "scale": {"BLOCK": 1024, "NUM_THREADS": 64},
        "shift": {"TILE": 128, "NUM_THREADS": 64},
    }
    with pytest.raises(PhobosError, match="'TILE' is not a compile-time name of kernel 'scale'"):
        compile_kernel(module, "scale", {"BLOCK": 64, "TILE": 128}, arch="sm_90")


def test_an_error_in_the_program_names_its_line(tmp_path):
    path = tmp_path / "bad.ph"
    path.write_text(
        textwrap.dedent(
            """\
            kernel bad(x: tensor<f32>[N]) {
                x[0 :+ 4] = y[0 :+ 4]
            }
            """
        )
    )
    with pytest.raises(PhobosError) as raised:
        compile_file(path, arch="sm_90")
    assert str(raised.value).startswith(f"{path}:2:17: error:")


def test_the_public_api_is_importable_from_the_package():
    assert phobos.compile.compile_file is compile_file
    assert phobos.compile.CompiledKernel is CompiledKernel
    assert phobos.compile.Specialization is Specialization
    assert set(phobos.compile.__all__) <= set(dir(phobos.compile))
    for name in phobos.compile.__all__:
        assert getattr(phobos.compile, name).__name__ == name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = phobos.compile.nope
