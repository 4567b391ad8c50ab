"""How close a variant's output must be to the reference, per dtype.

An element passes when ``|got - expected| <= atol * scale + rtol * |expected|``,
where ``scale`` is the largest finite ``|expected|`` of that tensor (1 when it is
all zeros).  Scaling ``atol`` by the output's magnitude matters for reductions: two
correct variants that sum in different orders differ by rounding in proportion to
the terms summed, so an element that cancels to near zero may differ by far more
than ``rtol`` of itself.  A wrong variant (a missing tile, a bad index) is off by
the size of the values themselves, orders of magnitude above these bounds.
Integers and bools must match exactly.  NaN must appear exactly where the
reference has NaN, and infinities must match.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float  # times the largest |expected| of the tensor

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0


EXACT = Tolerance(0.0, 0.0)

DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "f64": Tolerance(1e-9, 1e-9),
    "f32": Tolerance(1e-4, 1e-5),
    "f16": Tolerance(1e-2, 1e-2),
    "bf16": Tolerance(2e-2, 2e-2),
}


def tolerance_for(dtype: str, table: dict[str, Tolerance] | None = None) -> Tolerance:
    """The tolerance for a Phobos dtype name (``f32``); exact for integers and bools."""
    return (table or DEFAULT_TOLERANCES).get(dtype, EXACT)
