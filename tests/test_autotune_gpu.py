"""Autotuning on a GPU (torch arrays): tuning on first use, the reference, in place, the cache.

Skipped without an NVIDIA GPU and torch; run with ``pytest -m gpu tests/test_autotune_gpu.py``.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import phobos.lang as ph
from phobos.autotune import PASSED, WRONG, Options

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU with torch", allow_module_level=True)


def grid(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


@ph.kernel
@ph.autotune(BLOCK=[64, 4096])
def saxpy_bug256(
    x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32
):
    base: ph.let = ph.ctx.block.x * BLOCK
    if BLOCK == 256:
        out[base:+BLOCK] = alpha * x[base:+BLOCK]  # wrong on purpose: drops y
    else:
        out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]


@ph.kernel
@ph.autotune(BLOCK=[128, 2048])
def double_in_place(x: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    x[base:+BLOCK] = x[base:+BLOCK] * 2.0


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "cache"))


def test_a_launch_tunes_on_first_use_and_never_picks_the_wrong_variant():
    kernel = ph.kernel(saxpy_bug256.__wrapped__)
    kernel.reference(lambda x, y, out, alpha: out.copy_(alpha * x + y))
    n = (1 << 20) + 3
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    kernel[grid](x, y, out, 2.0)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2.0 * x + y)
    report = kernel.tuning_report()
    rows = {v.values["BLOCK"]: v for v in report.variants}
    assert rows[256].status == WRONG and "largest error" in rows[256].detail
    assert report.choice["BLOCK"] != 256
    assert report.timing.startswith("GPU")
    assert all(v.time_ms > 0 for v in report.variants if v.status == PASSED)
    assert any(key[0] == tuple(report.choice.items()) for key in kernel.loaded)


def test_in_place_on_the_gpu():
    x = torch.randn(100_000, device="cuda")
    before = x.clone()
    choice = double_in_place.autotune(x, grid=grid, options=Options(progress=False))
    assert torch.equal(x, before)
    assert all(v.status == PASSED for v in double_in_place.tuning_report().variants)
    double_in_place[grid](x, BLOCK=choice["BLOCK"])
    torch.testing.assert_close(x, 2 * before)


def test_a_second_process_reads_the_choice(tmp_path):
    x = torch.randn(50_000, device="cuda")
    first = double_in_place.autotune(x, grid=grid, options=Options(progress=False, retune=True))
    script = textwrap.dedent(
        f"""
        import importlib.util, torch
        spec = importlib.util.spec_from_file_location("k", {str(Path(__file__))!r})
        k = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(k)
        x = torch.randn(50_000, device="cuda")
        k.double_in_place[k.grid](x)
        report = k.double_in_place.tuning_report()
        assert report.from_cache and report.ran == 0, report
        print(report.choice["BLOCK"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == first["BLOCK"]
