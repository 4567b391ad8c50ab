"""``trace`` and ``assert`` in the interpreter: print values, or stop at a failed assert.

A trace prints one line per value, ``file:line: block (x, y, z): name = value``,
to standard output, a tile in numpy's layout with absent lanes shown as ``_``.
A failed assert raises ``DeviceAssertError`` at the assert's line, naming the
block and, for a tile, the first failing lane.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from phobos.compile.diagnostics import PhobosError, error
from phobos.compile.interp.frame import Code, Frame, Step, Value
from phobos.compile.interp.tiles import Tile
from phobos.compile.ir import nodes as ir

LINE_WIDTH = 75  # numpy's default, counted after the trace's prefix


class DeviceAssertError(PhobosError):
    """An ``assert(c, "message")`` in a kernel did not hold."""


class _Lane:
    """One lane of a partial tile, printed as its value or ``_``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def format_value(value: Value, prefix: str = "") -> str:
    """``value`` as a trace prints it; continuation lines of a tile line up after ``prefix``."""
    if not isinstance(value, Tile):
        return str(value)
    width = len(prefix) + LINE_WIDTH
    if value.valid is None:
        return np.array2string(value.values, width, prefix=prefix)
    lanes = np.empty(value.values.shape, dtype=object)
    for index, lane in np.ndenumerate(value.values):
        lanes[index] = _Lane(str(lane) if value.valid[index] else "_")
    return np.array2string(lanes, width, prefix=prefix)


def compile_trace(node: ir.Trace, compile_expr: Callable[[ir.Expr], Code]) -> Step:
    value = compile_expr(node.value)
    when = compile_expr(node.when) if node.when is not None else None
    where = f"{node.span.file}:{node.span.line}"

    def trace(frame: Frame) -> bool:
        if when is None or when(frame):
            head = f"{where}: {frame.where()}: {node.name} = "
            text = format_value(value(frame), " " * len(head))
            print(head + text, file=sys.stdout, flush=True)
        return False

    return trace


def compile_assert(node: ir.DeviceAssert, compile_expr: Callable[[ir.Expr], Code]) -> Step:
    cond = compile_expr(node.cond)

    def check(frame: Frame) -> bool:
        held = cond(frame)
        if not isinstance(held, Tile):
            if not held:
                raise _failure(node, f"assertion failed in {frame.where()}")
            return False
        failing = ~held.values.astype(bool)
        if held.valid is not None:
            failing &= held.valid
        if failing.any():
            lane = tuple(int(i) for i in np.argwhere(failing)[0])
            shown = lane[0] if len(lane) == 1 else lane
            count = f"{int(failing.sum())} of {failing.size} lanes fail"
            raise _failure(node, f"assertion failed in {frame.where()} at lane {shown} ({count})")
        return False

    return check


def _failure(node: ir.DeviceAssert, where: str) -> DeviceAssertError:
    found = error(
        node.span,
        f"{where}: {node.message}",
        help="trace the values with `trace(...)` to see why; on the GPU a failed assert "
        "stops the launch and leaves the CUDA context unusable",
    )
    return DeviceAssertError(*found.diagnostics)
