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
    """Every variant was pruned, failed to compile, faulted or disagreed with the reference."""

    def __init__(self, message: str, report: Any) -> None:
        super().__init__(message)
        self.report = report


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


@dataclass(frozen=True)
class Options:
    """How hard to search.

    ``budget_s``: seconds of timing shared by the variants that pass (each gets an
    equal part, with at least ``min_repeats`` and at most ``max_repeats`` timed runs
    after ``warmup`` untimed ones).  ``workers``: compile threads (default: the CPU
    count, at most 32).  ``progress``: None shows a bar when stderr is a terminal and
    tqdm or rich is importable, else one summary line; False shows nothing.
    ``retune``: search again even when the cache holds a result for the key.
    """

    budget_s: float = 0.5
    warmup: int = 2
    min_repeats: int = 5
    max_repeats: int = 100
    workers: int | None = None
    tolerances: Mapping[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    progress: bool | None = None
    retune: bool = False
