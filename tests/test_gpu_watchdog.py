"""The GPU tests' watchdog (tests/gpu/watchdog.py) ends a stuck process with its stack."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STUCK = """
import time
from tests.gpu.watchdog import armed
with armed(1.0, what="a kernel that never returns"):
    time.sleep(30)  # a call stuck in C: no exception can end it
"""

PROMPT = """
import time
from tests.gpu.watchdog import armed
with armed(2.0):
    time.sleep(0.1)
time.sleep(2.5)  # past the watchdog's time: it was cancelled when the block ended
print("done")
"""


def run(code: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    return done, time.monotonic() - start


def test_a_stuck_test_ends_the_process_with_its_stack():
    done, took = run(STUCK)
    assert done.returncode == 1 and took < 20
    assert "[watchdog] a kernel that never returns: 1 s" in done.stderr
    assert "Timeout" in done.stderr and 'File "<string>", line 5' in done.stderr


def test_a_test_that_finishes_disarms_it():
    done, _ = run(PROMPT)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
