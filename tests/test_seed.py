"""The overview page's saxpy, pasted unchanged into a file, does what the page says."""

from __future__ import annotations

import contextlib
import io
import runpy

import numpy as np
import pytest

# The overview page's code, byte for byte (x, y and out are the reader's arrays).
SEED_PYTHON = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[16, 8192])
def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]


print(saxpy.source)
saxpy[lambda meta: (-(-meta["N"] // meta["BLOCK"]),)](x, y, out, 2.0)  # x, y, out: torch or CuPy arrays
"""

# What the page says saxpy.source prints.
SEED_PHOBOS = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""


def arrays(n: int = 1000):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    return x, y, np.full(n, np.nan, dtype=np.float32)


@pytest.fixture
def seed_run(tmp_path):
    path = tmp_path / "seed_saxpy.py"
    path.write_text(SEED_PYTHON)
    x, y, out = arrays()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        namespace = runpy.run_path(str(path), init_globals={"x": x, "y": y, "out": out})
    return namespace["saxpy"], printed.getvalue(), (x, y, out)


def test_source_prints_exactly_the_pages_phobos(seed_run):
    _, printed, _ = seed_run
    assert printed == SEED_PHOBOS + "\n"


def test_the_launch_with_the_default_block_writes_every_element(seed_run):
    _, _, (x, y, out) = seed_run
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("block", [16, 64, 1024, 8192])
def test_the_launch_with_block_fixed_writes_every_element(seed_run, block):
    saxpy, _, _ = seed_run
    x, y, out = arrays()
    saxpy[lambda meta: (-(-meta["N"] // meta["BLOCK"]),)](x, y, out, 2.0, BLOCK=block)
    np.testing.assert_allclose(out, 2.0 * x + y, rtol=1e-6, atol=1e-6)


def test_the_ph_file_spells_the_same_program(seed_run):
    from pathlib import Path

    from phobos.compile.pipeline import parse_file
    from phobos.compile.syntax import format_module

    example = Path(__file__).resolve().parents[1] / "examples" / "saxpy_fp32.ph"
    assert format_module(parse_file(example)) == SEED_PHOBOS
