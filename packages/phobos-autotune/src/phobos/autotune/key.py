"""The tuning key: which launches share one tuning result.

By default two launches share a result when they run the same kernel (same
program text) with the same fixed names, on the same chip, with the same dtypes
and the same named extents once each is rounded up to a power of two: a kernel
tuned for N = 1000 serves N = 600 and N = 1024, not N = 1025.  A caller may
replace the shape part (``shape``) with its own JSON value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Bump when a stored result would mean something else.  2: unwritten elements are found
# exactly, and without a reference function disagreeing variants raise (an older result may
# have chosen a variant that leaves elements unwritten).
TUNER_VERSION = 2


def next_power_of_two(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def default_shape(extents: Mapping[str, int], dtypes: Mapping[str, str]) -> dict[str, Any]:
    """The shape part of the default key: extents rounded up to powers of two, and dtypes."""
    return {
        "extents": {name: next_power_of_two(size) for name, size in extents.items()},
        "dtypes": dict(dtypes),
    }


def tuning_key(
    *,
    kernel: str,
    program: str,
    arch: str,
    fixed: Mapping[str, int],
    shape: Any,
    reference: str | None = None,
) -> str:
    """The key as canonical JSON text (readable in ``phobos-cache list``).

    ``program`` identifies the code (a digest of the program text); ``arch`` is the
    chip (``sm_90a NVIDIA H200``) or ``cpu-interpreter``; ``reference`` identifies the reference
    function (a digest of its source), None without one.
    """
    record = {
        "tuner": TUNER_VERSION,
        "kernel": kernel,
        "program": program,
        "arch": arch,
        "fixed": dict(fixed),
        "shape": shape,
        "reference": reference,
    }
    try:
        return json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"a tuning key must be JSON data (dicts, lists, strings, numbers), got {shape!r}: {exc}"
        ) from None
