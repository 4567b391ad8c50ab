"""What the tuner searches: a kernel's variants, how to build and run each, its arguments.

The tuner knows nothing of Phobos's compiler.  A caller (``phobos.lang.tuning``
for Phobos kernels) describes one tuning problem: the variants, a thread-safe
``compile`` (the slow part, run in parallel), a ``load`` that turns a compiled
variant into a ``Candidate`` that runs on the arguments, and which arguments each
variant reads and writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phobos.autotune.timing import Timer
from phobos.autotune.tolerance import DEFAULT_TOLERANCES, Tolerance

Values = Mapping[str, int]


class Unfit(Exception):
    """A variant that cannot run here (shared memory, threads or registers beyond the device's
    limits); ``compile`` or ``load`` raise it and the variant is reported as pruned."""


class NoVariantPassed(RuntimeError):
    """Every variant was pruned, failed to compile, faulted, left elements unwritten or
    disagreed with the reference."""

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


class VariantsDisagree(RuntimeError):
    """No reference function, and the variants that ran fall into several groups that disagree.

    ``groups``: the values of each group's variants (group 1 first: it holds the default
    variant when that one ran); ``differences``: one line per later group, its largest
    difference from group 1.  ``lines()`` is both, as the message shows them.
    """

    def __init__(
        self,
        message: str,
        report: Any,
        groups: Sequence[Sequence[Mapping[str, int]]],
        differences: Sequence[str],
    ) -> None:
        super().__init__(message)
        self.report = report
        self.groups = [[dict(v) for v in group] for group in groups]
        self.differences = list(differences)

    def lines(self) -> list[str]:
        """``group 1: BLOCK=2048 ROWS=4, BLOCK=2048 ROWS=16``, … then the differences."""
        return group_lines(self.groups, self.differences)


def group_lines(
    groups: Sequence[Sequence[Mapping[str, int]]], differences: Sequence[str]
) -> list[str]:
    """One line per group (its variants' values), then the differences."""
    listed = [
        f"group {number}: " + ", ".join(_spaced(values) for values in group)
        for number, group in enumerate(groups, 1)
    ]
    return listed + list(differences)


def _spaced(values: Mapping[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items()) or "the only variant"


@dataclass(frozen=True)
class Candidate:
    """A built variant, ready to run on the problem's arguments.

    ``written`` and ``read`` are argument positions.  A written argument is restored
    from a snapshot before each run; one written but not read is an output, and is
    poisoned (NaN, or a byte pattern for integers) so that an element a variant
    forgets to write cannot pass.
    """

    run: Callable[[], None]
    written: frozenset[int]
    read: frozenset[int]


@dataclass(frozen=True)
class Problem:
    """One tuning problem: the variants of one kernel for one kind of launch (its key)."""

    kernel: str
    key: str
    variants: Sequence[Values]
    default: Values
    args: Sequence[Any]
    arg_names: Sequence[str]
    compile: Callable[[Values], Any]
    load: Callable[[Values, Any], Candidate]
    timer: Timer
    reference: Callable[..., None] | None = None
    extents: Mapping[str, int] = field(default_factory=dict)
    exempt: frozenset[str] = frozenset({"NUM_THREADS"})
    describe: str = ""
    # Why a variant cannot be right for these extents (it is pruned, never compiled), or None.
    requirement: Callable[[Values, Mapping[str, int]], str | None] | None = None


@dataclass(frozen=True)
class Options:
    """How hard to search.

    ``budget_s``: seconds of timing shared by the variants that pass (each gets an
    equal part, with at least ``min_repeats`` and at most ``max_repeats`` timed runs
    after ``warmup`` untimed ones).  ``workers``: compile threads (default: the CPU
    count, at most 32).  ``progress``: None shows a bar when stderr is a terminal and
    tqdm or rich is importable, else one summary line; False shows nothing.
    ``retune``: search again even when the cache holds a result for the key.
    ``on_disagreement``: what a search without a reference function does when the
    variants that ran disagree (fall into several groups): "raise" (the default) raises
    ``VariantsDisagree``; "default" takes the default variant's group as right and
    rejects the others as wrong (the default variant's output is the reference).
    """

    budget_s: float = 0.5
    warmup: int = 2
    min_repeats: int = 5
    max_repeats: int = 100
    workers: int | None = None
    tolerances: Mapping[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    progress: bool | None = None
    retune: bool = False
    on_disagreement: str = "raise"

    def __post_init__(self) -> None:
        if self.on_disagreement not in ON_DISAGREEMENT:
            choices = " or ".join(repr(c) for c in ON_DISAGREEMENT)
            raise ValueError(
                f"Options(on_disagreement=...) is {choices}, got {self.on_disagreement!r}"
            )


ON_DISAGREEMENT = ("raise", "default")
