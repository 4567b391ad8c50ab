"""``Load`` and ``Store``: evaluate the indices, clip the window, record accesses for the race check.

A scalar cannot be absent, so a point-only load outside the tensor reads zero (as
the GPU code does) without touching memory; a point-only store there is skipped.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from phobos.compile.interp.binding import Launch
from phobos.compile.interp.frame import Code, Frame, Step
from phobos.compile.interp.memory import locate
from phobos.compile.interp.races import RaceTracker
from phobos.compile.interp.tiles import Tile
from phobos.compile.ir import nodes as ir


def _indices(
    indices: tuple[ir.TensorIndex, ...], compile_expr: Callable[[ir.Expr], Code]
) -> tuple[list[Code], list[int | None]]:
    """Compiled start expressions, and the window lengths (None for a point index)."""
    starts = [compile_expr(i.start if isinstance(i, ir.WindowIndex) else i.index) for i in indices]
    lengths = [i.length if isinstance(i, ir.WindowIndex) else None for i in indices]
    return starts, lengths


def compile_load(
    node: ir.Load,
    compile_expr: Callable[[ir.Expr], Code],
    launch: Launch,
    tracker: RaceTracker | None,
) -> Code:
    memory = launch.tensors[node.tensor.name]
    name = node.tensor.name
    starts, lengths = _indices(node.indices, compile_expr)
    tracked = tracker is not None and tracker.tracks(name)
    site = tracker.site(node.span, writes=False) if tracked else -1

    if isinstance(node.type, ir.ScalarT):
        zero = memory.dtype.type(0)

        def load_element(frame: Frame) -> np.generic:
            index = tuple(int(s(frame)) for s in starts)
            if not memory.contains(index):
                return zero
            if tracked:
                tracker.read(name, locate(memory.shape, list(index), lengths), site)
            return memory.read_element(index)

        return load_element

    def load_tile(frame: Frame) -> Tile:
        window = locate(memory.shape, [int(s(frame)) for s in starts], lengths)
        if tracked and not window.empty:
            tracker.read(name, window, site)
        return memory.read_tile(window)

    return load_tile


def compile_store(
    node: ir.Store,
    compile_expr: Callable[[ir.Expr], Code],
    launch: Launch,
    tracker: RaceTracker | None,
) -> Step:
    memory = launch.tensors[node.tensor.name]
    name = node.tensor.name
    starts, lengths = _indices(node.indices, compile_expr)
    value_code = compile_expr(node.value)
    site = tracker.site(node.span, writes=True) if tracker is not None else -1

    def store(frame: Frame) -> bool:
        window = locate(memory.shape, [int(s(frame)) for s in starts], lengths)
        value = value_code(frame)
        if window.empty:
            return False
        if not isinstance(value, Tile):
            if not window.shape:
                if tracker is not None:
                    tracker.write(name, window, None, site)
                memory.write_element(window.in_tensor, value)
                return False
            value = Tile(np.broadcast_to(value, window.shape))
        if tracker is not None:
            tracker.write(name, window, window.valid_part(value.valid), site)
        memory.write_tile(window, value)
        return False

    return store
