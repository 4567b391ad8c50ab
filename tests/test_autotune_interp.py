"""Autotuning Phobos kernels in the CPU interpreter: the tuner's logic without a GPU.

Kernels here are wrong on purpose for some variants; the tuner must never choose
one, and its report must name them.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import phobos.lang as ph
from phobos.autotune import (
    COMPILE_ERROR,
    DISAGREED,
    PASSED,
    PRUNED,
    WRONG,
    NoVariantPassed,
    Options,
)
from phobos.lang import dispatch, tuning
from phobos.launch import read_arguments

FAST = Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False)


def cdiv_grid(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


def floor_grid(meta):
    """Wrong on purpose: drops the last partial block."""
    return (meta["N"] // meta["BLOCK"],)


@ph.kernel
@ph.autotune(BLOCK=[16, 128])
def scale_bug32(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    if BLOCK == 32:
        out[base:+BLOCK] = alpha * x[base:+BLOCK] + 1.0
    else:
        out[base:+BLOCK] = alpha * x[base:+BLOCK]


@ph.kernel
@ph.autotune(BLOCK={20, 16, 25, 30})
def scale(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = alpha * x[base:+BLOCK]


@ph.kernel
@ph.autotune(BLOCK=[16, 128])
def scale_skips32(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    if BLOCK == 32:
        out[base : +(BLOCK - 1)] = alpha * x[base : +(BLOCK - 1)]  # wrong on purpose: skips one
    else:
        out[base:+BLOCK] = alpha * x[base:+BLOCK]


# A row softmax whose tile must cover the row (docs/tutorials/02_fused_softmax.py): a BLOCK
# shorter than N leaves the rest of each row unwritten (and normalises the part it holds).
@ph.kernel
@ph.autotune(ROWS={4, 16}, BLOCK=[256, 4096])
def softmax(x: ph.tensor[ph.f32][M, N], out: ph.tensor[ph.f32][M, N]):
    first: ph.let = ph.ctx.block.x * ROWS
    rows: ph.let = x[first:+ROWS, 0:+BLOCK]
    shifted: ph.let = rows - ph.max(rows, axis=1)[:, None]
    numerator: ph.let = ph.exp(shifted)
    out[first:+ROWS, 0:+BLOCK] = numerator / ph.sum(numerator, axis=1)[:, None]


def rows_grid(meta):
    return (-(-meta["M"] // meta["ROWS"]),)


@ph.kernel
@ph.autotune(BLOCK=[16, 64])
def double_in_place(x: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    x[base:+BLOCK] = x[base:+BLOCK] * 2.0


@ph.kernel
@ph.autotune(BLOCK={16, 32, 80}, NUM_THREADS={32, 64})
def copy_threads(x: ph.tensor[ph.i32][N], out: ph.tensor[ph.i32][N]):
    base: ph.let = ph.ctx.block.x * (BLOCK - 16)
    out[base : +(BLOCK - 16)] = x[base : +(BLOCK - 16)]  # wrong on purpose: BLOCK=16 cannot compile


def minus16_grid(meta):
    return (-(-meta["N"] // (meta["BLOCK"] - 16)),)


@scale_bug32.reference
def scale_reference(x, out, alpha):
    out[:] = alpha * x


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "cache"))


def arrays(n, dtype=np.float32):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    return x, np.full(n, np.nan, dtype=dtype)


def by_block(report):
    return {v.values["BLOCK"]: v for v in report.variants}


def test_a_variant_wrong_on_purpose_is_never_chosen_and_is_named():
    x, out = arrays(100)
    choice = scale_bug32.autotune(x, out, 2.0, grid=cdiv_grid, options=FAST)
    report = scale_bug32.tuning_report()
    rows = by_block(report)
    assert choice["BLOCK"] != 32
    assert rows[32].status == WRONG
    assert "largest error 1 at out[" in rows[32].detail
    assert {b for b, r in rows.items() if r.status == PASSED} == {16, 64, 128}
    assert report.reference == "the kernel's reference function"
    assert np.isnan(out).all()  # tuning leaves the arguments as they were given
    assert "* " in str(report) and "wrong" in str(report)


def test_unwritten_elements_are_caught_by_the_poison():
    x, out = arrays(100)
    fresh = ph.kernel(scale.__wrapped__)
    fresh.reference(lambda x, out, alpha: np.multiply(x, alpha, out=out))
    choice = fresh.autotune(x, out, 3.0, grid=floor_grid, options=FAST)
    rows = by_block(fresh.tuning_report())
    assert choice["BLOCK"] in (20, 25)
    assert rows[16].status == rows[30].status == WRONG
    assert rows[16].detail == "left 4 elements unwritten in out (of 100; the first at out[96])"
    assert rows[30].detail == "left 10 elements unwritten in out (of 100; the first at out[90])"


def test_an_in_place_kernel_tunes_right_with_no_hints():
    x = np.arange(64, dtype=np.float32)
    choice = double_in_place.autotune(x, grid=cdiv_grid, options=FAST)
    report = double_in_place.tuning_report()
    assert [v.status for v in report.variants] == [PASSED, PASSED, PASSED]
    assert [v.group for v in report.variants] == [1, 1, 1]
    assert "the 3 variants that ran and wrote every element agree" in report.reference
    assert choice["BLOCK"] in (16, 32, 64)
    assert (x == np.arange(64)).all()


def test_an_in_place_variant_that_skips_elements_disagrees_by_its_values():
    """An in-place tensor is restored, not poisoned, before each run, so what is checked is its
    values: an element a variant skips keeps the caller's value, which the others doubled."""
    x = np.arange(100, dtype=np.float32)
    fresh = ph.kernel(double_in_place.__wrapped__)
    with pytest.raises(ph.PhobosError) as caught:
        fresh.autotune(x, grid=floor_grid, options=FAST)  # BLOCK=64 doubles 64, 16 and 32 96
    assert str(caught.value).splitlines()[3:6] == [
        "  group 1: BLOCK=64",
        "  group 2: BLOCK=16, BLOCK=32",
        "  group 2 against group 1: largest difference 95 at x[95] (group 2 has 190, group 1 "
        "has 95); 32 of 100 elements differ",
    ]
    assert (x == np.arange(100)).all()  # restored after tuning
    trusting = Options(**{**FAST.__dict__, "on_disagreement": "default"})
    fresh.autotune(x, grid=floor_grid, options=trusting)
    rows = by_block(fresh.tuning_report())
    assert rows[64].status == PASSED and rows[16].status == rows[32].status == WRONG
    assert (x == np.arange(100)).all()


def test_an_output_passed_as_its_own_input_is_restored_not_poisoned():
    """``scale(x, x)``: ``out`` is ``x``'s memory, so it is restored like an in-place tensor;
    poisoned, it would poison the input too, and every variant would compute from the poison
    (here a NaN that keeps the poison's bits, read as "left 100 elements unwritten")."""
    x = np.arange(100, dtype=np.float32)
    fresh = ph.kernel(scale_bug32.__wrapped__)  # no reference function; BLOCK=32 adds 1
    with pytest.raises(ph.PhobosError) as caught:
        fresh.autotune(x, x, 2.0, grid=cdiv_grid, options=FAST)
    assert str(caught.value).splitlines()[3:5] == [
        "  group 1: BLOCK=128, BLOCK=16, BLOCK=64",
        "  group 2: BLOCK=32",
    ]
    assert (x == np.arange(100)).all()
    right = ph.kernel(scale.__wrapped__)
    choice = right.autotune(x, x, 2.0, grid=cdiv_grid, options=FAST)
    assert all(v.status == PASSED for v in right.tuning_report().variants)
    assert (x == np.arange(100)).all()
    right[cdiv_grid](x, x, 2.0, **choice)
    assert (x == 2 * np.arange(100)).all()


def softmax_reference(x):
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_the_softmax_whose_default_leaves_half_of_each_row_unwritten_chooses_the_right_tile():
    """Issue 21: tuned at N=2000 with no reference function, the default (BLOCK=1024) leaves
    976 elements of each row unwritten; it must not become the reference, and BLOCK=2048,
    the only right tile, is chosen."""
    x = np.random.default_rng(0).standard_normal((64, 2000), dtype=np.float32)
    out = np.zeros_like(x)
    fresh = ph.kernel(softmax.__wrapped__)
    choice = fresh.autotune(x, out, grid=rows_grid, options=FAST)
    report = fresh.tuning_report()
    assert choice["BLOCK"] == 2048
    rows = {(v.values["ROWS"], v.values["BLOCK"]): v for v in report.variants}
    for r in (4, 16):
        assert rows[(r, 1024)].status == WRONG
        assert rows[(r, 1024)].detail == (
            "left 62464 elements unwritten in out (of 128000; the first at out[0, 1024])"
        )
        assert rows[(r, 2048)].status == PASSED and rows[(r, 2048)].group == 1
        assert rows[(r, 4096)].status == PRUNED
    assert {v.group for v in report.variants} == {None, 1}
    assert (out == 0).all()
    fresh[rows_grid](x, out)  # the host launch takes the tuned choice
    np.testing.assert_allclose(out, softmax_reference(x), rtol=1e-5, atol=1e-7)


def test_a_kernel_that_requires_its_tile_to_hold_the_row_has_the_narrower_ones_pruned():
    """``@kernel.requires``: the softmax says a tile narrower than the row cannot be right,
    so the tuner prunes those variants with its reason (they are never compiled or run)
    instead of finding them wrong, and the requirement sees each launch's extents."""
    x = np.random.default_rng(0).standard_normal((64, 2000), dtype=np.float32)
    out = np.zeros_like(x)
    fresh = ph.kernel(softmax.__wrapped__)
    seen = []

    @fresh.requires
    def tile_holds_the_row(values, extents):
        seen.append(dict(extents))
        if values["BLOCK"] >= extents["N"]:
            return None
        return f"BLOCK={values['BLOCK']} is narrower than a row"

    assert fresh.autotune(x, out, grid=rows_grid, options=FAST)["BLOCK"] == 2048
    rows = {(v.values["ROWS"], v.values["BLOCK"]): v for v in fresh.tuning_report().variants}
    for r in (4, 16):
        for block in (256, 512, 1024):
            assert rows[(r, block)].status == PRUNED
            assert rows[(r, block)].detail == f"BLOCK={block} is narrower than a row"
            assert rows[(r, block)].time_ms is None
        assert rows[(r, 2048)].status == PASSED
    assert {v.status for v in rows.values()} == {PASSED, PRUNED}
    assert seen and all(e == {"M": 64, "N": 2000} for e in seen)
    small = np.ones((8, 200), np.float32)
    fresh.autotune(small, np.zeros_like(small), grid=rows_grid, options=FAST)
    rows = {(v.values["ROWS"], v.values["BLOCK"]): v for v in fresh.tuning_report().variants}
    assert {rows[(r, 256)].status for r in (4, 16)} == {PASSED}


def test_without_a_reference_the_wrong_variant_that_leaves_elements_unwritten_is_rejected():
    """The default (BLOCK=128) is right; BLOCK=32 skips one element of each tile."""
    x, out = arrays(200)
    fresh = ph.kernel(scale_skips32.__wrapped__)
    choice = fresh.autotune(x, out, 2.0, grid=cdiv_grid, options=FAST)
    rows = by_block(fresh.tuning_report())
    assert choice["BLOCK"] != 32
    assert rows[32].status == WRONG
    assert rows[32].detail == "left 6 elements unwritten in out (of 200; the first at out[31])"
    assert {b for b, r in rows.items() if r.status == PASSED} == {16, 64, 128}
    assert np.isnan(out).all()


def test_without_a_reference_a_variant_with_wrong_values_raises_at_the_kernels_line():
    """The default (BLOCK=128) is right and BLOCK=32 adds 1: nothing says which is right, so
    the launch does not choose; with on_disagreement="default" BLOCK=32 is rejected."""
    x, out = arrays(100)
    fresh = ph.kernel(scale_bug32.__wrapped__)  # no reference function
    with pytest.raises(ph.PhobosError) as caught:
        fresh.autotune(x, out, 2.0, grid=cdiv_grid, options=FAST)
    error = caught.value
    line = inspect.getsourcelines(scale_bug32.__wrapped__)[1] + 2  # below the two decorators
    assert (error.span.file, error.span.line) == (__file__, line)
    lines = str(error).splitlines()
    assert lines[0] == (
        f"{__file__}:{line}:1: error: the variants of scale_bug32 disagree, and it has no "
        "reference function to say which is right (N=100, cpu-interpreter)"
    )
    assert lines[1].strip().startswith("def scale_bug32(") and set(lines[2].strip()) == {"^"}
    assert lines[3:6] == [
        "  group 1: BLOCK=128, BLOCK=16, BLOCK=64",
        "  group 2: BLOCK=32",
        "  group 2 against group 1: largest difference 1 at out[13] (group 2 has 4.50847, group "
        "1 has 3.50847); 100 of 100 elements differ",
    ]
    assert lines[6].startswith("help: add a reference function (@kernel.reference; here ")
    assert 'Options(on_disagreement="default")' in lines[6]
    report = fresh.tuning_report()
    assert report.choice == {} and {v.group for v in report.variants} == {1, 2}
    assert all(v.status == DISAGREED for v in report.variants)
    assert np.isnan(out).all()
    trusting = Options(**{**FAST.__dict__, "on_disagreement": "default"})
    choice = fresh.autotune(x, out, 2.0, grid=cdiv_grid, options=trusting)
    rows = by_block(fresh.tuning_report())
    assert choice["BLOCK"] != 32 and rows[32].status == WRONG
    assert rows[32].detail.startswith("group 2: largest error 1 at out[13]")


def test_every_variant_leaving_elements_unwritten_is_no_variant_passed():
    x, out = arrays(100)
    fresh = ph.kernel(scale.__wrapped__)
    with pytest.raises(NoVariantPassed) as caught:
        fresh.autotune(x, out, 2.0, grid=lambda meta: (1,), options=FAST)
    text = str(caught.value)
    for block in (16, 20, 25, 30):
        assert (
            f"left {100 - block} elements unwritten in out (of 100; the first at out[{block}])"
            in text
        )
    assert "needs a reference function (@kernel.reference) that leaves the same elements" in text
    assert np.isnan(out).all()


def test_a_gpu_launch_uses_the_choice_kernel_autotune_made_in_this_process(monkeypatch):
    """A launch that would tune takes a key this process tuned already (with its own options,
    such as on_disagreement="default") rather than tuning again."""
    x, out = arrays(100)
    fresh = ph.kernel(scale_bug32.__wrapped__)
    trusting = Options(**{**FAST.__dict__, "on_disagreement": "default"})
    choice = fresh.autotune(x, out, 2.0, grid=cdiv_grid, options=trusting)

    def no_tuning(*args, **kwargs):
        raise AssertionError("tuned again")

    dispatcher = fresh.dispatcher
    monkeypatch.setattr(dispatcher, "tune", no_tuning)
    monkeypatch.setattr(dispatcher, "chip", lambda device: tuning.HOST_ARCH)
    args = [x, out, 2.0]
    assert dispatcher.choose(cdiv_grid, args, read_arguments(args), {}, "device", 0) == choice


def test_compile_errors_and_the_size_rule_are_reported():
    x = np.arange(20, dtype=np.int32)
    copy_threads.autotune(x, np.zeros(20, dtype=np.int32), grid=minus16_grid, options=FAST)
    rows = {
        (v.values["BLOCK"], v.values["NUM_THREADS"]): v
        for v in copy_threads.tuning_report().variants
    }
    assert rows[(16, 32)].status == rows[(16, 64)].status == COMPILE_ERROR
    assert "window length must be positive" in rows[(16, 32)].detail
    assert rows[(32, 32)].status == rows[(32, 64)].status == PASSED
    assert rows[(80, 32)].status == PRUNED
    assert "BLOCK=80 is larger than the problem (largest extent N=20)" in rows[(80, 32)].detail


def test_a_keyword_fixes_a_name_and_the_rest_is_tuned():
    x = np.arange(100, dtype=np.int32)
    choice = copy_threads.autotune(
        x, np.zeros(100, dtype=np.int32), grid=minus16_grid, options=FAST, NUM_THREADS=64
    )
    report = copy_threads.tuning_report()
    assert choice["NUM_THREADS"] == 64 and choice["BLOCK"] in (32, 80)
    assert [v.values for v in report.variants] == [
        {"BLOCK": b, "NUM_THREADS": 64} for b in (16, 32, 80)
    ]


def test_a_host_launch_uses_the_default_until_tuned_explicitly():
    x = np.arange(64, dtype=np.float32)
    fresh = ph.kernel(double_in_place.__wrapped__)

    def choose():
        return fresh.dispatcher.choose(cdiv_grid, [x], read_arguments([x]), {}, "host")

    assert choose() == {"BLOCK": 64}
    choice = fresh.autotune(x, grid=cdiv_grid, options=FAST)
    assert choose() == choice
    fresh[cdiv_grid](x)
    assert (x == 2 * np.arange(64)).all()


def test_bad_arguments_are_the_callers_error_not_a_variants():
    x, _ = arrays(10)
    with pytest.raises(ph.PhobosError, match="out"):
        scale_bug32.autotune(x, np.zeros(11, dtype=np.float32), 2.0, grid=cdiv_grid, options=FAST)


def test_no_passing_variant_raises_with_the_report():
    x, out = arrays(40)
    fresh = ph.kernel(scale_bug32.__wrapped__)
    fresh.reference(lambda x, out, alpha: np.multiply(x, alpha + 1, out=out))
    with pytest.raises(NoVariantPassed, match="no variant of scale_bug32"):
        fresh.autotune(x, out, 2.0, grid=cdiv_grid, options=FAST)


def test_the_key_rounds_extents_and_can_be_overridden():
    a = np.zeros(600, dtype=np.float32)
    b = np.zeros(1000, dtype=np.float32)
    c = np.zeros(1025, dtype=np.float32)
    fresh = ph.kernel(double_in_place.__wrapped__)

    def key(array, chip="cpu-interpreter"):
        state = fresh.dispatcher.tuning
        return tuning.launch_key(fresh.definition, state, read_arguments([array]), {}, chip)

    assert key(a) == key(b)
    assert key(b) != key(c)
    assert key(b, "sm_90") != key(b, "sm_80")
    fresh.tuning_key(lambda extents, dtypes: {"N": extents["N"]})
    assert key(a) != key(b)


def test_a_second_process_reuses_the_result_without_running_a_variant(tmp_path):
    x = np.arange(64, dtype=np.float32)
    first = double_in_place.autotune(
        x, grid=cdiv_grid, options=Options(**{**FAST.__dict__, "retune": True})
    )
    script = textwrap.dedent(
        f"""
        import importlib.util, numpy as np
        import phobos.compile.interp as interp
        calls = []
        real_run = interp.run
        interp.run = lambda *a, **k: calls.append(1) or real_run(*a, **k)
        spec = importlib.util.spec_from_file_location("kernels", {str(Path(__file__))!r})
        kernels = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(kernels)
        x = np.arange(64, dtype=np.float32)
        choice = kernels.double_in_place.autotune(x, grid=kernels.cdiv_grid, options=kernels.FAST)
        report = kernels.double_in_place.tuning_report()
        assert report.from_cache and report.ran == 0, report
        assert calls == [], calls
        print(choice["BLOCK"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == first["BLOCK"]


def test_the_in_process_choice_is_kept_per_device(monkeypatch):
    """Arrays on two GPUs tune twice; the same GPU again reuses its choice."""
    tuned = []

    def fake_tune(grid, args, fixed, options=None, arrays=None, device=None):
        tuned.append(device)
        return {"BLOCK": 16 * len(tuned)}

    fresh = ph.kernel(scale_bug32.__wrapped__)
    monkeypatch.setattr(fresh.dispatcher, "tune", fake_tune)
    x = np.zeros(100, dtype=np.float32)
    args = [x, x, 2.0]

    def choose(device):
        return fresh.dispatcher.choose(cdiv_grid, args, read_arguments(args), {}, "device", device)

    first, second, again = choose(0), choose(1), choose(0)
    assert tuned == [0, 1]
    assert (first, second, again) == ({"BLOCK": 16}, {"BLOCK": 32}, {"BLOCK": 16})


def test_a_gpu_tuning_key_names_the_chip_not_only_its_architecture(monkeypatch):
    """An H100 and an H200 are both sm_90a; their results are kept apart."""

    class Driver:
        def compute_capability(self, device):
            return (9, 0)

        def device_name(self, device):
            return ("NVIDIA H100 80GB HBM3", "NVIDIA H200")[device]

    monkeypatch.setattr(dispatch, "shared_driver", Driver)
    assert dispatch.Dispatcher.chip(0) == "sm_90a NVIDIA H100 80GB HBM3"
    assert dispatch.Dispatcher.chip(1) == "sm_90a NVIDIA H200"
