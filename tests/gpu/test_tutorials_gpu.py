"""Every tutorial script on the GPU: it checks itself against torch in float64 at the tutorial's own
sizes (fp32 relative error < 1e-5, fp16 < 1e-2, no NaN), then times itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "docs" / "tutorials").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_tutorial_checks_itself_on_the_gpu(script):
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=900,
    )
    print(proc.stdout[-4000:])
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "GPU" in proc.stdout or "GB/s" in proc.stdout or "TFLOP/s" in proc.stdout
