"""Timing events and an L2 flush through the CUDA driver (ctypes on ``libcuda.so.1``).

phobos.launch's driver creates its events without timing, so the tuner binds the
few calls it needs itself: the same calls whatever library made the arrays.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_ubyte, c_uint, c_void_p

_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38
_CU_EVENT_DEFAULT = 0

_SIGNATURES = {
    "cuGetErrorName": (c_int, POINTER(c_char_p)),
    "cuCtxGetDevice": (POINTER(c_int),),
    "cuDeviceGetAttribute": (POINTER(c_int), c_int, c_int),
    "cuEventCreate": (POINTER(c_void_p), c_uint),
    "cuEventRecord": (c_void_p, c_void_p),
    "cuEventSynchronize": (c_void_p,),
    "cuEventDestroy_v2": (c_void_p,),
    "cuStreamSynchronize": (c_void_p,),
    "cuMemAlloc_v2": (POINTER(ctypes.c_uint64), c_size_t),
    "cuMemFree_v2": (ctypes.c_uint64,),
    "cuMemsetD8Async": (ctypes.c_uint64, c_ubyte, c_size_t, c_void_p),
}
_ELAPSED = ("cuEventElapsedTime_v2", "cuEventElapsedTime")


class CudaTiming:
    """Timed events, stream synchronisation and a scratch buffer, in the current context."""

    def __init__(self, library: str = "libcuda.so.1") -> None:
        lib = ctypes.CDLL(library)
        self._fn = {}
        for name, argtypes in _SIGNATURES.items():
            self._fn[name] = _bind(lib, name, argtypes)
        for name in _ELAPSED:
            if hasattr(lib, name):
                self._fn["elapsed"] = _bind(lib, name, (POINTER(c_float), c_void_p, c_void_p))
                break

    def _call(self, name: str, *args: object) -> None:
        code = self._fn[name](*args)
        if code:
            text = c_char_p()
            self._fn["cuGetErrorName"](code, byref(text))
            raise RuntimeError(f"{name} failed: {(text.value or b'CUDA error').decode()} ({code})")

    def l2_bytes(self) -> int:
        device, size = c_int(), c_int()
        self._call("cuCtxGetDevice", byref(device))
        self._call("cuDeviceGetAttribute", byref(size), _CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device)
        return size.value

    def event(self) -> int:
        handle = c_void_p()
        self._call("cuEventCreate", byref(handle), _CU_EVENT_DEFAULT)
        return handle.value or 0

    def record(self, event: int, stream: int) -> None:
        self._call("cuEventRecord", event, stream or None)

    def elapsed_ms(self, start: int, end: int) -> float:
        self._call("cuEventSynchronize", end)
        ms = c_float()
        self._call("elapsed", byref(ms), start, end)
        return ms.value

    def destroy(self, event: int) -> None:
        self._call("cuEventDestroy_v2", event)

    def synchronize(self, stream: int) -> None:
        self._call("cuStreamSynchronize", stream or None)

    def alloc(self, nbytes: int) -> int:
        pointer = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", byref(pointer), nbytes)
        return pointer.value

    def free(self, pointer: int) -> None:
        self._call("cuMemFree_v2", pointer)

    def memset(self, pointer: int, nbytes: int, stream: int) -> None:
        self._call("cuMemsetD8Async", pointer, 0, nbytes, stream or None)


def _bind(lib: ctypes.CDLL, name: str, argtypes: tuple) -> ctypes._CFuncPtr:
    fn = getattr(lib, name)
    fn.argtypes = argtypes
    fn.restype = c_int
    return fn
