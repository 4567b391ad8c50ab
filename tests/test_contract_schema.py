"""The launch contract's JSON Schema is the one statement of the format, and both sides keep to it.

``phobos/launch/contract.schema.json`` ships in phobos-launch.  Every contract phobos-compile
writes for the examples is valid under it, ``phobos.launch.read_contract`` reads every one of
them, and each change that makes a contract invalid under the schema is refused by the launcher
as well (``ContractError``).  The launcher keeps its own checks at run time: it needs nothing but
the standard library, and it also checks what a schema cannot (a slot naming a tensor that is
not there).
"""

from __future__ import annotations

import copy
import json
import os
from importlib import resources
from pathlib import Path

import pytest

from phobos.compile import pipeline
from phobos.compile.contract import FORMAT_VERSION as COMPILE_FORMAT
from phobos.launch import ContractError, read_contract
from phobos.launch.contract import FORMAT_VERSION as LAUNCH_FORMAT
from phobos.launch.contract import SLOT_KINDS
from phobos.launch.dtypes import ITEMSIZE

try:
    import jsonschema
except ImportError:  # nox -s tests installs it; CI must not skip this
    if os.environ.get("CI"):
        raise
    pytest.skip("needs jsonschema (nox -s tests installs it)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads(
    resources.files("phobos.launch").joinpath("contract.schema.json").read_text(encoding="utf-8")
)


def _contracts() -> list[tuple[str, dict]]:
    found = []
    for program in sorted((ROOT / "examples").glob("*.ph")):
        module = pipeline.parse_file(program)
        names = [k.name for k in module.kernels]
        variants = pipeline.variant_values(module, names, {})
        for name in names:
            spec = pipeline.default_specialization(module, name)
            _, generated = pipeline.generate_kernel(
                module, name, variants[name], arch="sm_90a", spec=spec
            )
            found.append((f"{program.stem}:{name}", json.loads(generated.contract.to_json())))
    return found


CONTRACTS = _contracts()


def test_the_schema_is_a_schema_and_names_what_both_sides_name():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["format_version"]["enum"][-1] == COMPILE_FORMAT == LAUNCH_FORMAT
    assert set(SCHEMA["$defs"]["dtype"]["enum"]) == set(ITEMSIZE)
    assert tuple(SCHEMA["properties"]["slots"]["items"]["properties"]["kind"]["enum"]) == SLOT_KINDS


@pytest.mark.parametrize(("name", "contract"), CONTRACTS, ids=[n for n, _ in CONTRACTS])
def test_what_the_compiler_writes_is_valid_and_the_launcher_reads_it(name, contract):
    jsonschema.validate(contract, SCHEMA)
    read = read_contract(contract)
    assert read.kernel == contract["kernel"] and len(read.slots) == len(contract["slots"])


def _set(path: list, value):
    def change(contract: dict) -> None:
        target = contract
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value

    return change


_DELETE = object()
INVALID = {
    "format 3": _set(["format_version"], 3),
    "no kernel": _set(["kernel"], _DELETE),
    "no slots": _set(["slots"], _DELETE),
    "index width 16": _set(["index_width"], 16),
    "a block of two": _set(["block"], [64, 1]),
    "a block of none": _set(["block"], [0, 1, 1]),
    "negative shared memory": _set(["dynamic_smem"], -1),
    "an unknown tensor dtype": _set(["tensors", 0, "dtype"], "f8"),
    "an align of 3": _set(["tensors", 0, "align"], 3),
    "a tensor without dims": _set(["tensors", 0, "dims"], _DELETE),
    "an unknown slot kind": _set(["slots", 0, "kind"], "texture"),
    "an unknown slot type": _set(["slots", 0, "type"], "f128"),
    "an f32 extent": lambda c: c["slots"].append(
        {"kind": "extent", "type": "f32", "param": c["tensors"][0]["dims"][0], "axis": None}
    ),
}


@pytest.mark.parametrize("change", INVALID, ids=list(INVALID))
def test_what_the_schema_refuses_the_launcher_refuses(change):
    contract = copy.deepcopy(dict(CONTRACTS)["saxpy_fp32:saxpy"])
    INVALID[change](contract)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(contract, SCHEMA)
    with pytest.raises(ContractError):
        read_contract(contract)
