"""The few array operations tuning needs, done with each array's own library.

Snapshot, restore, poison and compare run where the array lives: numpy on the
host, torch and CuPy on the GPU (so a large output is never copied to the host).
Numba device arrays go through host copies.  ``ops_for(arg)`` gives the
operations for one argument, or None for a scalar.

Poison is a bit pattern, written and recognised through an integer view of the
array, so "this element still holds the poison" is exact: two patterns per dtype
(``poison_patterns``), and an element that holds the first after one run and the
second after a run from the second was never written (a variant writes the same
value both times, whatever the poison).
"""

from __future__ import annotations

import math
import sys
from typing import Any

from phobos.autotune.compare import Mismatch, compare, unravel
from phobos.launch import array_library

# numpy / torch dtype names → Phobos dtype names (for tolerances and poison).
_DTYPE_NAMES = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "bool": "bool",
    **{f"int{b}": f"i{b}" for b in (8, 16, 32, 64)},
    **{f"uint{b}": f"u{b}" for b in (8, 16, 32, 64)},
}
_FLOATS = ("f16", "bf16", "f32", "f64")


def dtype_name(array: Any) -> str:
    """The Phobos name of an array's dtype (``f32``), or the library's own name if unknown."""
    name = str(array.dtype).removeprefix("torch.")
    return _DTYPE_NAMES.get(name, name)


# Float layouts: (bits, mantissa bits).
_FLOAT_LAYOUTS = {"f16": (16, 10), "bf16": (16, 7), "f32": (32, 23), "f64": (64, 52)}


def poison_patterns(dtype: str) -> tuple[int, int] | None:
    """The two poison bit patterns of a Phobos dtype, as signed integers of its width; None
    for a dtype the tuner does not poison.

    Floats: quiet NaNs with a payload no arithmetic produces (f32 ``0x7FE5A5A5`` and
    ``0xFFDA5A5A``; a computed NaN is ``0x7FC00000``, ``0xFFC00000`` or ``0x7FFFFFFF``), so an
    unwritten element reads as NaN and a written NaN is not taken for poison.  Integers:
    every byte ``0xA5``, then every byte ``0x5A``.  Bools: False, then True (a bool byte
    holds nothing else).
    """
    if dtype in _FLOAT_LAYOUTS:
        bits, mantissa = _FLOAT_LAYOUTS[dtype]
        quiet = (((1 << (bits - 1 - mantissa)) - 1) << mantissa) | (1 << (mantissa - 1))
        payload = (1 << (mantissa - 1)) - 1
        first = quiet | (_bytes(0xA5, bits) & payload)
        second = (1 << (bits - 1)) | quiet | (_bytes(0x5A, bits) & payload)
        return _signed(first, bits), _signed(second, bits)
    if dtype[:1] in ("i", "u") and dtype[1:] in ("8", "16", "32", "64"):
        bits = int(dtype[1:])
        return _signed(_bytes(0xA5, bits), bits), _signed(_bytes(0x5A, bits), bits)
    if dtype == "bool":
        return 0, 1
    return None


def _bytes(byte: int, bits: int) -> int:
    return int.from_bytes(bytes([byte]) * (bits // 8), "little")


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def _bits_of(dtype: str) -> int:
    if dtype in _FLOAT_LAYOUTS:
        return _FLOAT_LAYOUTS[dtype][0]
    return 8 if dtype == "bool" else int(dtype[1:])


class _NumpyLike:
    """numpy and CuPy: one API (``xp`` is the module)."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp

    def snapshot(self, a: Any) -> Any:
        return a.copy()

    clone = snapshot

    def restore(self, dst: Any, src: Any) -> None:
        dst[...] = src

    def fill(self, a: Any, value: float | int) -> None:
        a.fill(value)

    def bits(self, a: Any, width: int) -> Any:
        """``a`` seen as signed integers of ``width`` bits (the same memory)."""
        return a.view(self.xp.dtype(f"int{width}"))

    def fill_bits(self, a: Any, width: int, pattern: int) -> None:
        """Every element of ``a`` set to the bit pattern ``pattern``."""
        self.fill(self.bits(a, width), pattern)

    def first(self, mask: Any) -> int:
        """The flat (C-order) index of the first true element of ``mask``."""
        return int(self.xp.argmax(mask.reshape(-1).astype(self.xp.int8)))

    def f64(self, a: Any) -> Any:
        return a.astype(self.xp.float64)

    def isnan(self, a: Any) -> Any:
        return self.xp.isnan(a)

    def isfinite(self, a: Any) -> Any:
        return self.xp.isfinite(a)

    def abs(self, a: Any) -> Any:
        return self.xp.abs(a)

    def where(self, cond: Any, a: Any, b: float) -> Any:
        return self.xp.where(cond, a, b)

    def count(self, a: Any) -> int:
        return int(self.xp.count_nonzero(a))

    def host(self, a: Any) -> Any:
        return a.get() if hasattr(a, "get") else a


class _Torch:
    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def snapshot(self, a: Any) -> Any:
        return a.clone()

    clone = snapshot

    def restore(self, dst: Any, src: Any) -> None:
        dst.copy_(src)

    def fill(self, a: Any, value: float | int) -> None:
        a.fill_(value)

    def bits(self, a: Any, width: int) -> Any:
        return a.view(getattr(self.torch, f"int{width}"))

    def fill_bits(self, a: Any, width: int, pattern: int) -> None:
        """Every element of ``a`` set to the bit pattern ``pattern``."""
        self.fill(self.bits(a, width), pattern)

    def first(self, mask: Any) -> int:
        return int(mask.reshape(-1).to(self.torch.int32).argmax())

    def f64(self, a: Any) -> Any:
        return a.to(self.torch.float64)

    def isnan(self, a: Any) -> Any:
        return self.torch.isnan(a)

    def isfinite(self, a: Any) -> Any:
        return self.torch.isfinite(a)

    def abs(self, a: Any) -> Any:
        return a.abs()

    def where(self, cond: Any, a: Any, b: float) -> Any:
        return self.torch.where(cond, a, b)

    def count(self, a: Any) -> int:
        return int(self.torch.count_nonzero(a))

    def host(self, a: Any) -> Any:
        return a.detach().cpu().numpy()


class _NumbaOnHost(_NumpyLike):
    """Numba device arrays: snapshots and comparisons on host copies (numpy)."""

    def __init__(self) -> None:
        import numpy

        super().__init__(numpy)

    def snapshot(self, a: Any) -> Any:
        return a.copy_to_host()

    def clone(self, a: Any) -> Any:
        from numba import cuda

        return cuda.to_device(a.copy_to_host())

    def restore(self, dst: Any, src: Any) -> None:
        dst.copy_to_device(src if hasattr(src, "__array_interface__") else src.copy_to_host())

    def fill_bits(self, a: Any, width: int, pattern: int) -> None:
        host = a.copy_to_host()
        super().bits(host, width).fill(pattern)
        a.copy_to_device(host)

    def bits(self, a: Any, width: int) -> Any:
        host = a if hasattr(a, "__array_interface__") else a.copy_to_host()
        return super().bits(host, width)


class ArrayOps:
    """The operations on one argument, with its library."""

    def __init__(self, impl: Any, dtype: str) -> None:
        self._impl = impl
        self.dtype = dtype

    def snapshot(self, a: Any) -> Any:
        """A private copy, for ``restore`` and as expected output."""
        return self._impl.snapshot(a)

    def clone(self, a: Any) -> Any:
        """A copy of the same kind as ``a`` (what a reference function is given)."""
        return self._impl.clone(a)

    def restore(self, dst: Any, src: Any) -> None:
        self._impl.restore(dst, src)

    def poison(self, a: Any, which: int = 0) -> None:
        """Fill ``a`` with poison pattern ``which`` (0 or 1), bit for bit."""
        patterns = poison_patterns(self.dtype)
        if patterns is None or not _size(a):
            return
        self._impl.fill_bits(a, _bits_of(self.dtype), patterns[which])

    def holds_poison(self, a: Any, which: int = 0) -> Any:
        """A mask (of ``a``'s library) of the elements that hold poison pattern ``which``;
        None for a dtype that is not poisoned or an empty array."""
        patterns = poison_patterns(self.dtype)
        if patterns is None or not _size(a):
            return None
        return self._impl.bits(a, _bits_of(self.dtype)) == patterns[which]

    def count(self, mask: Any) -> int:
        return self._impl.count(mask)

    def first_index(self, mask: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The index of the first true element of ``mask`` (of shape ``shape``)."""
        return unravel(self._impl.first(mask), shape)

    def compare(self, got: Any, expected: Any, tolerance: Any) -> Mismatch | None:
        impl = self._impl
        if isinstance(impl, _NumbaOnHost):
            got = got.copy_to_host()
            expected = (
                expected if hasattr(expected, "__array_interface__") else expected.copy_to_host()
            )
        if not _size(got):
            return None
        return compare(impl, got, expected, tuple(got.shape), tolerance)


def _size(a: Any) -> int:
    return math.prod(tuple(a.shape))


def ops_for(arg: Any) -> ArrayOps | None:
    """The operations for an array argument (numpy, torch, CuPy, Numba: which one is
    phobos-launch's adapter's call, ``array_library``); None for scalars."""
    library = array_library(arg)
    if library == "torch":
        return ArrayOps(_Torch(sys.modules["torch"]), dtype_name(arg))
    if library == "numba":
        return ArrayOps(_NumbaOnHost(), dtype_name(arg))
    if library in ("cupy", "numpy"):
        return ArrayOps(_NumpyLike(sys.modules[library]), dtype_name(arg))
    return None
