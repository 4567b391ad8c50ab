"""The search on a fake problem: pruning, the reference or groups of agreeing variants, restoring
and poisoning (unwritten elements), timing."""

from __future__ import annotations

import re

import numpy as np
import pytest

from phobos.autotune import (
    COMPILE_ERROR,
    DISAGREED,
    FAULTED,
    PASSED,
    PRUNED,
    WRONG,
    Candidate,
    CpuTimer,
    NoVariantPassed,
    Options,
    Problem,
    VariantsDisagree,
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
    assert details[64] == "left 3 elements unwritten in out (of 1024; the first at out[1021])"
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


def test_without_a_reference_variants_that_agree_form_one_group_and_pass(fake):
    report = search(fake.scale_problem({16: twice, 32: twice, 64: twice}, default=32), fake.FAST)
    assert statuses(report) == {16: PASSED, 32: PASSED, 64: PASSED}
    assert [v.group for v in report.variants] == [1, 1, 1] and report.groups == 1
    assert "the 3 variants that ran and wrote every element agree" in report.reference
    assert "not bugs they all share" in report.reference
    assert "group" in str(report).splitlines()[3]  # the table has a group column


def test_without_a_reference_disagreeing_variants_raise_and_name_the_groups(fake):
    problem = fake.scale_problem({16: off_by_one, 32: twice, 64: twice}, default=32)
    with pytest.raises(VariantsDisagree) as caught:
        search(problem, fake.FAST)
    error = caught.value
    assert error.groups == [[{"B": 32}, {"B": 64}], [{"B": 16}]]
    assert error.lines() == [
        "group 1: B=32, B=64",
        "group 2: B=16",
        "group 2 against group 1: largest difference 1 at out[0] (group 2 has 1, group 1 has "
        "0); 64 of 64 elements differ",
    ]
    assert statuses(error.report) == {16: DISAGREED, 32: DISAGREED, 64: DISAGREED}
    assert error.report.choice == {} and error.report.groups == 2
    assert "group 1: B=32, B=64" in str(error) and "the tuning report" in str(error)
    assert (problem.args[1] == 7.0).all()  # the arguments are as they were given


def test_on_disagreement_default_keeps_the_default_variants_group(fake):
    options = Options(**{**fake.FAST.__dict__, "on_disagreement": "default"})
    report = search(fake.scale_problem({16: off_by_one, 32: twice, 64: twice}, default=32), options)
    assert statuses(report) == {16: WRONG, 32: PASSED, 64: PASSED}
    assert "the default variant B=32 (group 1 of 2)" in report.reference
    rows = {v.values["B"]: v for v in report.variants}
    assert rows[16].detail.startswith("group 2: largest error 1 at out[0]")
    assert rows[32].detail == "the reference" and rows[16].group == 2


def test_on_disagreement_is_checked():
    expected = "Options(on_disagreement=...) is 'raise' or 'default', got 'first'"
    with pytest.raises(ValueError, match=re.escape(expected)):
        Options(on_disagreement="first")


def test_a_variant_that_leaves_elements_unwritten_is_never_the_reference(fake):
    report = search(
        fake.scale_problem({16: skips_tail, 32: twice, 64: twice}, default=16), fake.FAST
    )
    assert statuses(report) == {16: WRONG, 32: PASSED, 64: PASSED}
    rows = {v.values["B"]: v for v in report.variants}
    assert rows[16].detail == "left 3 elements unwritten in out (of 64; the first at out[61])"
    assert rows[16].group is None and rows[32].group == rows[64].group == 1


def test_every_variant_leaving_elements_unwritten_is_no_variant_passed(fake):
    with pytest.raises(NoVariantPassed) as caught:
        search(fake.scale_problem({16: skips_tail, 32: skips_tail}), fake.FAST)
    text = str(caught.value)
    assert text.count("left 3 elements unwritten in out (of 64; the first at out[61])") == 2
    assert "needs a reference function (@kernel.reference) that leaves the same" in text
    assert "chose none" in text


def test_a_reference_that_leaves_elements_unwritten_allows_the_same_and_no_more(fake):
    def skips_more(x, out):
        out[:-5] = 2 * x[:-5]

    report = search(
        fake.scale_problem({16: skips_tail, 32: skips_more, 64: twice}, reference=skips_tail),
        fake.FAST,
    )
    assert statuses(report) == {16: PASSED, 32: WRONG, 64: WRONG}
    rows = {v.values["B"]: v for v in report.variants}
    assert rows[32].detail == "left 2 elements unwritten in out (of 64; the first at out[59])"
    assert "largest error inf at out[61] (got 122, expected nan)" in rows[64].detail


def test_a_nan_the_kernel_writes_is_not_taken_for_poison(fake):
    def nan_below_8(x, out):
        with np.errstate(invalid="ignore"):
            out[:] = np.sqrt(x - 8)

    report = search(fake.scale_problem({16: nan_below_8, 32: nan_below_8}), fake.FAST)
    assert statuses(report) == {16: PASSED, 32: PASSED}


def test_unwritten_elements_are_found_exactly_and_cost_a_second_run_only_when_suspected():
    """u8 outputs: a variant may write the poison's own byte, 0xA5 (a second run tells)."""
    x = np.arange(64, dtype=np.uint8)
    out = np.zeros(64, dtype=np.uint8)
    ran: list[int] = []

    def behaviour(b):
        def run():
            ran.append(b)
            if b == 1:
                out[:] = x  # writes every element, x[0xA5 % 64]... none is 0xA5
            elif b == 2:
                out[:] = 0xA5  # writes the first poison's byte everywhere
            else:
                out[:-1] = 0xA5  # the same, but skips the last element

        return Candidate(run, frozenset({1}), frozenset({0}))

    problem = Problem(
        kernel="bytes",
        key="bytes",
        variants=[{"B": 1}, {"B": 2}, {"B": 3}],
        default={"B": 2},
        args=[x, out],
        arg_names=["x", "out"],
        compile=lambda v: v["B"],
        load=lambda v, b: behaviour(b),
        timer=CpuTimer(),
        reference=lambda x, out: out.fill(0xA5),
    )
    report = search(problem, Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False))
    assert [v.status for v in report.variants] == [WRONG, PASSED, WRONG]
    assert "largest error" in report.variants[0].detail
    assert report.variants[2].detail == (
        "left 1 element unwritten in out (of 64; the first at out[63])"
    )
    # checking: B=1 once (no 0xA5 left), B=2 and B=3 twice (0xA5 everywhere); timing: B=2
    assert sorted(ran) == [1, 2, 2, 2, 3, 3]
    assert (out == 0).all()


def test_bool_outputs_are_poisoned_with_false_then_true():
    flags = np.zeros(10, dtype=bool)
    seen = []

    def run():
        seen.append(flags.copy())
        flags[:-1] = True

    problem = Problem(
        kernel="flags",
        key="flags",
        variants=[{"B": 1}],
        default={"B": 1},
        args=[flags],
        arg_names=["flags"],
        compile=lambda v: None,
        load=lambda v, c: Candidate(run, frozenset({0}), frozenset()),
        timer=CpuTimer(),
    )
    with pytest.raises(NoVariantPassed, match="left 1 element unwritten in flags"):
        search(problem, Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False))
    assert not seen[0].any() and seen[1].all()


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
