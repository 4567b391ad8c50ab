"""Reading the launch contract: the schema of phobos.compile.contract, checked on load."""

from __future__ import annotations

import json

import pytest

from phobos.launch import FORMAT_VERSION, ContractError, read_contract


def test_reads_json_text_and_dicts(contract):
    from_text = read_contract(json.dumps(contract))
    assert from_text == read_contract(contract)
    assert from_text.params == ("x", "y", "out", "alpha")
    assert from_text.tensor("out").written
    assert from_text.tensor("x").align == 16
    assert from_text.block == (128, 1, 1)


def test_format_version_must_match(contract):
    contract["format_version"] = 3
    with pytest.raises(
        ContractError, match=r"launch contract format 3 is not one this .* \(1, 2\); recompile"
    ):
        read_contract(contract)


def test_not_json():
    with pytest.raises(ContractError, match="not valid JSON"):
        read_contract("saxpy.contract.json")


def test_missing_field(contract):
    del contract["entry"]
    with pytest.raises(ContractError, match="missing field 'entry'"):
        read_contract(contract)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.update(index_width=16), "index_width must be 32 or 64"),
        (lambda c: c.update(block=[2048, 1, 1]), "not a CTA size"),
        (lambda c: c["tensors"][0].update(dtype="f8"), "tensor x has unknown dtype 'f8'"),
        (lambda c: c["tensors"][0].update(align=12), "align 12, not a power of two"),
        (lambda c: c["slots"][3].update(param="M"), "no tensor has an extent named M"),
        (lambda c: c["slots"][0].update(param="z"), "no tensor parameter named z"),
        (lambda c: c["slots"][0].update(kind="size"), "kind must be one of"),
        (lambda c: c["slots"][3].update(type="f32"), "extents are i32 or i64"),
        (lambda c: c.update(params=["x", "y"]), "do not list the tensors and scalars"),
        (
            lambda c: c["slots"].append({"kind": "stride", "type": "i32", "param": "x", "axis": 1}),
            "axis 1 is not an axis of x",
        ),
    ],
)
def test_malformed_contracts_name_the_field(contract, change, message):
    change(contract)
    with pytest.raises(ContractError, match=message):
        read_contract(contract)


def test_parameter_order_without_params_follows_the_slots(contract):
    del contract["params"]
    contract["slots"].insert(0, contract["slots"].pop())  # the scalar's slot first
    assert read_contract(contract).params == ("alpha", "x", "y", "out")


def test_agrees_with_the_compiler_schema():
    compile_contract = pytest.importorskip("phobos.compile.contract")
    assert compile_contract.FORMAT_VERSION == FORMAT_VERSION
    written = compile_contract.Contract(
        kernel="k",
        entry="k_v0",
        arch="sm_90a",
        index_width=64,
        block=(256, 1, 1),
        dynamic_smem=1024,
        static_smem=0,
        values={"B": 64},
        tensors=(
            compile_contract.TensorSpec("a", "bf16", ("M", 8), read=True, written=True, align=16),
        ),
        scalars=(compile_contract.ScalarSpec("s", "f32"),),
        slots=(
            compile_contract.Slot("pointer", "u64", "a"),
            compile_contract.Slot("stride", "i64", "a", axis=0),
            compile_contract.Slot("extent", "i64", "M"),
            compile_contract.Slot("scalar", "f32", "s"),
        ),
    )
    read = read_contract(written.to_json())
    assert read.kernel == "k" and read.entry == "k_v0" and read.arch == "sm_90a"
    assert read.index_width == 64 and read.block == (256, 1, 1) and read.dynamic_smem == 1024
    assert read.values == {"B": 64}
    assert read.tensors[0].dims == ("M", 8) and read.tensors[0].written
    assert [(s.kind, s.type, s.param, s.axis) for s in read.slots] == [
        ("pointer", "u64", "a", None),
        ("stride", "i64", "a", 0),
        ("extent", "i64", "M", None),
        ("scalar", "f32", "s", None),
    ]
    assert read.params == ("a", "s")
