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
