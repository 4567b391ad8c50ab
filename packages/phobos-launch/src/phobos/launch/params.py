"""The parameter block: the bytes ``cuLaunchKernel`` reads the kernel's parameters from.

It is one buffer holding every slot's value at its natural alignment, and the
``void**`` array pointing at each value.  Both are built once; a launch rewrites the
values in place with a single ``struct.pack_into``, so the hot path allocates no
ctypes objects.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from functools import partial

from phobos.launch.dtypes import ITEMSIZE, STRUCT_CODE


class ParameterBlock:
    """Slot values of one kernel's C parameters, packed where the driver reads them."""

    def __init__(self, slot_types: Sequence[str]) -> None:
        self.slot_types = tuple(slot_types)
        offsets: list[int] = []
        layout = "<"
        size = 0
        for dtype in self.slot_types:
            width = ITEMSIZE[dtype]
            padding = -size % width
            layout += "x" * padding + STRUCT_CODE[dtype]
            size += padding
            offsets.append(size)
            size += width
        self.offsets = tuple(offsets)
        self.size = size
        self._struct = struct.Struct(layout)
        self._buffer = (ctypes.c_uint64 * max(1, -(-size // 8)))()
        base = ctypes.addressof(self._buffer)
        self.pointers = (ctypes.c_void_p * max(1, len(offsets)))(*(base + o for o in offsets))
        # The ``void**`` argument of ``cuLaunchKernel`` (NULL for a kernel without parameters).
        self.address = ctypes.addressof(self.pointers) if offsets else None
        # ``write(*values)`` packs every slot value in slot order (C-level, no Python frame).
        self.write = partial(self._struct.pack_into, self._buffer, 0)

    def __bytes__(self) -> bytes:
        return ctypes.string_at(ctypes.addressof(self._buffer), self.size)
