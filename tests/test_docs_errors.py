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


def test_undefined_name_points_at_the_python_line():
    err = run_example("undefined_name.py")
    assert "docs/examples/undefined_name.py:11:37: error: undefined name 'BLOK'" in err
    assert "        base: ph.let = ph.ctx.block.x * BLOK\n" + " " * 40 + "^^^^" in err
    assert "help: did you mean 'BLOCK'?" in err
    assert err.count('  File "') == 1, "only the user's own frame is shown"


def test_race_names_both_blocks_and_the_element():
    err = run_example("race.py")
    assert "docs/examples/race.py:11:5: error: data race on out[4]" in err
    assert "docs/examples/race.py:11:5: note: block (0, 0, 0) wrote out[4] here" in err
    assert err.count('  File "') == 1
