"""docs/contract.md and docs/compiling.md stay true to the code they describe."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from phobos.compile.cli import _parser
from phobos.compile.contract import FORMAT_VERSION, Contract, ScalarSpec, Slot, TensorSpec

DOCS = Path(__file__).resolve().parents[3] / "docs"


def _table_fields(text: str) -> set[str]:
    return set(re.findall(r"^\| `(\w+)` \|", text, flags=re.M))


def test_contract_doc_lists_every_field():
    text = (DOCS / "contract.md").read_text()
    documented = _table_fields(text)
    for schema in (Contract, TensorSpec):
        missing = {f.name for f in dataclasses.fields(schema)} - documented
        assert not missing, f"docs/contract.md does not describe {schema.__name__}.{missing}"
    slot_header = next(line for line in text.splitlines() if line.startswith("| `kind`"))
    for field in dataclasses.fields(Slot):
        assert f"`{field.name}`" in slot_header
    for field in dataclasses.fields(ScalarSpec):
        assert f'"{field.name}"' in text
    for kind in ("pointer", "stride", "extent", "scalar", "tensormap"):
        assert f"| `{kind}` |" in text
    assert f"`format_version` is {FORMAT_VERSION}" in text


def test_contract_doc_example_is_a_valid_contract():
    text = (DOCS / "contract.md").read_text()
    example = re.search(r"```json\n(.*?)\n```", text, flags=re.S).group(1)
    assert Contract.from_json(example).kernel == "saxpy"


def test_compiling_doc_describes_every_option():
    text = (DOCS / "compiling.md").read_text()
    for action in _parser()._actions:
        for flag in action.option_strings:
            if flag not in ("-h", "--help"):
                assert f"`{flag}" in text, f"docs/compiling.md does not describe {flag}"
    for stage in ("phobos", "ir", "cuda", "ptx"):
        assert f"| `{stage}` |" in text
