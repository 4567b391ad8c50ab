"""The examples of docs/ph2py.md and the README are what ph2py writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ph2py import convert_source

_BLOCK = re.compile(r"```(?:python)?\n(.*?)```", re.DOTALL)


def _ph_and_python(page: Path, ph_after: str, python_after: str) -> tuple[str, str]:
    text = page.read_text(encoding="utf-8")
    ph = _BLOCK.search(text, text.index(ph_after))
    python = _BLOCK.search(text, text.index(python_after))
    assert ph is not None and python is not None
    return ph.group(1), python.group(1)


@pytest.mark.parametrize(
    ("page", "ph_after", "python_after"),
    [
        ("docs/ph2py.md", "A `.ph` file:", "becomes"),
        ("packages/ph2py/README.md", "`saxpy.ph`:", "`saxpy.py`:"),
    ],
)
def test_the_documented_conversion_is_what_ph2py_writes(
    repo: Path, page: str, ph_after: str, python_after: str
) -> None:
    ph, python = _ph_and_python(repo / page, ph_after, python_after)
    assert convert_source(ph, "example.ph").python == python


@pytest.mark.parametrize(
    ("after", "line_length"),
    [("(this repository's), the `@autotune(...)`", 100), ("at 80 columns a statement", 80)],
)
def test_the_long_lines_examples_are_what_ph2py_writes(
    repo: Path, after: str, line_length: int
) -> None:
    text = (repo / "docs" / "ph2py.md").read_text(encoding="utf-8")
    block = _BLOCK.search(text, text.index(after))
    assert block is not None
    ph = repo / "examples" / "attention.ph"
    python = convert_source(ph.read_text(encoding="utf-8"), str(ph), line_length=line_length)
    assert block.group(1) in python.python
