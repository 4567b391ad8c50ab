"""The few array operations tuning needs, done with each array's own library.

Snapshot, restore, poison and compare run where the array lives: numpy on the
host, torch and CuPy on the GPU (so a large output is never copied to the host).
Numba device arrays go through host copies.  ``ops_for(arg)`` gives the
operations for one argument, or None for a scalar.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from phobos.autotune.compare import Mismatch, compare

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


def poison_value(dtype: str) -> float | int | None:
    """NaN for floats; for integers the value whose every byte is 0xA5; None for bool."""
    if dtype in _FLOATS:
        return math.nan
    if dtype[0] in "iu" and dtype[1:].isdigit():
        size = int(dtype[1:]) // 8
        return int.from_bytes(b"\xa5" * size, "little", signed=dtype[0] == "i")
    return None


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

    def fill(self, a: Any, value: float | int) -> None:
        host = a.copy_to_host()
        host.fill(value)
        a.copy_to_device(host)


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

    def poison(self, a: Any) -> None:
        value = poison_value(self.dtype)
        if value is not None and _size(a):
            self._impl.fill(a, value)

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
    """The operations for an array argument (numpy, torch, CuPy, Numba); None for scalars."""
    module = type(arg).__module__.partition(".")[0]
    if module == "torch":
        return ArrayOps(_Torch(sys.modules["torch"]), dtype_name(arg))
    if module == "cupy":
        return ArrayOps(_NumpyLike(sys.modules["cupy"]), dtype_name(arg))
    if module == "numba":
        return ArrayOps(_NumbaOnHost(), dtype_name(arg))
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(arg, numpy.ndarray):
        return ArrayOps(_NumpyLike(numpy), dtype_name(arg))
    return None
