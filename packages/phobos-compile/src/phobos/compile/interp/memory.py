"""Reading and writing windows of a tensor without touching memory outside it.

A window is one ``start :+ length`` or point index per axis.  ``locate`` clips it
to the tensor: the part inside is read or written with numpy basic indexing (a
view, so any strides work), and the lanes outside are absent.  Nothing outside
the tensor is ever indexed, so a view into a larger buffer never leaks its
neighbours into a result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from phobos.compile.interp.dtypes import (
    bf16_bits_to_f32,
    compute_dtype,
    f32_to_bf16_bits,
    round_to_bf16,
)
from phobos.compile.interp.tiles import Tile, absent_tile
from phobos.compile.ir import nodes as ir

# How an atomic combines an element's old value with the new one.
Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Window:
    """Where a window lies in its tensor and in its tile.

    ``in_tensor`` indexes the tensor's in-bounds part (ints for point axes);
    ``in_tile`` indexes the same lanes in the tile; ``box`` is ``in_tensor`` with
    points as length-1 slices, and ``box_start`` its first element.
    """

    shape: tuple[int, ...]
    in_tensor: tuple[int | slice, ...]
    in_tile: tuple[slice, ...]
    box: tuple[slice, ...]
    box_start: tuple[int, ...]
    complete: bool
    empty: bool

    def valid_part(self, valid: np.ndarray | None) -> np.ndarray | None:
        """The in-bounds lanes' presence, shaped like ``in_tile`` (None: all present)."""
        return None if valid is None else valid[self.in_tile]


def locate(tensor_shape: tuple[int, ...], starts: list[int], lengths: list[int | None]) -> Window:
    """Clip a window (``None`` length: a point index) to a tensor of ``tensor_shape``."""
    shape: list[int] = []
    in_tensor: list[int | slice] = []
    in_tile: list[slice] = []
    box: list[slice] = []
    complete = True
    empty = False
    for extent, start, length in zip(tensor_shape, starts, lengths):
        if length is None:
            if not 0 <= start < extent:
                empty = True
            in_tensor.append(start)
            box.append(slice(start, start + 1))
            continue
        low, high = max(start, 0), min(start + length, extent)
        if high <= low:
            empty = True
            low = high = max(min(start, extent), 0)
        shape.append(length)
        in_tensor.append(slice(low, high))
        in_tile.append(slice(low - start, high - start))
        box.append(slice(low, high))
        complete = complete and low == start and high == start + length
    return Window(
        shape=tuple(shape),
        in_tensor=tuple(in_tensor),
        in_tile=tuple(in_tile),
        box=tuple(box),
        box_start=tuple(b.start for b in box),
        complete=complete and not empty,
        empty=empty,
    )


class TensorMemory:
    """A tensor argument: its array, and conversions between its storage and values."""

    def __init__(self, param: ir.TensorParam, array: np.ndarray) -> None:
        self.shape = array.shape
        self.dtype = compute_dtype(param.dtype)
        self._bf16 = param.dtype == "bf16"
        self._storage = array.view(np.uint16) if self._bf16 else array

    def read_tile(self, window: Window) -> Tile:
        """The window's lanes; those outside the tensor are absent and never read."""
        if window.empty:
            return absent_tile(window.shape, self.dtype)
        inside = self._read(self._storage[window.in_tensor])
        if window.complete:
            return Tile(inside)
        values = np.zeros(window.shape, self.dtype)
        valid = np.zeros(window.shape, np.bool_)
        values[window.in_tile] = inside
        valid[window.in_tile] = True
        return Tile(values, valid)

    def write_tile(self, window: Window, tile: Tile) -> None:
        """Write the tile's present lanes that fall inside the tensor."""
        if window.empty:
            return
        values = self._write(tile.values[window.in_tile])
        target = self._storage[window.in_tensor]
        valid = window.valid_part(tile.valid)
        if valid is None:
            target[...] = values
        else:
            np.copyto(target, values, where=valid)

    def update_tile(self, window: Window, tile: Tile, combine: Combine) -> None:
        """Each present in-bounds lane's element becomes ``combine(element, lane)``."""
        if window.empty:
            return
        target = self._storage[window.in_tensor]
        old = self._read(target)
        new = self._rounded(combine(old, tile.values[window.in_tile]))
        valid = window.valid_part(tile.valid)
        target[...] = self._write(new if valid is None else np.where(valid, new, old))

    def update_element(
        self, index: tuple[int, ...], value: np.generic, combine: Combine
    ) -> np.generic:
        """The element becomes ``combine(element, value)``; returns its old value."""
        old = self.read_element(index)
        self.write_element(index, self._rounded(combine(old, value)))
        return old

    def read_element(self, index: tuple[int, ...]) -> np.generic:
        """One element (the caller has checked that ``index`` is inside the tensor)."""
        return self._read(self._storage[index])

    def write_element(self, index: tuple[int, ...], value: np.generic) -> None:
        self._storage[index] = self._write(value)

    def contains(self, index: tuple[int, ...]) -> bool:
        return all(0 <= i < n for i, n in zip(index, self.shape))

    def _read(self, stored):
        if self._bf16:
            converted = bf16_bits_to_f32(np.asarray(stored))
            return converted if converted.ndim else converted[()]
        if isinstance(stored, np.ndarray):
            return stored.copy()
        return stored

    def _rounded(self, values):
        """Values of the element type (bf16: float32 rounded to the nearest bf16)."""
        typed = np.asarray(values, dtype=self.dtype)
        typed = round_to_bf16(typed) if self._bf16 else typed
        return typed if typed.ndim else typed[()]

    def _write(self, values):
        return f32_to_bf16_bits(values) if self._bf16 else values
