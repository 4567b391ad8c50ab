"""The CUDA driver, through ctypes on ``libcuda.so.1``: the few calls a launch needs.

Every call is checked; a failure becomes a ``CudaError`` carrying the driver's name
for the code (``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``) and its description.  Handles
(contexts, modules, functions, streams, events) travel as plain ints.

The one exception is ``launch``, the bare ``cuLaunchKernelEx``: it is called on every
launch, so it takes ctypes objects built once (no ``argtypes`` to convert through,
which costs more than the rest of a launch's Python) and returns the CUresult for
the caller to check.  ``launch_entry`` is the same function's address, which the
native fast path (native.py) calls from C.

The rest of the launcher talks to the driver only through the ``Driver`` protocol
below, so tests can stand a fake in for it on a machine without a GPU.  The few calls
phobos-autotune times variants with (timed events, a stream's synchronisation, a
scratch buffer for flushing L2) are here too: this is the project's one binding.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import (
    POINTER,
    byref,
    c_char_p,
    c_float,
    c_int,
    c_size_t,
    c_ubyte,
    c_uint,
    c_uint64,
    c_void_p,
)
from typing import Any, Protocol

from phobos.launch.errors import CudaError, DriverNotFound

# Result codes the launcher reacts to (cuda.h).
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_INVALID_IMAGE = 200
CUDA_ERROR_NO_BINARY_FOR_GPU = 209
CUDA_ERROR_INVALID_PTX = 218
CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222
CUDA_ERROR_NOT_FOUND = 500

# Enumerators used below (cuda.h).
_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
_ATTR_COMPUTE_CAPABILITY_MAJOR = 75
_ATTR_COMPUTE_CAPABILITY_MINOR = 76
_ATTR_L2_CACHE_SIZE = 38
_FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0
_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
POINTER_ATTR_DEVICE_ORDINAL = 9
_JIT_ERROR_LOG_BUFFER = 5
_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_EVENT_DISABLE_TIMING = 0x2
_JIT_LOG_BYTES = 16384


class Driver(Protocol):
    """What the launcher asks of the CUDA driver (``CudaDriver``, or a fake in tests)."""

    def driver_version(self) -> int: ...
    def error(self, call: str, code: int, detail: str = "") -> CudaError: ...
    def primary_context(self, device: int) -> int: ...
    def current_context(self) -> int: ...
    def set_current_context(self, context: int) -> None: ...
    def compute_capability(self, device: int) -> tuple[int, int]: ...
    def device_name(self, device: int) -> str: ...
    def max_shared_memory_per_block(self, device: int) -> int: ...
    def load_module(self, image: bytes) -> int: ...
    def get_function(self, module: int, name: str) -> int: ...
    def max_threads_per_block(self, function: int) -> int: ...
    def set_max_dynamic_shared_memory(self, function: int, nbytes: int) -> None: ...
    def pointer_device(self, pointer: int) -> int: ...
    def create_event(self) -> int: ...
    def record_event(self, event: int, stream: int) -> None: ...
    def stream_wait_event(self, stream: int, event: int) -> None: ...
    def launch(self, config: Any, function: Any, kernel_params: Any, extra: None) -> int:
        """``cuLaunchKernelEx``: a ``LaunchBlock``'s config and params, a ``c_void_p`` function."""
        ...

    # The addresses of C functions with cuLaunchKernelEx's and cuPointerGetAttribute's
    # signatures, called by the native fast path (native.py); None where there are none.
    launch_entry: int | None
    pointer_attribute_entry: int | None

    def synchronize(self) -> None: ...

    def encode_tensor_map(
        self,
        data_type: int,
        pointer: int,
        dims: tuple[int, ...],
        strides: tuple[int, ...],
        box: tuple[int, ...],
        swizzle: int,
    ) -> bytes:
        """``cuTensorMapEncodeTiled``: a TMA descriptor (128 bytes) of the tensor at ``pointer``
        (``dims`` innermost first, ``strides`` in bytes of the outer axes) for ``box``."""
        ...


_SIGNATURES = {
    "cuInit": (c_uint,),
    "cuDriverGetVersion": (POINTER(c_int),),
    "cuGetErrorName": (c_int, POINTER(c_char_p)),
    "cuGetErrorString": (c_int, POINTER(c_char_p)),
    "cuDeviceGet": (POINTER(c_int), c_int),
    "cuDeviceGetAttribute": (POINTER(c_int), c_int, c_int),
    "cuDeviceGetName": (c_char_p, c_int, c_int),
    "cuDevicePrimaryCtxRetain": (POINTER(c_void_p), c_int),
    "cuCtxGetCurrent": (POINTER(c_void_p),),
    "cuCtxSetCurrent": (c_void_p,),
    "cuCtxSynchronize": (),
    "cuModuleLoadDataEx": (
        POINTER(c_void_p),
        c_void_p,
        c_uint,
        POINTER(c_int),
        POINTER(c_void_p),
    ),
    "cuModuleGetFunction": (POINTER(c_void_p), c_void_p, c_char_p),
    "cuFuncGetAttribute": (POINTER(c_int), c_int, c_void_p),
    "cuFuncSetAttribute": (c_void_p, c_int, c_int),
    "cuPointerGetAttribute": (c_void_p, c_int, c_uint64),
    "cuEventCreate": (POINTER(c_void_p), c_uint),
    "cuEventRecord": (c_void_p, c_void_p),
    "cuStreamWaitEvent": (c_void_p, c_void_p, c_uint),
    # Timing (phobos-autotune).
    "cuCtxGetDevice": (POINTER(c_int),),
    "cuEventSynchronize": (c_void_p,),
    "cuEventDestroy_v2": (c_void_p,),
    "cuStreamSynchronize": (c_void_p,),
    "cuMemAlloc_v2": (POINTER(c_uint64), c_size_t),
    "cuMemFree_v2": (c_uint64,),
    "cuMemsetD8Async": (c_uint64, c_ubyte, c_size_t, c_void_p),
    # TMA descriptors: out, data type, rank, address, dims, strides, box, element strides,
    # interleave, swizzle, L2 promotion, out-of-bounds fill.
    "cuTensorMapEncodeTiled": (
        c_void_p,
        c_int,
        c_uint,
        c_void_p,
        POINTER(c_uint64),
        POINTER(c_uint64),
        POINTER(c_uint),
        POINTER(c_uint),
        c_int,
        c_int,
        c_int,
        c_int,
    ),
}
_SINCE_CUDA_12 = ("cuTensorMapEncodeTiled",)
TENSOR_MAP_BYTES = 128
_L2_PROMOTION_256B = 3  # CU_TENSOR_MAP_L2_PROMOTION_L2_256B
_ELAPSED = ("cuEventElapsedTime_v2", "cuEventElapsedTime")  # the first this driver has


class CudaDriver:
    """``libcuda.so.1`` through ctypes; every call checked."""

    def __init__(self, library: str = "libcuda.so.1") -> None:
        try:
            lib = ctypes.CDLL(library)
        except OSError as exc:
            raise DriverNotFound(
                f"{exc}; no NVIDIA driver is installed here (the launcher needs a GPU)"
            ) from None
        self._fn = {}
        elapsed = next(name for name in _ELAPSED if hasattr(lib, name))
        signatures = {**_SIGNATURES, elapsed: (POINTER(c_float), c_void_p, c_void_p)}
        for name, argtypes in signatures.items():
            if name in _SINCE_CUDA_12 and not hasattr(lib, name):
                continue  # an older driver: no TMA descriptors (and no sm_90 code to use them)
            fn = getattr(lib, name)
            fn.argtypes = argtypes
            fn.restype = c_int
            self._fn["cuEventElapsedTime" if name == elapsed else name] = fn
        try:
            self.launch = lib.cuLaunchKernelEx
        except AttributeError:
            raise DriverNotFound(
                f"{library} has no cuLaunchKernelEx: the NVIDIA driver is older than CUDA 11.8 "
                "(R520); update the driver"
            ) from None
        self.launch.restype = c_int
        self.launch_entry = ctypes.cast(self.launch, c_void_p).value
        pointer_attribute = self._fn["cuPointerGetAttribute"]
        self.pointer_attribute_entry = ctypes.cast(pointer_attribute, c_void_p).value
        self._get_current = self._fn["cuCtxGetCurrent"]
        self._context_out = threading.local()  # per thread: (c_void_p, pointer to it)
        self._call("cuInit", 0)

    def _call(self, name: str, *args: object) -> None:
        code = self._fn[name](*args)
        if code:
            raise self.error(name, code)

    def _get(self, kind: type, name: str, *args: object) -> int | float:
        """The value a call writes through its first argument, a pointer to a ``kind``."""
        out = kind()
        self._call(name, byref(out), *args)
        return out.value or 0

    def error(self, call: str, code: int, detail: str = "") -> CudaError:
        """The ``CudaError`` for ``code`` returned by ``call``, with the driver's words for it."""
        name = c_char_p()
        text = c_char_p()
        self._fn["cuGetErrorName"](code, byref(name))
        self._fn["cuGetErrorString"](code, byref(text))
        message = (text.value or b"unknown error").decode()
        if detail:
            message = f"{message}\n{detail}"
        return CudaError(call, code, (name.value or b"CUDA_ERROR_%d" % code).decode(), message)

    def driver_version(self) -> int:
        return self._get(c_int, "cuDriverGetVersion")

    def primary_context(self, device: int) -> int:
        return self._get(
            c_void_p, "cuDevicePrimaryCtxRetain", self._get(c_int, "cuDeviceGet", device)
        )

    def current_context(self) -> int:
        """The calling thread's current context (0 for none); asked on every launch, so lean."""
        try:
            out, pointer = self._context_out.slot
        except AttributeError:
            out = c_void_p()
            out, pointer = self._context_out.slot = (out, ctypes.pointer(out))
        code = self._get_current(pointer)
        if code:
            raise self.error("cuCtxGetCurrent", code)
        return out.value or 0

    def set_current_context(self, context: int) -> None:
        self._call("cuCtxSetCurrent", context or None)

    def _device_attribute(self, device: int, attribute: int) -> int:
        return self._get(c_int, "cuDeviceGetAttribute", attribute, device)

    def compute_capability(self, device: int) -> tuple[int, int]:
        return (
            self._device_attribute(device, _ATTR_COMPUTE_CAPABILITY_MAJOR),
            self._device_attribute(device, _ATTR_COMPUTE_CAPABILITY_MINOR),
        )

    def max_shared_memory_per_block(self, device: int) -> int:
        return self._device_attribute(device, _ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)

    def device_name(self, device: int) -> str:
        """The GPU's marketing name ("NVIDIA H200"): chips of one architecture differ in speed."""
        name = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", name, len(name), self._get(c_int, "cuDeviceGet", device))
        return name.value.decode(errors="replace")

    def load_module(self, image: bytes) -> int:
        """Load a cubin or a NUL-terminated PTX image into the current context.

        The JIT error log (PTX that does not compile) is appended to the error.
        """
        log = ctypes.create_string_buffer(_JIT_LOG_BYTES)
        options = (c_int * 2)(_JIT_ERROR_LOG_BUFFER, _JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        values = (c_void_p * 2)(ctypes.addressof(log), _JIT_LOG_BYTES)
        module = c_void_p()
        code = self._fn["cuModuleLoadDataEx"](byref(module), image, 2, options, values)
        if code:
            raise self.error("cuModuleLoadDataEx", code, log.value.decode(errors="replace"))
        return module.value or 0

    def get_function(self, module: int, name: str) -> int:
        return self._get(c_void_p, "cuModuleGetFunction", module, name.encode())

    def max_threads_per_block(self, function: int) -> int:
        return self._get(c_int, "cuFuncGetAttribute", _FUNC_ATTR_MAX_THREADS_PER_BLOCK, function)

    def set_max_dynamic_shared_memory(self, function: int, nbytes: int) -> None:
        self._call("cuFuncSetAttribute", function, _FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    def pointer_device(self, pointer: int) -> int:
        return self._get(c_int, "cuPointerGetAttribute", POINTER_ATTR_DEVICE_ORDINAL, pointer)

    def create_event(self, timed: bool = False) -> int:
        return self._get(c_void_p, "cuEventCreate", 0 if timed else _EVENT_DISABLE_TIMING)

    def record_event(self, event: int, stream: int) -> None:
        self._call("cuEventRecord", event, stream or None)

    def stream_wait_event(self, stream: int, event: int) -> None:
        self._call("cuStreamWaitEvent", stream or None, event, 0)

    def synchronize(self) -> None:
        self._call("cuCtxSynchronize")

    # Timing (phobos-autotune), in the current context.

    def current_device(self) -> int:
        return self._get(c_int, "cuCtxGetDevice")

    def l2_cache_bytes(self, device: int) -> int:
        return self._device_attribute(device, _ATTR_L2_CACHE_SIZE)

    def elapsed_ms(self, start: int, end: int) -> float:
        """The time between two timed events, once ``end`` has happened (it waits for it)."""
        self._call("cuEventSynchronize", end)
        return self._get(c_float, "cuEventElapsedTime", start, end)

    def destroy_event(self, event: int) -> None:
        self._call("cuEventDestroy_v2", event)

    def synchronize_stream(self, stream: int) -> None:
        self._call("cuStreamSynchronize", stream or None)

    def encode_tensor_map(
        self,
        data_type: int,
        pointer: int,
        dims: tuple[int, ...],
        strides: tuple[int, ...],
        box: tuple[int, ...],
        swizzle: int,
    ) -> bytes:
        if "cuTensorMapEncodeTiled" not in self._fn:
            raise CudaError(
                "cuTensorMapEncodeTiled",
                None,
                "CUDA_ERROR_NOT_SUPPORTED",
                "this NVIDIA driver makes no TMA descriptors (CUDA 12 and later do): update it",
            )
        rank = len(dims)
        out = (c_ubyte * TENSOR_MAP_BYTES)()
        self._call(
            "cuTensorMapEncodeTiled",
            out,
            data_type,
            rank,
            c_void_p(pointer),
            (c_uint64 * rank)(*dims),
            (c_uint64 * max(1, rank - 1))(*strides),
            (c_uint * rank)(*box),
            (c_uint * rank)(*([1] * rank)),
            0,  # no interleave
            swizzle,
            _L2_PROMOTION_256B,
            0,  # elements outside the tensor are zeros
        )
        return bytes(out)

    def allocate(self, nbytes: int) -> int:
        return self._get(c_uint64, "cuMemAlloc_v2", nbytes)

    def free(self, pointer: int) -> None:
        self._call("cuMemFree_v2", pointer)

    def memset_async(self, pointer: int, nbytes: int, stream: int) -> None:
        """Zero ``nbytes`` at ``pointer``, queued on ``stream``."""
        self._call("cuMemsetD8Async", pointer, 0, nbytes, stream or None)


_shared: CudaDriver | None = None
_shared_lock = threading.Lock()


def shared_driver() -> CudaDriver:
    """The process's one ``CudaDriver``, loaded (and ``cuInit`` called) on first use."""
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = CudaDriver()
    return _shared
