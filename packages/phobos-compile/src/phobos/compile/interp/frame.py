"""What one block sees while it runs: its coordinates and its variables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Union

import numpy as np

from phobos.compile.interp.tiles import Tile

Value = Union[np.generic, Tile]


class Frame:
    """The running block: ``block`` is (x, y, z) as index values; ``variables`` by name."""

    __slots__ = ("block", "variables")

    def __init__(self, block: tuple[np.int64, np.int64, np.int64]) -> None:
        self.block = block
        self.variables: dict[str, Value] = {}

    def where(self) -> str:
        return "block (" + ", ".join(str(int(c)) for c in self.block) + ")"


# An expression compiled to a function of the running block.
Code = Callable[[Frame], Value]

# A statement compiled to a function of the running block; True once the block returned.
Step = Callable[[Frame], bool]
