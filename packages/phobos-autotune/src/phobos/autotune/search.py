"""The search: compile every variant in parallel, check each against the reference, time those
that pass, choose the fastest.

Compiling is the slow part and runs on threads (NVRTC releases the
GIL); loading, running and timing happen in the calling thread, one variant at a
time, on the caller's own arguments, which are restored afterwards.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from phobos.autotune.compare import Mismatch
from phobos.autotune.problem import (
    Candidate,
    NoVariantPassed,
    Options,
    Problem,
    Unfit,
    VariantsDisagree,
    group_lines,
)
from phobos.autotune.progress import Progress
from phobos.autotune.report import (
    COMPILE_ERROR,
    DISAGREED,
    FAULTED,
    PASSED,
    PRUNED,
    WRONG,
    Report,
    VariantResult,
)
from phobos.autotune.space import oversized
from phobos.autotune.state import ArgumentState, Masks
from phobos.autotune.timing import median
from phobos.autotune.tolerance import tolerance_for

MAX_WORKERS = 32


def search(problem: Problem, options: Options) -> Report:
    """Tune ``problem`` now (no cache); raises ``NoVariantPassed`` when nothing can be used, and
    ``VariantsDisagree`` when, without a reference function, the variants disagree (unless
    ``options.on_disagreement`` is "default")."""
    started = time.perf_counter()
    variants = [dict(v) for v in problem.variants]
    results = [VariantResult(v, PASSED) for v in variants]
    for index, why in oversized(variants, problem.extents, problem.exempt).items():
        _set(results[index], PRUNED, why)
    if problem.requirement is not None:
        for result in results:
            why = problem.requirement(result.values, problem.extents)
            if why is not None:
                _set(result, PRUNED, why)
    todo = [i for i, r in enumerate(results) if r.status == PASSED]
    progress = Progress(f"tuning {problem.kernel}", 2 * len(todo), options.progress)
    reference_text = "none: no variant ran"
    groups: list[list[int]] = []
    differences: list[str] = []
    try:
        candidates = _build(problem, todo, results, options, progress)
        progress.add(len(candidates) - len(todo))
        if candidates:
            written = frozenset().union(*(c.written for c in candidates.values()))
            read = frozenset().union(*(c.read for c in candidates.values()))
            state = ArgumentState(problem.args, written, read)
            try:
                if problem.reference is not None:
                    reference_text = "the kernel's reference function"
                    _against_reference(problem, candidates, results, state, options, progress)
                else:
                    reference_text, groups, against_first = _grouped(
                        problem, candidates, results, state, options, progress
                    )
                    if len(groups) > 1:
                        decided, differences = _decide(
                            problem, results, groups, against_first, options
                        )
                        reference_text = decided or reference_text
                if not differences:
                    _time(problem, candidates, results, state, options, progress)
            finally:
                state.restore_all()
    finally:
        problem.timer.close()
    report = _report(problem, results, reference_text, time.perf_counter() - started, groups)
    progress.close(report.summary())
    if differences:
        values = [[results[i].values for i in group] for group in groups]
        listed = "\n".join(f"  {line}" for line in group_lines(values, differences))
        raise VariantsDisagree(
            f"the variants of {problem.kernel} disagree, and no reference function says which "
            f"is right{_bracketed(problem.describe)}:\n{listed}\nthe tuning report:\n{report}",
            report,
            values,
            differences,
        )
    if not any(v.chosen for v in report.variants):
        raise NoVariantPassed(
            f"no variant of {problem.kernel} can be used for this launch; the tuning report:\n"
            f"{report}{_unwritten_hint(problem, report)}",
            report,
        )
    return report


def _unwritten_hint(problem: Problem, report: Report) -> str:
    """Without a reference function, when every variant that ran to the end left elements
    unwritten."""
    wrong = [v for v in report.variants if v.status == WRONG]
    if problem.reference is not None or not wrong:
        return ""
    if not all(" unwritten in " in v.detail for v in wrong):
        return ""
    return (
        "\nevery variant that ran left elements of an output unwritten; a kernel meant to "
        "leave part of an output as the caller gave it needs a reference function "
        "(@kernel.reference) that leaves the same elements"
    )


def _set(result: VariantResult, status: str, detail: str = "") -> None:
    result.status = status
    result.detail = detail


def _first_line(error: BaseException) -> str:
    """The report's one line for an error (a Phobos error's first line names file:line:col)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _build(
    problem: Problem,
    todo: list[int],
    results: list[VariantResult],
    options: Options,
    progress: Progress,
) -> dict[int, Candidate]:
    """Compile in parallel, then load in order; failures are recorded, not raised."""

    def compile_one(index: int) -> Any:
        try:
            return problem.compile(results[index].values)
        except Exception as exc:  # a variant's failure is a result of the search
            return _Failed(exc)

    workers = options.workers or min(MAX_WORKERS, os.cpu_count() or 1)
    candidates: dict[int, Candidate] = {}
    with ThreadPoolExecutor(max(1, min(workers, len(todo) or 1))) as pool:
        for index, compiled in zip(todo, pool.map(compile_one, todo)):
            progress.step(f"compiled {_values(results[index].values)}")
            result = results[index]
            if isinstance(compiled, _Failed):
                error = compiled.error
                _set(
                    result,
                    PRUNED if isinstance(error, Unfit) else COMPILE_ERROR,
                    _first_line(error),
                )
                continue
            try:
                candidates[index] = problem.load(result.values, compiled)
            except Unfit as exc:
                _set(result, PRUNED, _first_line(exc))
    return candidates


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def _against_reference(
    problem: Problem,
    candidates: dict[int, Candidate],
    results: list[VariantResult],
    state: ArgumentState,
    options: Options,
    progress: Progress,
) -> None:
    """Run the reference function on copies, then each variant from the reset state; a variant
    fails if it leaves unwritten an element the reference wrote, or if what it wrote differs."""
    copies = state.copies(0)
    problem.reference(*copies)  # type: ignore[misc]
    expected = state.outputs_of(copies)
    allowed: Masks = {}  # what the reference, too, left unwritten
    suspects = state.suspects(copies)
    if suspects:
        again = state.copies(1)
        problem.reference(*again)  # type: ignore[misc]
        allowed = state.unwritten(again, suspects)
    for index, candidate in candidates.items():
        result = results[index]
        progress.step(f"checked {_values(result.values)}")
        try:
            unwritten, mismatch = _run_checked(problem, candidate, state, expected, options)
        except Exception as exc:
            _set(result, FAULTED, _first_line(exc))
            continue
        unwritten = state.beyond(unwritten, allowed)
        if unwritten:
            _set(result, WRONG, state.describe_unwritten(unwritten, problem.arg_names))
        elif mismatch is not None:
            position, found = mismatch
            _set(result, WRONG, found.describe(problem.arg_names[position]))


def _grouped(
    problem: Problem,
    candidates: dict[int, Candidate],
    results: list[VariantResult],
    state: ArgumentState,
    options: Options,
    progress: Progress,
) -> tuple[str, list[list[int]], dict[int, tuple[int, Mismatch]]]:
    """Without a reference function: run each variant (the default first), reject those that
    fault or leave elements unwritten, and group the rest by agreement.

    Greedy: a variant joins the first group whose first member (its leader) it matches
    within the tolerances, else it leads a new group; only the leaders' outputs are kept.
    Returns the reference text, the groups (indices), and for each variant outside group 1
    its mismatch against group 1's leader.  Every variant's ``group`` is set; the statuses
    of grouped variants are left for the caller to decide (``_decide``).
    """
    default = dict(problem.default)
    order = sorted(candidates, key=lambda i: results[i].values != default)
    leaders: list[dict[int, Any]] = []
    groups: list[list[int]] = []
    against_first: dict[int, tuple[int, Mismatch]] = {}
    for index in order:
        result = results[index]
        progress.step(f"checked {_values(result.values)}")
        try:
            unwritten, _ = _run_checked(problem, candidates[index], state)
        except Exception as exc:
            _set(result, FAULTED, _first_line(exc))
            continue
        if unwritten:
            _set(result, WRONG, state.describe_unwritten(unwritten, problem.arg_names))
            continue
        for number, outputs in enumerate(leaders):
            found = _mismatch(problem, state, outputs, options)
            if found is None:
                groups[number].append(index)
                break
            if number == 0:
                against_first[index] = found
        else:
            leaders.append(state.outputs_of(problem.args))
            groups.append([index])
    for number, group in enumerate(groups, 1):
        for index in group:
            results[index].group = number
    if not groups:
        return "none: every variant that ran faulted or left elements unwritten", groups, {}
    ran = sum(len(g) for g in groups)
    if len(groups) == 1:
        text = (
            f"no reference function: the {ran} variants that ran and wrote every element agree "
            "(group 1)"
            if ran > 1
            else f"no reference function: only {_values(results[groups[0][0]].values)} ran and "
            "wrote every element (group 1), with nothing to compare it with"
        )
        return text + "; this catches variants that disagree, not bugs they all share", groups, {}
    return (
        f"none: no reference function, and the {ran} variants that ran and wrote every "
        f"element disagree ({len(groups)} groups)",
        groups,
        against_first,
    )


def _decide(
    problem: Problem,
    results: list[VariantResult],
    groups: list[list[int]],
    against_first: dict[int, tuple[int, Mismatch]],
    options: Options,
) -> tuple[str | None, list[str]]:
    """Several groups: with ``on_disagreement="default"``, group 1 (the default variant's, or
    the first that ran) is the reference and the rest are wrong (returns the reference
    text); else every grouped variant is marked as disagreeing (returns the differences)."""
    lead = results[groups[0][0]]
    if options.on_disagreement == "default":
        lead.detail = "the reference"
        for number, group in enumerate(groups[1:], 2):
            for index in group:
                position, found = against_first[index]
                detail = found.describe(problem.arg_names[position])
                _set(results[index], WRONG, f"group {number}: {detail}")
        which = "the default variant" if lead.values == dict(problem.default) else "variant"
        text = (
            f"the output of {which} {_values(lead.values)} (group 1 of {len(groups)}): the "
            'variants disagree, and Options(on_disagreement="default") takes the default '
            "variant's group as right (no reference function was given)"
        )
        return text, []
    differences = []
    for number, group in enumerate(groups, 1):
        for index in group:
            _set(results[index], DISAGREED)
            if number > 1:
                position, found = against_first[index]
                results[index].detail = found.describe_between(
                    problem.arg_names[position], "this", "group 1"
                )
        if number > 1:
            position, found = against_first[group[0]]
            between = found.describe_between(
                problem.arg_names[position], f"group {number}", "group 1"
            )
            differences.append(f"group {number} against group 1: {between}")
    return None, differences


def _run_checked(
    problem: Problem,
    candidate: Candidate,
    state: ArgumentState,
    expected: Mapping[int, Any] | None = None,
    options: Options | None = None,
) -> tuple[Masks, tuple[int, Mismatch] | None]:
    """Run from the reset state (poison 0) and return the elements it left unwritten, and how
    what it wrote differs from ``expected`` (if given; compared after this first run).

    Only when some elements still hold the poison, a second run from poison 1 tells an
    element that was never written from one that was written with that value."""
    state.reset(0)
    candidate.run()
    problem.timer.synchronize()
    suspects = state.suspects(problem.args)
    mismatch = None
    if expected is not None and options is not None:
        mismatch = _mismatch(problem, state, expected, options)
    if not suspects:
        return {}, mismatch
    state.reset(1)
    candidate.run()
    problem.timer.synchronize()
    return state.unwritten(problem.args, suspects), mismatch


def _mismatch(
    problem: Problem, state: ArgumentState, expected: Mapping[int, Any], options: Options
) -> tuple[int, Mismatch] | None:
    """The first written argument whose contents differ from ``expected``, and how."""
    for position, ops in state.ops.items():
        tolerance = tolerance_for(ops.dtype, options.tolerances)
        found = ops.compare(problem.args[position], expected[position], tolerance)
        if found is not None:
            return position, found
    return None


def _time(
    problem: Problem,
    candidates: dict[int, Candidate],
    results: list[VariantResult],
    state: ArgumentState,
    options: Options,
    progress: Progress,
) -> None:
    """Median of repeats for each variant that passed, within the time budget."""
    passing = [i for i in candidates if results[i].status == PASSED]
    progress.add(len(passing))
    if not passing:
        return
    share = options.budget_s / len(passing)
    timer = problem.timer
    for index in passing:
        try:
            results[index].time_ms = _median_time(
                candidates[index].run, state, timer, share, options
            )
        except Exception as exc:  # a fault while timing rejects the variant like one while checking
            _set(results[index], FAULTED, _first_line(exc))
        progress.step(f"timed {_values(results[index].values)}")


def _median_time(
    run: Any, state: ArgumentState, timer: Any, share: float, options: Options
) -> float:
    """Warm up, time one repeat to learn its cost, then as many as ``share`` seconds allow."""
    for _ in range(options.warmup):
        state.restore_in_place()
        run()
    started = time.perf_counter()
    first = timer.time(run, state.restore_in_place, 1)
    each = max(time.perf_counter() - started, 1e-9)
    repeats = max(options.min_repeats, min(options.max_repeats, int(share / each)))
    return median(first + timer.time(run, state.restore_in_place, repeats - 1))


def _report(
    problem: Problem,
    results: list[VariantResult],
    reference: str,
    seconds: float,
    groups: list[list[int]],
) -> Report:
    timed = [r for r in results if r.status == PASSED and r.time_ms is not None]
    choice: dict[str, int] = {}
    if timed:
        best = min(timed, key=lambda r: r.time_ms)  # type: ignore[arg-type, return-value]
        best.chosen = True
        choice = dict(best.values)
    return Report(
        kernel=problem.kernel,
        key=problem.key,
        describe=problem.describe,
        timing=problem.timer.kind,
        reference=reference,
        variants=results,
        choice=choice,
        seconds=seconds,
        groups=len(groups),
    )


def _bracketed(text: str) -> str:
    return f" [{text}]" if text else ""


def _values(values: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())
