"""The launch block: the bytes ``cuLaunchKernelEx`` reads a launch from.

One buffer holds the ``CUlaunchConfig`` (grid, CTA, dynamic shared memory, stream;
no launch attributes) followed by every parameter slot's value at its natural
alignment, and a ``void**`` array points at each value.  All of it is built once
per kernel and thread; a launch rewrites the grid, the stream and the values in
place with a single ``struct.pack_into`` and hands the driver the same three
objects, so the hot path allocates nothing and converts no arguments.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from functools import partial
from typing import Any

from phobos.launch.dtypes import SLOT_ITEMSIZE, SLOT_STRUCT_CODE

# CUlaunchConfig (cuda.h): gridDim x/y/z, blockDim x/y/z, sharedMemBytes (uint32 each), 4 bytes
# of padding, hStream, then attrs (NULL) and numAttrs (0) with padding: 56 bytes, packed as zeros.
CONFIG_FORMAT = "3I3II4xQ16x"
CONFIG_SIZE = struct.calcsize("<" + CONFIG_FORMAT)
# Where its fields start (for the native path, through table.c_header).
CONFIG_GRID, CONFIG_BLOCK, CONFIG_SMEM = 0, struct.calcsize("<3I"), struct.calcsize("<6I")
CONFIG_STREAM = struct.calcsize("<7I4x")


class LaunchBlock:
    """The launch configuration and the kernel's C parameters, packed where the driver reads them.

    ``write(gx, gy, gz, bx, by, bz, dynamic_smem, stream, *values)`` fills it; the
    CTA and shared-memory fields are rewritten with their (constant) values because
    one ``pack_into`` covers the whole block.
    """

    def __init__(self, slot_types: Sequence[str], cta: Sequence[int], dynamic_smem: int) -> None:
        self.slot_types = tuple(slot_types)
        self.cta = tuple(cta)
        self.dynamic_smem = dynamic_smem
        offsets: list[int] = []
        layout = ""
        size = 0
        for dtype in self.slot_types:
            width = SLOT_ITEMSIZE[dtype]
            padding = -size % width
            layout += "x" * padding + SLOT_STRUCT_CODE[dtype]
            size += padding
            offsets.append(size)
            size += width
        # Offsets within the parameter values; they start 8-aligned right after the config.
        self.offsets = tuple(offsets)
        self.size = size
        self._struct = struct.Struct("<" + CONFIG_FORMAT + layout)
        self._buffer = (ctypes.c_uint64 * (-(-(CONFIG_SIZE + size) // 8)))()
        base = ctypes.addressof(self._buffer) + CONFIG_SIZE
        self.pointers = (ctypes.c_void_p * max(1, len(offsets)))(*(base + o for o in offsets))
        # The three objects handed to cuLaunchKernelEx (kernelParams is NULL without parameters).
        self.config = self._buffer
        self.kernel_params = self.pointers if offsets else None
        self.write = partial(self._struct.pack_into, self._buffer, 0)

    def fill(self, grid: Sequence[int], stream: int, values: Sequence[Any]) -> None:
        """Write one launch: grid ``(x, y, z)``, the stream handle and the slot values."""
        self.write(*grid, *self.cta, self.dynamic_smem, stream, *values)

    def __bytes__(self) -> bytes:
        """The parameter values as last written (what the kernel reads)."""
        return ctypes.string_at(ctypes.addressof(self._buffer) + CONFIG_SIZE, self.size)
