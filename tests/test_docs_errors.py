"""The Errors and debugging page's examples print what the page shows, with no compiler frames."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str) -> str:
    proc = subprocess.run(
        [sys.executable, f"docs/examples/{name}"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 1
    return proc.stderr


def line_of(name: str, text: str) -> int:
    """The 1-based line of ``text`` in the example (the page quotes it with that number)."""
    lines = (ROOT / "docs" / "examples" / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_undefined_name_points_at_the_python_line():
    err = run_example("undefined_name.py")
    line = line_of("undefined_name.py", "* BLOK")
    assert f"docs/examples/undefined_name.py:{line}:37: error: undefined name 'BLOK'" in err
    assert "        base: ph.let = ph.ctx.block.x * BLOK\n" + " " * 40 + "^^^^" in err
    assert "help: did you mean 'BLOCK'?" in err
    assert err.count('  File "') == 1, "only the user's own frame is shown"


def test_race_names_both_blocks_and_the_element():
    err = run_example("race.py")
    line = line_of("race.py", "out[base:+8] =")
    assert f"docs/examples/race.py:{line}:5: error: data race on out[4]" in err
    assert f"docs/examples/race.py:{line}:5: note: block (0, 0, 0) wrote out[4] here" in err
    assert err.count('  File "') == 1
