"""Emitted values: a block-uniform scalar is a C expression; a tile is one per lane.

A ``TileValue``'s ``lane`` is a C expression valid inside a lane loop (see
``lanes.py``): it may name ``r`` (the repeat), ``i`` (the lane in its group),
``g`` and the lane's coordinates ``c0``, ``c1``, ... .  Elementwise operations
compose these strings, so a chain such as ``alpha * x + y`` becomes one C
expression per lane instead of a temporary array per operation.  Memory
accesses, variables and layout conversions materialise a tile into a register
array ``name[r][i]`` (with one word of presence bits per group, ``name_m[r]``).
``mask`` is the lane's "present" flag, or None where the value has no absent
lane (only partial values carry masks).  ``word``, when known, is the whole
group's presence as one word (bit i: lane i), a C expression valid outside the
lane loop; then ``mask`` tests its bit.  Words let a group's presence travel as
one ``and`` per group instead of a bit test and set per lane.  A value computed
from nothing but coordinates and scalars is valid in any layout (``anywhere``),
so it never forces its operands' layout to change.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.codegen.layout import AnyLayout


@dataclass(frozen=True)
class ScalarValue:
    dtype: str
    expr: str


@dataclass(frozen=True)
class TileValue:
    """``anywhere``: the lane expression holds in every layout of the shape (splats, iota).

    ``rows``, on a row value broadcast along the last axis for free (``t[:, newaxis]``
    over a ``RowLayout``), is that row value: another layout (``dot``'s fragments)
    gets the tile by moving only the rows, not every lane.
    """

    dtype: str
    layout: AnyLayout
    lane: str
    mask: str | None = None
    anywhere: bool = False
    word: str | None = None
    rows: TileValue | None = None


def and_words(*values: TileValue) -> str | None:
    """The presence word of an elementwise result: the AND of its masked operands' words.

    None when some masked operand has no word (its presence is known lane by lane only).
    """
    masked = [v for v in values if v.mask is not None]
    if not masked or any(v.word is None for v in masked):
        return None
    words = list(dict.fromkeys(v.word for v in masked if v.word is not None))
    return words[0] if len(words) == 1 else "(" + " & ".join(words) + ")"


def and_masks(*masks: str | None) -> str | None:
    present = list(dict.fromkeys(m for m in masks if m is not None))
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return "(" + " && ".join(present) + ")"


def variable_name(name: str) -> str:
    """The C name of a Phobos variable (prefixed: never a C keyword or a generated name)."""
    return f"v_{name}"
