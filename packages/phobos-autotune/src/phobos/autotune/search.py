"""The search: compile every variant in parallel, check each against the reference, time those
that pass, choose the fastest.

Compiling is the slow part and runs on threads (NVRTC and nvJitLink release the
GIL); loading, running and timing happen in the calling thread, one variant at a
time, on the caller's own arguments, which are restored afterwards.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from phobos.autotune.problem import Candidate, NoVariantPassed, Options, Problem, Unfit
from phobos.autotune.progress import Progress
from phobos.autotune.report import (
    COMPILE_ERROR,
    FAULTED,
    PASSED,
    PRUNED,
    WRONG,
    Report,
    VariantResult,
)
from phobos.autotune.space import oversized
from phobos.autotune.state import ArgumentState
from phobos.autotune.timing import median
from phobos.autotune.tolerance import tolerance_for

MAX_WORKERS = 32


def search(problem: Problem, options: Options) -> Report:
    """Tune ``problem`` now (no cache); raises ``NoVariantPassed`` when nothing can be used."""
    started = time.perf_counter()
    variants = [dict(v) for v in problem.variants]
    results = [VariantResult(v, PASSED) for v in variants]
    for index, why in oversized(variants, problem.extents, problem.exempt).items():
        _set(results[index], PRUNED, why)
    todo = [i for i, r in enumerate(results) if r.status == PASSED]
    progress = Progress(f"tuning {problem.kernel}", 2 * len(todo), options.progress)
    reference_text = "none: no variant ran"
    try:
        candidates = _build(problem, todo, results, options, progress)
        progress.add(len(candidates) - len(todo))
        if candidates:
            written = frozenset().union(*(c.written for c in candidates.values()))
            read = frozenset().union(*(c.read for c in candidates.values()))
            state = ArgumentState(problem.args, written, read)
            try:
                expected, reference_text, source = _expected(problem, candidates, results, state)
                if expected is not None:
                    others = {i: c for i, c in candidates.items() if i != source}
                    if source is not None:
                        progress.step(f"ran the reference {_values(results[source].values)}")
                    _check(problem, others, results, state, expected, options, progress)
                    _time(problem, candidates, results, state, options, progress)
            finally:
                state.restore_all()
    finally:
        problem.timer.close()
    report = _report(problem, results, reference_text, time.perf_counter() - started)
    progress.close(report.summary())
    if not report.choice:
        raise NoVariantPassed(
            f"no variant of {problem.kernel} can be used for this launch; the tuning report:\n"
            f"{report}",
            report,
        )
    return report


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


def _expected(
    problem: Problem,
    candidates: dict[int, Candidate],
    results: list[VariantResult],
    state: ArgumentState,
) -> tuple[dict[int, Any] | None, str, int | None]:
    """The reference outputs, what they came from, and the variant that made them (if one did):
    the reference function's outputs, else the default variant's."""
    if problem.reference is not None:
        copies = state.copies()
        problem.reference(*copies)
        return state.outputs_of(copies), "the kernel's reference function", None
    default = dict(problem.default)
    order = sorted(candidates, key=lambda i: results[i].values != default)
    for index in order:
        state.reset()
        try:
            candidates[index].run()
            problem.timer.synchronize()
        except Exception as exc:
            _set(results[index], FAULTED, _first_line(exc))
            continue
        results[index].detail = "the reference"
        which = "the default variant" if results[index].values == default else "variant"
        return (
            state.outputs_of(problem.args),
            f"the output of {which} {_values(results[index].values)} (no reference function "
            "was given: this catches variants that disagree with it, not bugs they share)",
            index,
        )
    return None, "none: every variant faulted", None


def _check(
    problem: Problem,
    candidates: dict[int, Candidate],
    results: list[VariantResult],
    state: ArgumentState,
    expected: Mapping[int, Any],
    options: Options,
    progress: Progress,
) -> None:
    """Run each variant from the reset state and compare what it wrote."""
    for index, candidate in candidates.items():
        result = results[index]
        progress.step(f"checked {_values(result.values)}")
        if result.status != PASSED:
            continue
        state.reset()
        try:
            candidate.run()
            problem.timer.synchronize()
        except Exception as exc:
            _set(result, FAULTED, _first_line(exc))
            continue
        for position, ops in state.ops.items():
            tolerance = tolerance_for(ops.dtype, options.tolerances)
            mismatch = ops.compare(problem.args[position], expected[position], tolerance)
            if mismatch is not None:
                _set(result, WRONG, mismatch.describe(problem.arg_names[position]))
                break


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
    problem: Problem, results: list[VariantResult], reference: str, seconds: float
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
    )


def _values(values: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())
