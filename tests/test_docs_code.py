"""Every code block in the docs runs, or says why it does not.

The rules, by a block's language:

- ``python``: the blocks of one page run in order in one fresh interpreter (a page reads like a
  session), from a scratch folder holding a copy of ``examples/``, after ``import phobos.lang as
  ph`` and with numpy arrays ``x``, ``y`` and ``out`` (float32, 1000 elements) defined, since the
  pages launch on "your arrays".
- ``sh``: each line runs in bash in that scratch folder; the commands ``phobos-compile``,
  ``phobos-cache`` and ``ph2py`` are this checkout's.
- ``json``: parses.
- ``text``, or no language: output, a file's text or a sketch: nothing to run.

A block that must not run is preceded by an HTML comment ``<!-- not run: REASON -->``, where
REASON says why (needs a GPU, a fragment, slow, ...).  The test also fails on a reason left empty.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
FENCE = re.compile(r"^( *)```(\w*)[^\n]*\n(.*?)^\1```", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->\s*$")
COMMANDS = {"phobos-compile": "phobos.compile", "phobos-cache": "phobos.cache", "ph2py": "ph2py"}

PRELUDE = """\
from __future__ import annotations  # the pages define kernels whose annotations name N, BLOCK, ...
import numpy as np
import phobos.lang as ph
x = np.random.default_rng(0).standard_normal(1000, dtype=np.float32)
y = np.random.default_rng(1).standard_normal(1000, dtype=np.float32)
out = np.zeros(1000, dtype=np.float32)
"""


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    not_run: str | None

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        indent = len(match.group(1))
        code = "\n".join(line[indent:] for line in match.group(3).splitlines())
        found.append(
            Block(
                page,
                text.count("\n", 0, match.start()) + 1,
                match.group(2),
                code + "\n",
                reason.group(1) if reason else None,
            )
        )
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def test_every_block_has_a_kind_this_test_knows():
    for block in ALL:
        assert block.language in ("python", "sh", "json", "text", ""), block.where()
        if block.not_run is not None:
            assert block.not_run, f"{block.where()}: 'not run:' needs a reason"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A folder like a checkout's root: examples/ copied, the commands on PATH."""
    folder = tmp_path_factory.mktemp("docs-code")
    shutil.copytree(ROOT / "examples", folder / "examples")
    shutil.copytree(ROOT / "docs" / "examples", folder / "docs" / "examples")
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    for command, module in COMMANDS.items():
        script = bin_dir / command
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def _env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PHOBOS_DEBUG"}
    env["PATH"] = f"{scratch / '.bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PHOBOS_CACHE_DIR"] = str(scratch / "cache")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), *map(str, sorted((ROOT / "packages").glob("*/src")))]
        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    return env


PY_PAGES = sorted({b.page for b in ALL if b.language == "python"}, key=str)


@pytest.mark.parametrize("page", PY_PAGES, ids=lambda p: p.name)
def test_python_blocks_run(page: Path, scratch: Path, tmp_path: Path):
    runnable = [b for b in ALL if b.page == page and b.language == "python" and b.not_run is None]
    if not runnable:
        pytest.skip("every python block here is marked not run")
    script = PRELUDE
    for block in runnable:
        code = block.code.replace("from __future__ import annotations\n", "")
        script += f"\n# --- {block.where()}\n{code}"
    path = tmp_path / f"{page.stem}_blocks.py"
    path.write_text(script, encoding="utf-8")
    (tmp_path / "examples").symlink_to(scratch / "examples")
    done = subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(scratch),
        timeout=600,
    )
    assert done.returncode == 0, (
        f"{page.name}'s python blocks failed:\n{done.stdout}\n{done.stderr}"
    )


SH_BLOCKS = [b for b in ALL if b.language == "sh" and b.not_run is None]


@pytest.mark.parametrize("block", SH_BLOCKS, ids=lambda b: b.where())
def test_shell_blocks_run(block: Block, scratch: Path):
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],
        capture_output=True,
        text=True,
        cwd=scratch,
        env=_env(scratch),
        timeout=600,
    )
    assert done.returncode == 0, f"{block.where()}:\n{block.code}\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", [b for b in ALL if b.language == "json"], ids=lambda b: b.where())
def test_json_blocks_parse(block: Block):
    if block.not_run is None:
        json.loads(block.code)
