"""phobos.lang issues the static race check's warnings as PhobosWarning, once per kernel variant."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from phobos.compile.diagnostics import PhobosWarning

ROOT = Path(__file__).resolve().parents[1]
RACY = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def smear(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * 4
    out[base:+8] = x[base:+8] * 2.0
"""


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_racy_kernel_warns_once_at_its_python_line(tmp_path):
    path = tmp_path / "smear_kernel.py"
    path.write_text(RACY)
    smear = load(path).smear
    x, out = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        smear[(2,)](x, out)
        smear[(2,)](x, out)
    races = [w for w in caught if issubclass(w.category, PhobosWarning)]
    assert len(races) == 1
    text = str(races[0].message)
    assert text.startswith(f"{path}:9:5: warning: blocks next to each other along x")
    assert "        out[base:+8] = x[base:+8] * 2.0" in text


@pytest.mark.parametrize(
    "script", sorted((ROOT / "docs" / "tutorials").glob("*.py")), ids=lambda p: p.name
)
def test_tutorials_raise_no_race_warning(script):
    """Every tutorial, the grouped block order of 03 included, is proved race-free."""
    module = load(script)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PhobosWarning)
        module.check_on_cpu()
    assert [str(w.message) for w in caught if issubclass(w.category, PhobosWarning)] == []


def test_saxpy_example_raises_no_race_warning():
    module = load(ROOT / "examples" / "saxpy.py")
    x = np.ones(100, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PhobosWarning)
        module.saxpy[(2,)](x, x, np.zeros(100, np.float32), 2.0, BLOCK=64)
