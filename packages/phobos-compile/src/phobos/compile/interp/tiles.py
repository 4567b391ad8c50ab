"""A tile value: its lanes, and which of them are present.

A scalar is a numpy scalar and is never absent.  A tile is a ``Tile``: ``values``
holds every lane (absent lanes hold some harmless value that nothing may depend
on) and ``valid`` says which lanes are present, or is None when all of them are,
which keeps the common, fully in-bounds case free of masks.  Tiles are never
changed in place once made, so they may share arrays.
"""

from __future__ import annotations

import numpy as np


class Tile:
    __slots__ = ("valid", "values")

    def __init__(self, values: np.ndarray, valid: np.ndarray | None = None) -> None:
        self.values = values
        self.valid = valid

    def __repr__(self) -> str:
        return f"Tile({self.values!r}, valid={self.valid!r})"

    def present(self, absent_as: object) -> np.ndarray:
        """The lanes, with absent ones replaced by ``absent_as``."""
        if self.valid is None:
            return self.values
        return np.where(self.valid, self.values, absent_as).astype(self.values.dtype, copy=False)


def both_valid(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    """The lanes present in both operands of an elementwise op."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def absent_tile(shape: tuple[int, ...], dtype: np.dtype) -> Tile:
    """A tile with every lane absent."""
    return Tile(np.zeros(shape, dtype), np.zeros(shape, np.bool_))
