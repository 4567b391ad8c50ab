"""Loops over a thread's lanes: fully unrolled, so register arrays see only constant indices.

``group_loop`` walks the thread's groups (``r``; ``g = r * threads + tid``),
``lane_loop`` the lanes of one group (``i``).  Both carry ``#pragma unroll``
and have compile-time trip counts, so after unrolling every ``v[r][i]`` is a
register: nothing is spilled to local memory.  The loops declare only the names
their bodies mention (``g``, the coordinates ``c0, c1, ...``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.layout import Layout

_COORD = re.compile(r"\bc(\d+)\b")
_GROUP = re.compile(r"\bg\b")


@contextmanager
def group_loop(ctx: EmitContext, layout: Layout, skip_padding: bool = False) -> Iterator[None]:
    """``for r``: the body runs once per group; ``skip_padding`` skips groups past the tile."""
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int r = 0; r < {layout.repeats}; ++r)"):
        start = len(ctx.lines)
        if skip_padding and layout.guarded:
            with ctx.block(f"if (g < {layout.groups})"):
                yield
        else:
            yield
        if any(_GROUP.search(text) for text in ctx.lines[start:]):
            thread = f"phobos::cta_thread<{ctx.threads}>(tid)"
            ctx.lines.insert(start, ctx.indented(f"const int g = r * {layout.threads} + {thread};"))


@contextmanager
def lane_loop(ctx: EmitContext, layout: Layout) -> Iterator[None]:
    """``for i`` inside a ``group_loop``: the body runs once per lane of the group."""
    ctx.directive("#pragma unroll")
    with ctx.block(f"for (int i = 0; i < {layout.vec}; ++i)"):
        start = len(ctx.lines)
        yield
        declare_coords(ctx, layout, start, "i")


def declare_coords(ctx: EmitContext, layout: Layout, start: int, lane: str) -> None:
    """Insert, at line ``start``, the coordinates that the lines after it mention."""
    used = {int(m) for text in ctx.lines[start:] for m in _COORD.findall(text)}
    coords = layout.coords(lane)
    ctx.lines[start:start] = [ctx.indented(f"const int c{k} = {coords[k]};") for k in sorted(used)]


def all_lanes(
    ctx: EmitContext, layout: Layout, body: list[str], skip_padding: bool = False
) -> None:
    """Run ``body`` (C statements) for every lane of the thread."""
    with group_loop(ctx, layout, skip_padding), lane_loop(ctx, layout):
        for text in body:
            ctx.line(text)


def declare_tile(
    ctx: EmitContext, ctype: str, name: str, layout: Layout, masked: bool, user: bool = False
) -> None:
    """``name[r][i]``, and with ``masked`` one word of presence bits per group (bit i: lane i).

    ``user``: the user's variable, which the program may leave unused (no warning).
    """
    unused = "[[maybe_unused]] " if user else ""
    ctx.line(f"{unused}{ctype} {name}[{layout.repeats}][{layout.vec}];")
    if masked:
        ctx.line(f"{unused}unsigned {name}_m[{layout.repeats}] = {{}};")


def mask_word(name: str) -> str:
    """The presence word of the current group of tile ``name``."""
    return f"{name}_m[r]"


def word_lane(word: str, lane: str = "i") -> str:
    """Lane ``lane`` of a group whose presence word is ``word`` is present."""
    return f"phobos::lane_bit({word}, {lane})"


def mask_lane(name: str, lane: str = "i") -> str:
    """Lane ``lane`` of the current group of tile ``name`` is present."""
    return word_lane(mask_word(name), lane)


def copy_lanes(
    ctx: EmitContext, layout: Layout, name: str, lane: str, mask: str | None, word: str | None
) -> None:
    """``name[r][i] = lane`` for every lane; with a mask, ``name``'s presence too.

    A known ``word`` is stored once per group, after the lanes (which may read the
    old presence of ``name`` itself); else each lane's bit is set from ``mask``.
    """
    body = [f"{name}[r][i] = {lane};"]
    if mask is not None and word is None:
        body.append(set_mask_lane(name, mask))
    with group_loop(ctx, layout):
        with lane_loop(ctx, layout):
            for text in body:
                ctx.line(text)
        if mask is not None and word is not None:
            ctx.line(f"{mask_word(name)} = {word};")


def set_mask_lane(name: str, value: str) -> str:
    """The statement recording lane ``i``'s presence."""
    return f"phobos::set_lane({name}_m[r], i, {value});"
