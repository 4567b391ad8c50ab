"""The launch grid: a tuple of 1 to 3 block counts, or a function of the launch's ``meta``.

``meta`` holds the variant's compile-time values and the named extents read from
the arrays (``{"BLOCK": 256, "N": 1000}``), so ``lambda meta: (cdiv(meta["N"],
meta["BLOCK"]),)`` sizes the grid from the data.  A grid with a zero in it launches
nothing (an empty array needs no blocks); negative counts and counts over the
hardware limits are refused, and so are counts that are not ints (a float, a
string, a bool).  ``grid_dims`` and ``call_grid`` are the one rule for every launch:
``phobos.lang`` applies them to interpreter launches too.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from phobos.launch.errors import LaunchError

MAX_GRID = (2**31 - 1, 65535, 65535)
Grid = Union[Sequence[int], Callable[[Mapping[str, int]], Sequence[int]]]


def grid_dims(kernel: str, grid: Any) -> tuple[int, int, int] | None:
    """``(x, y, z)`` for a grid tuple, or ``None`` when it has no blocks; checks the limits."""
    if type(grid) is tuple and len(grid) == 1:
        x = grid[0]
        if type(x) is int and 0 < x <= MAX_GRID[0]:
            return (x, 1, 1)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
        raise LaunchError(f"{kernel}: a grid is a tuple of 1 to 3 ints, got {grid!r}")
    dims = []
    for axis, count in zip("xyz", grid):
        try:
            if isinstance(count, bool):  # an int to Python, but not a count
                raise TypeError
            count = operator.index(count)
        except TypeError:
            raise LaunchError(
                f"{kernel}: grid {axis} must be an int, got {type(count).__name__} {count!r}"
            ) from None
        if count < 0:
            raise LaunchError(f"{kernel}: grid {axis} = {count} is negative")
        limit = MAX_GRID["xyz".index(axis)]
        if count > limit:
            raise LaunchError(f"{kernel}: grid {axis} = {count} exceeds the limit {limit}")
        dims.append(count)
    if 0 in dims:
        return None
    dims += [1] * (3 - len(dims))
    return (dims[0], dims[1], dims[2])


def call_grid(kernel: str, grid: Callable[[dict[str, int]], Any], meta: dict[str, int]) -> Any:
    """Call a grid function; a name it asks for that ``meta`` lacks is named in the error."""
    try:
        return grid(meta)
    except KeyError as exc:
        if exc.args and exc.args[0] not in meta:
            known = ", ".join(sorted(meta)) or "nothing"
            raise LaunchError(
                f"{kernel}: the grid function asked for meta[{exc.args[0]!r}]; meta has {known}"
            ) from None
        raise
