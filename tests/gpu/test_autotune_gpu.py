"""Autotuning on a GPU (torch arrays): tuning on first use, the reference, in place, the cache,
unwritten elements and disagreeing variants without a reference function (issue 21).

Skipped without an NVIDIA GPU and torch; run with ``pytest -m gpu tests/gpu/test_autotune_gpu.py``.
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
@ph.autotune(BLOCK=[64, 4096])
def scale_bug256(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    if BLOCK == 256:
        out[base:+BLOCK] = alpha * x[base:+BLOCK] + 1.0  # wrong on purpose
    else:
        out[base:+BLOCK] = alpha * x[base:+BLOCK]


@ph.kernel
@ph.autotune(BLOCK=[128, 2048])
def double_in_place(x: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    x[base:+BLOCK] = x[base:+BLOCK] * 2.0


# A row softmax whose tile must cover the row (issue 21): BLOCK < N leaves part of each row
# unwritten.  No reference function.
@ph.kernel
@ph.autotune(ROWS={4, 16}, BLOCK=[256, 4096])
def softmax(x: ph.tensor[ph.f32][M, N], out: ph.tensor[ph.f32][M, N]):
    first: ph.let = ph.ctx.block.x * ROWS
    rows: ph.let = x[first:+ROWS, 0:+BLOCK]
    shifted: ph.let = rows - ph.max(rows, axis=1)[:, None]
    numerator: ph.let = ph.exp(shifted)
    out[first:+ROWS, 0:+BLOCK] = numerator / ph.sum(numerator, axis=1)[:, None]


# Each row's sum from one tile: every variant writes every element, but only BLOCK >= N is right.
@ph.kernel
@ph.autotune(BLOCK=[256, 2048])
def row_sums(x: ph.tensor[ph.f32][M, N], sums: ph.tensor[ph.f32][M]):
    row: ph.let = ph.ctx.block.x
    sums[row:+1] = ph.sum(x[row:+1, 0:+BLOCK], axis=1)


def rows_grid(meta):
    return (-(-meta["M"] // meta.get("ROWS", 1)),)


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
    assert any(variant == report.choice for variant, _, _ in kernel.dispatcher.loaded)


def test_in_place_on_the_gpu():
    x = torch.randn(100_000, device="cuda")
    before = x.clone()
    choice = double_in_place.autotune(x, grid=grid, options=Options(progress=False))
    assert torch.equal(x, before)
    assert all(v.status == PASSED for v in double_in_place.tuning_report().variants)
    double_in_place[grid](x, BLOCK=choice["BLOCK"])
    torch.testing.assert_close(x, 2 * before)


def test_an_output_passed_as_its_own_input_is_restored_not_poisoned():
    """``scale(x, x)``: poisoning ``out`` would poison ``x``, every variant would compute the
    canonical NaN from it, and the wrong BLOCK=256 would agree with the rest."""
    x = torch.randn(1 << 16, device="cuda")
    before = x.clone()
    with pytest.raises(ph.PhobosError) as caught:
        scale_bug256[grid](x, x, 2.0)
    assert "\n  group 2: BLOCK=256\n" in str(caught.value)
    assert torch.equal(x, before)


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


def test_the_softmax_whose_default_leaves_half_of_each_row_unwritten_chooses_the_right_tile():
    """Issue 21 on the GPU: at N=2000 the default BLOCK=1024 leaves 976 elements of each row
    unwritten; it is rejected, and BLOCK=2048 (the only right tile) is chosen."""
    x = torch.randn(64, 2000, device="cuda")
    out = torch.zeros_like(x)
    softmax[rows_grid](x, out)  # tunes on first use, then runs the choice
    torch.cuda.synchronize()
    report = softmax.tuning_report()
    assert report.choice["BLOCK"] == 2048, report
    rows = {(v.values["ROWS"], v.values["BLOCK"]): v for v in report.variants}
    for r in (4, 16):
        assert rows[(r, 1024)].status == WRONG, report
        assert rows[(r, 1024)].detail == (
            "left 62464 elements unwritten in out (of 128000; the first at out[0, 1024])"
        )
        assert rows[(r, 2048)].status == PASSED and rows[(r, 2048)].group == 1, report
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-4, atol=1e-6)


def test_variants_that_disagree_raise_at_the_kernels_line():
    x = torch.randn(64, 2000, device="cuda")
    sums = torch.zeros(64, device="cuda")
    with pytest.raises(ph.PhobosError) as caught:
        row_sums[rows_grid](x, sums)
    text = str(caught.value)
    assert "the variants of row_sums disagree, and it has no reference function" in text
    assert "  group 1: BLOCK=1024\n  group 2: BLOCK=256\n" in text
    assert "@kernel.reference" in text
    assert torch.equal(sums, torch.zeros(64, device="cuda"))  # as the caller gave it
