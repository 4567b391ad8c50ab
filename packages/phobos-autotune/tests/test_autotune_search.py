"""The search on a fake problem: pruning, the reference, restoring and poisoning, timing."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.autotune import (
    COMPILE_ERROR,
    FAULTED,
    PASSED,
    PRUNED,
    WRONG,
    Candidate,
    CpuTimer,
    NoVariantPassed,
    Problem,
    search,
)


def twice(x, out):
    out[:] = 2 * x


def off_by_one(x, out):
    out[:] = 2 * x + 1


def skips_tail(x, out):
    out[:-3] = 2 * x[:-3]


def faults(x, out):
    raise RuntimeError("illegal memory access")


def statuses(report):
    return {v.values["B"]: v.status for v in report.variants}


def test_every_outcome_is_reported_and_only_a_passing_variant_is_chosen(fake):
    report = search(
        fake.scale_problem(
            {
                16: fake.slow,
                32: off_by_one,
                64: skips_tail,
                128: faults,
                256: "unfit",
                512: "broken",
            },
            n=1024,
            reference=lambda x, out: np.multiply(x, 2, out=out),
        ),
        fake.FAST,
    )
    assert statuses(report) == {
        16: PASSED,
        32: WRONG,
        64: WRONG,
        128: FAULTED,
        256: PRUNED,
        512: COMPILE_ERROR,
    }
    assert report.choice == {"B": 16}
    details = {v.values["B"]: v.detail for v in report.variants}
    assert "largest error 1 at out[0]" in details[32]
    assert "3 NaN where the reference has a number" in details[64]
    assert "illegal memory access" in details[128]
    assert "shared memory" in details[256]
    assert "kernel.ph:3:5" in details[512]


def test_the_size_rule_prunes_before_compiling(fake):
    compiled = []
    problem = fake.scale_problem(
        {16: fake.right, 64: fake.right, 128: fake.right, 256: fake.right}, n=50
    )
    build = problem.compile
    problem = Problem(**{**problem.__dict__, "compile": lambda v: compiled.append(v) or build(v)})
    report = search(problem, fake.FAST)
    assert statuses(report) == {16: PASSED, 64: PASSED, 128: PRUNED, 256: PRUNED}
    assert (
        "B=128 is larger than the problem (largest extent N=50); B=64" in report.variants[2].detail
    )
    assert [v["B"] for v in compiled] == [16, 64]


def test_without_a_reference_the_default_variants_output_is_the_reference(fake):
    report = search(
        fake.scale_problem({16: off_by_one, 32: twice, 64: twice}, default=32), fake.FAST
    )
    assert statuses(report) == {16: WRONG, 32: PASSED, 64: PASSED}
    assert "default variant B=32" in report.reference
    assert "not bugs they share" in report.reference


def test_outputs_are_poisoned_and_arguments_restored(fake):
    seen = []

    def records_out(x, out):
        seen.append(out.copy())
        out[:] = 2 * x

    problem = fake.scale_problem({16: records_out, 32: records_out}, reference=twice)
    out = problem.args[1]
    search(problem, fake.FAST)
    assert all(np.isnan(first).all() for first in seen[:2])  # each checked run sees NaN
    assert (out == 7.0).all()  # the caller's output is as it was


def test_in_place_arguments_are_restored_before_every_run(fake):
    x = np.arange(8, dtype=np.float32)

    def doubles(values, _):
        return Candidate(lambda: np.multiply(x, 2, out=x), frozenset({0}), frozenset({0}))

    problem = Problem(
        kernel="double",
        key="double",
        variants=[{"B": 1}, {"B": 2}, {"B": 4}],
        default={"B": 1},
        args=[x],
        arg_names=["x"],
        compile=lambda v: None,
        load=doubles,
        timer=CpuTimer(),
        reference=lambda x: np.multiply(x, 2, out=x),
    )
    report = search(problem, fake.FAST)
    assert [v.status for v in report.variants] == [PASSED] * 3
    assert (x == np.arange(8)).all()


def test_the_fastest_passing_variant_is_chosen_and_timed(fake):
    report = search(
        fake.scale_problem({16: fake.slow, 32: fake.right, 64: fake.slow}, reference=twice),
        fake.FAST,
    )
    assert report.choice == {"B": 32}
    chosen = [v for v in report.variants if v.chosen]
    assert [v.values for v in chosen] == [{"B": 32}]
    assert all(v.time_ms is not None for v in report.variants)
    assert report.variants[0].time_ms > report.variants[1].time_ms


def test_no_usable_variant_is_an_error_with_the_report(fake):
    with pytest.raises(NoVariantPassed) as caught:
        search(fake.scale_problem({16: off_by_one, 32: "broken"}, reference=twice), fake.FAST)
    assert "no variant of scale can be used" in str(caught.value)
    assert caught.value.report.choice == {}
    assert "compile error" in str(caught.value)


def test_the_report_prints_a_table_marking_the_choice(fake):
    report = search(
        fake.scale_problem({16: fake.slow, 32: fake.right, 64: off_by_one}, reference=twice),
        fake.FAST,
    )
    text = str(report)
    lines = text.splitlines()
    assert lines[0].startswith("phobos autotune scale [")
    assert "2 passed, 1 wrong" in lines[0]
    assert "times: CPU interpreter" in text
    starred = [line for line in lines if line.startswith("* ")]
    assert len(starred) == 1 and starred[0].split()[1] == "32"
    assert any("wrong" in line and "largest error" in line for line in lines)


def test_a_variant_that_faults_while_being_timed_is_not_chosen(fake):
    calls = []

    def flaky(x, out):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("unspecified launch failure")
        out[:] = 2 * x

    report = search(fake.scale_problem({16: flaky, 32: fake.slow}, reference=twice), fake.FAST)
    assert statuses(report) == {16: FAULTED, 32: PASSED}
    assert report.choice == {"B": 32}
    assert "unspecified launch failure" in report.variants[0].detail
