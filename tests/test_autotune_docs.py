"""docs/autotuning.md's example runs as written and prints the report it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "autotuning.md"


def test_the_pages_example_runs(tmp_path):
    example = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(example)
    env = {**os.environ, "PHOBOS_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("phobos autotune scale [N=1000, cpu-interpreter]: 8 variants")
    assert "times: CPU interpreter" in done.stdout
    assert re.search(
        r"^\s+2048\s+pruned\s+-\s+BLOCK=2048 is larger than the problem", done.stdout, re.M
    )
    assert re.search(r"^\* \d+\s+passed", done.stdout, re.M)
    assert done.stderr.startswith("phobos autotune scale [")


def test_the_disagreement_example_prints_the_report_the_page_shows(tmp_path):
    """The example under "Without a reference function" prints exactly the error and the report
    shown below it (the script's folder and the tuning time aside)."""
    section = DOC.read_text().split("### Without a reference function\n", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    script = tmp_path / "row_sums.py"
    script.write_text(example)
    env = {**os.environ, "PHOBOS_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.replace(f"{tmp_path}{os.sep}", "")

    def timeless(text: str) -> str:
        return re.sub(r"chose none in \d+\.\d\d s", "chose none in … s", text)

    assert timeless(printed) == timeless(shown)
    assert "group 4: ROWS=4 BLOCK=2048, ROWS=16 BLOCK=2048" in printed
    assert done.stderr == ""
