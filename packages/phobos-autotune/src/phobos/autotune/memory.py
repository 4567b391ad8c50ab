"""Which written arguments share memory with an argument the kernel reads.

An output (written, never read) is poisoned before each checked run.  When its memory is
also that of an argument the kernel reads (one array passed twice, ``scale(x, x)``), the
poison lands in that input too: every variant computes from the poison, and a wrong one
can agree with the rest (on the GPU a NaN computed from a NaN is the canonical NaN), or a
right one can look unwritten (numpy keeps a NaN's payload, so the poison comes back out).
Such an output is read through the other argument: it is restored, not poisoned, as an
in-place argument is.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from phobos.launch import ArrayFields, read_arguments

Span = tuple[int, int]  # the bytes [start, end) an array's elements lie in


def read_through_others(
    args: Sequence[Any], written: Collection[int], read: Collection[int]
) -> frozenset[int]:
    """The positions in ``written`` whose memory overlaps that of another argument in ``read``."""
    spans = {
        position: span
        for position, fields in enumerate(read_arguments(args))
        if fields is not None and (span := _span(fields, args[position])) is not None
    }
    return frozenset(
        position
        for position in written
        if position in spans
        and any(
            other != position and other in spans and _overlap(spans[position], spans[other])
            for other in read
        )
    )


def _span(fields: ArrayFields, array: Any) -> Span | None:
    """The bytes an array's elements lie in, from its address, shape and strides; None when it
    has no elements.  A view with gaps (``x[::2]``) counts its gaps: this errs on the side of
    restoring."""
    pointer, shape, strides = fields[0], fields[1], fields[2]
    if 0 in shape:
        return None
    itemsize = array.element_size() if hasattr(array, "element_size") else array.dtype.itemsize
    low = sum(min(0, s * (n - 1)) for n, s in zip(shape, strides))
    high = sum(max(0, s * (n - 1)) for n, s in zip(shape, strides))
    return pointer + low * itemsize, pointer + (high + 1) * itemsize


def _overlap(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]
