"""Compare a variant's output with the reference's, on the arrays' own device.

Written once against a handful of operations (``f64``, ``isnan``, ``isfinite``,
``abs``, ``where``, ``count``) that each array library provides
(``phobos.autotune.arrays``).  Only a few numbers come back to the host: counts
and the worst element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from phobos.autotune.tolerance import Tolerance


@dataclass(frozen=True)
class Mismatch:
    """Why an output is rejected, with its worst element."""

    bad: int  # elements off
    size: int
    index: tuple[int, ...]  # the worst element
    got: float
    expected: float
    error: float  # |got - expected| at the worst element (inf for NaN/inf disagreements)
    nan_where_finite: int  # elements NaN in the output but not in the reference

    def describe(self, name: str) -> str:
        where = f"{name}[{', '.join(map(str, self.index))}]"
        text = (
            f"largest error {self.error:.3g} at {where} (got {self.got:.6g}, expected "
            f"{self.expected:.6g}); {self.bad} of {self.size} elements off"
        )
        if self.nan_where_finite:
            text += f", {self.nan_where_finite} NaN where the reference has a number"
        return text

    def describe_between(self, name: str, this: str, other: str) -> str:
        """The mismatch of ``this`` (got) against ``other`` (expected), neither of them the
        reference: ``largest difference 0.5 at out[3] (group 2 has 1, group 1 has 0.5); …``."""
        where = f"{name}[{', '.join(map(str, self.index))}]"
        return (
            f"largest difference {self.error:.3g} at {where} ({this} has {self.got:.6g}, "
            f"{other} has {self.expected:.6g}); {self.bad} of {self.size} elements differ"
        )


def compare(
    ops: Any, got: Any, expected: Any, shape: tuple[int, ...], tolerance: Tolerance
) -> Mismatch | None:
    """None when ``got`` matches ``expected`` within ``tolerance``, else the mismatch."""
    g = ops.f64(got)
    e = ops.f64(expected)
    g_nan, e_nan = ops.isnan(g), ops.isnan(e)
    finite = ops.isfinite(g) & ops.isfinite(e)
    error = ops.abs(ops.where(finite, g, 0.0) - ops.where(finite, e, 0.0))
    if tolerance.exact:
        off = (got != expected) & ~(g_nan & e_nan)
    else:
        magnitude = ops.abs(ops.where(ops.isfinite(e), e, 0.0))
        scale = float(magnitude.max()) or 1.0
        allowed = tolerance.atol * scale + tolerance.rtol * magnitude
        nonfinite_off = ~finite & (g != e) & ~(g_nan & e_nan)
        off = (finite & (error > allowed)) | nonfinite_off
    bad = ops.count(off)
    if not bad:
        return None
    # The worst element: any non-finite disagreement first, else the largest error.
    score = ops.where(off & ~finite, float("inf"), ops.where(off, error, -1.0))
    flat = int(score.argmax())
    index = unravel(flat, shape)
    got_value = float(g.reshape(-1)[flat])
    expected_value = float(e.reshape(-1)[flat])
    worst = float(error.reshape(-1)[flat]) if finite.reshape(-1)[flat] else float("inf")
    return Mismatch(
        bad=bad,
        size=_count(shape),
        index=index,
        got=got_value,
        expected=expected_value,
        error=worst,
        nan_where_finite=ops.count(g_nan & ~e_nan),
    )


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for extent in reversed(shape):
        index.append(flat % extent)
        flat //= extent
    return tuple(reversed(index))


def _count(shape: tuple[int, ...]) -> int:
    total = 1
    for extent in shape:
        total *= extent
    return total
