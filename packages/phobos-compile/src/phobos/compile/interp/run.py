"""``run``: a kernel over its grid, one block after another."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phobos.compile.interp.binding import bind, written_tensors
from phobos.compile.interp.expressions import ExprCompiler
from phobos.compile.interp.frame import Frame
from phobos.compile.interp.races import RaceTracker
from phobos.compile.interp.statements import StmtCompiler
from phobos.compile.ir import nodes as ir


def run(
    kernel: ir.Kernel,
    grid: tuple[int, ...],
    args: Sequence[object],
    race_check: bool = False,
) -> None:
    """Run ``kernel`` on numpy ``args`` (in parameter order) for every block of ``grid``.

    ``grid`` is 1 to 3 block counts; a zero runs no block (the arguments are still checked).

    Raises ``LaunchError`` (before anything is written) when the arguments or grid
    do not fit, and with ``race_check``, ``RaceError`` when two blocks touch one
    element and at least one writes it.
    """
    launch = bind(kernel, grid, args)
    tracker = None
    if race_check:
        written = {n: launch.tensors[n].shape for n in written_tensors(kernel.body)}
        tracker = RaceTracker(written, launch.grid)
    body = StmtCompiler(ExprCompiler(launch, tracker)).body(kernel.body)
    gx, gy, gz = launch.grid
    index = np.int64
    # Integers wrap at their width and floats overflow to inf, silently, as on the GPU.
    with np.errstate(all="ignore"):
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    if tracker is not None:
                        tracker.block = x + gx * (y + gy * z)
                    body(Frame((index(x), index(y), index(z))))
