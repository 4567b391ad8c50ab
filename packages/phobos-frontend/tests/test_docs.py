"""The docs' examples are real: each Python kernel translates, checks, and prints the Phobos shown.

docs/writing-kernels.md and docs/reference.md: every ```python block that defines Phobos
(``@ph.`` or ``ph.const``) is a whole module; a bare ``` block right after it (at most two
lines of prose between) is the Phobos text it spells.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from phobos.compile.check import check_module
from phobos.compile.diagnostics import PhobosError
from phobos.frontend import translate_source

DOCS = Path(__file__).resolve().parents[3] / "docs"
PAGES = ("writing-kernels.md", "reference.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)

if not all((DOCS / page).is_file() for page in PAGES):
    pytest.skip("the docs are not beside this package (installed alone)", allow_module_level=True)


def examples() -> list[tuple[str, str, str | None]]:
    """(where, python module, the Phobos text shown for it or None)."""
    found = []
    for page in PAGES:
        text = (DOCS / page).read_text()
        fences = list(FENCE.finditer(text))
        for index, fence in enumerate(fences):
            lang, body = fence.group(1), fence.group(2)
            if lang != "python" or not ("@ph." in body or "ph.const" in body):
                continue
            expected = None
            if index + 1 < len(fences):
                after = fences[index + 1]
                between = text[fence.end() : after.start()].strip()
                if after.group(1) == "" and len(between.splitlines()) <= 2:
                    expected = after.group(2)
            line = text.count("\n", 0, fence.start()) + 2
            found.append((f"{page}:{line}", body, expected))
    return found


EXAMPLES = examples()


def test_the_pages_hold_examples() -> None:
    assert len(EXAMPLES) >= 6
    assert sum(expected is not None for _, _, expected in EXAMPLES) >= 3


@pytest.mark.parametrize(("where", "python", "phobos"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_each_example_translates_checks_and_prints_as_shown(
    where: str, python: str, phobos: str | None
) -> None:
    program = translate_source(python, f"/docs/{where}")
    assert program.module.kernels, where
    check_module(program.module)
    if phobos is not None:
        assert program.text == phobos


ERROR_EXAMPLE = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[256, 4096])
def scale(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:BLOCK] = x[base:+BLOCK] * 2.0
"""


def test_the_error_shown_is_the_error_given() -> None:
    text = (DOCS / "writing-kernels.md").read_text()
    shown = next(f.group(2) for f in FENCE.finditer(text) if ": error: " in f.group(2))
    with pytest.raises(PhobosError) as caught:
        translate_source(ERROR_EXAMPLE, "/home/me/ops.py")
    assert str(caught.value) + "\n" == shown
