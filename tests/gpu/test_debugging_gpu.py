"""Traces and device asserts on the GPU name the Python file and line.

Each launch runs in a subprocess: a failed device assert leaves the CUDA context
unusable, and printf output appears only when the GPU finishes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def run(*command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``command`` from the repository root, with absolute paths in its output made relative."""
    proc = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ), timeout=timeout
    )
    prefix = f"{ROOT}/"
    proc.stdout = proc.stdout.replace(prefix, "")
    proc.stderr = proc.stderr.replace(prefix, "")
    return proc


def example_line(name: str, text: str) -> int:
    lines = (ROOT / "docs" / "examples" / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_trace_prints_each_selected_blocks_values_with_the_python_line():
    proc = run(sys.executable, "docs/examples/trace.py", "--gpu")
    assert proc.returncode == 0, proc.stderr
    where = f"docs/examples/trace.py:{example_line('trace.py', 'ph.trace(')}"
    expected = {f"{where}: block (1, 0, 0): base = 4", f"{where}: block (2, 0, 0): base = 8"}
    expected |= {f"{where}: block (1, 0, 0): t[{i}] = {v}" for i, v in enumerate([8, 10, 12, 14])}
    expected |= {f"{where}: block (2, 0, 0): t[{i}] = {v}" for i, v in enumerate([16, 18])}
    assert set(proc.stdout.splitlines()) == expected


def test_a_failed_device_assert_names_the_python_line_and_stops_the_process():
    proc = run(sys.executable, "docs/examples/device_assert.py", "--gpu")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    line = example_line("device_assert.py", "assert t >= 0.0")
    assert f"docs/examples/device_assert.py:{line}: phobos_root: block: [1,0,0]" in output
    assert "Assertion `x must not be negative` failed." in output
    assert "block: [0,0,0]" not in output and "block: [2,0,0]" not in output


@pytest.mark.skipif(shutil.which("compute-sanitizer") is None, reason="needs compute-sanitizer")
def test_compute_sanitizer_output_names_the_python_line():
    proc = run("bash", "benchmarks/sanitizer_assert.sh", timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
