"""What the arguments allow a variant to assume, read before choosing or compiling one.

The compiler specialises a variant on facts about its tensors (the alignment of each
base address, a unit last stride) and on the index width; a launch refuses
arguments that break them.  These functions read the same facts from the arguments
so the caller can pick (or compile) a variant that fits instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from phobos.launch.arrays import ArrayProtocolError, element_span, reader_for
from phobos.launch.errors import LaunchError

INDEX32_LIMIT = 2**31
MAX_ALIGN = 16  # the widest vector access the compiler emits


def specialization_of(args: Sequence[Any]) -> dict[int, dict[str, Any]]:
    """Each array argument's facts, keyed by its position.

    ``{"align": bytes (a power of two up to 16), "unit_stride": bool, "dtype": str,
    "rank": int}``.  Scalars are left out.
    """
    facts = {}
    for position, arg in enumerate(args):
        fields = _read(position, arg)
        if fields is None:
            continue
        ptr, shape, strides, dtype = fields[:4]
        facts[position] = {
            "align": alignment_of(ptr),
            "unit_stride": not shape or shape[-1] <= 1 or strides[-1] == 1,
            "dtype": dtype,
            "rank": len(shape),
        }
    return facts


def needs_index64(args: Sequence[Any]) -> bool:
    """Whether any array has an extent or an element offset of 2^31 or more."""
    for position, arg in enumerate(args):
        fields = _read(position, arg)
        if fields is None:
            continue
        shape, strides = fields[1], fields[2]
        if any(n >= INDEX32_LIMIT for n in shape) or element_span(shape, strides) >= INDEX32_LIMIT:
            return True
    return False


def alignment_of(ptr: int) -> int:
    """The largest power of two up to 16 that divides ``ptr``."""
    return MAX_ALIGN if ptr % MAX_ALIGN == 0 else ptr & -ptr


def _read(position: int, arg: Any) -> tuple | None:
    reader = reader_for(arg)
    if reader is None:
        return None
    try:
        return reader(arg)
    except ArrayProtocolError as exc:
        raise LaunchError(f"argument {position}: {exc}") from None
