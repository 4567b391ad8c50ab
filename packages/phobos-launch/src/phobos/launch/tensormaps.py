"""TMA descriptors for a kernel's ``tensormap`` slots, made by the driver once per array layout.

A kernel that copies windows by TMA takes a descriptor (``CUtensorMap``, 128 bytes)
of the tensor for each box it copies: its address, extents, row stride, the box and
the swizzle.  ``cuTensorMapEncodeTiled`` makes one in about a microsecond, more than
the rest of a launch, so each is kept by (pointer, shape, strides) and a launch with
the arrays of the last one packs the same bytes again.  The variant was specialised
for rows on 16 bytes (the binder checked that), which is what a descriptor needs.
"""

from __future__ import annotations

from collections.abc import Callable

from phobos.launch.dtypes import ITEMSIZE
from phobos.launch.errors import CudaError, LaunchError

# CUtensorMapDataType and CUtensorMapSwizzle (cuda.h) of what the compiler copies by TMA.
DATA_TYPE = {"u16": 1, "i16": 1, "f16": 6, "bf16": 9}
SWIZZLE = {32: 1, 64: 2, 128: 3}
_KEPT = 64  # descriptors kept a slot (a new layout past that starts the set again)

Encoder = Callable[[int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...], int], bytes]


class TensorMaps:
    """The descriptors of one slot: tensor ``name`` of ``dtype`` copied in boxes of ``box``
    (an extent an axis, outermost first), through ``encode`` (the driver's
    ``encode_tensor_map``)."""

    def __init__(
        self, kernel: str, name: str, dtype: str, box: tuple[int, ...], encode: Encoder
    ) -> None:
        if dtype not in DATA_TYPE:
            raise LaunchError(f"{kernel}: {name}: no TMA descriptor for {dtype} elements")
        self.kernel, self.name, self.dtype, self.box = kernel, name, dtype, box
        self.swizzle = SWIZZLE[box[-1] * ITEMSIZE[dtype]]
        self.encode = encode
        self.kept: dict[tuple[int, tuple[int, ...], tuple[int, ...]], bytes] = {}

    def __call__(self, pointer: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> bytes:
        """The descriptor of the array at ``pointer`` (``strides`` in elements)."""
        key = (pointer, tuple(shape), tuple(strides))
        known = self.kept.get(key)
        if known is not None:
            return known
        where = f"{self.kernel}: {self.name}"
        if 0 in shape:
            raise LaunchError(
                f"{where}: an empty tensor (shape {tuple(shape)}) has no TMA descriptor; this "
                "variant copies it by TMA: launch through the kernel, which picks another"
            )
        itemsize = ITEMSIZE[self.dtype]
        dims = tuple(reversed(shape))
        row_bytes = tuple(s * itemsize for s in reversed(strides[:-1]))
        box = tuple(reversed(self.box))
        try:
            made = self.encode(DATA_TYPE[self.dtype], pointer, dims, row_bytes, box, self.swizzle)
        except CudaError as exc:
            raise LaunchError(
                f"{where}: the driver makes no TMA descriptor for shape {tuple(shape)} and "
                f"strides {tuple(strides)} (box {self.box}): {exc}"
            ) from None
        if len(self.kept) >= _KEPT:
            self.kept.clear()
        self.kept[key] = made
        return made
