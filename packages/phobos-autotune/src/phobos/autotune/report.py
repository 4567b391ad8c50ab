"""The tuning report: every variant, what became of it, its time, and the choice.

It is what the cache stores for a key (``to_json``/``from_json``) and what
``kernel.tuning_report()`` prints.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PASSED = "passed"
WRONG = "wrong"  # ran, but left elements unwritten or disagreed with the reference
DISAGREED = "disagreed"  # ran, but no reference function, and the variants fell into groups
FAULTED = "faulted"  # raised while running
COMPILE_ERROR = "compile error"
PRUNED = "pruned"
STATUSES = (PASSED, WRONG, DISAGREED, FAULTED, COMPILE_ERROR, PRUNED)


@dataclass
class VariantResult:
    values: dict[str, int]
    status: str
    detail: str = ""
    time_ms: float | None = None
    chosen: bool = False
    group: int | None = None  # without a reference function: its group of agreeing variants


@dataclass
class Report:
    """One key's tuning: ``choice`` is what launches with this key use."""

    kernel: str
    key: str
    describe: str
    timing: str
    reference: str
    variants: list[VariantResult]
    choice: dict[str, int]
    seconds: float
    groups: int = 0  # without a reference function: how many groups the variants fell into
    from_cache: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.counts = {s: sum(v.status == s for v in self.variants) for s in STATUSES}

    @property
    def ran(self) -> int:
        """How many variants this process ran (0 when the result came from the cache)."""
        return (
            0
            if self.from_cache
            else sum(self.counts[s] for s in (PASSED, WRONG, DISAGREED, FAULTED))
        )

    def summary(self) -> str:
        """One line: what was tuned, what happened to the variants, the choice."""
        parts = [f"{n} {s}" for s, n in self.counts.items() if n]
        chosen = next((v for v in self.variants if v.chosen), None)
        time_text = f" ({chosen.time_ms:.4g} ms)" if chosen and chosen.time_ms is not None else ""
        origin = "from the cache" if self.from_cache else f"in {self.seconds:.2f} s"
        choice = _values_text(self.choice) if chosen or self.choice else "none"
        return (
            f"phobos autotune {self.kernel} [{self.describe}]: {len(self.variants)} variants, "
            f"{', '.join(parts)}; chose {choice}{time_text} {origin}"
        )

    def __str__(self) -> str:
        names = list(self.choice) or list(dict.fromkeys(n for v in self.variants for n in v.values))
        grouped = any(v.group is not None for v in self.variants)
        header = [*names, *(["group"] if grouped else []), "status", "time (ms)", "detail"]
        rows = [
            [
                *(str(v.values.get(n, "")) for n in names),
                *([str(v.group or "-")] if grouped else []),
                v.status,
                "-" if v.time_ms is None else f"{v.time_ms:.4g}",
                v.detail,
            ]
            for v in self.variants
        ]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
        lines = [
            self.summary(),
            f"times: {self.timing}",
            f"reference: {self.reference}",
            "  " + _row(header, widths),
        ]
        for variant, row in zip(self.variants, rows):
            lines.append(("* " if variant.chosen else "  ") + _row(row, widths))
        return "\n".join(line.rstrip() for line in lines)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["from_cache"], data["counts"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Report:
        fields = {k: v for k, v in data.items() if k not in ("variants", "from_cache", "counts")}
        variants = [VariantResult(**v) for v in data["variants"]]
        return cls(**fields, variants=variants, from_cache=True)


def _row(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths)) + "  " + cells[-1]


def _values_text(values: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "the only variant"
