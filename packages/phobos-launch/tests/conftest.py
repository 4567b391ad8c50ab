"""Stand-ins for the CUDA driver and for GPU arrays, so every launch path runs without a GPU."""

from __future__ import annotations

import copy
import ctypes
import struct
from typing import Any

import pytest

from phobos.launch import CudaError, LoadedKernel, load_kernel
from phobos.launch.table import FastLaunch

CUDA_ERROR_INVALID_HANDLE = 400

# cuLaunchKernelEx's and cuPointerGetAttribute's C signatures, for the fake's entry points that
# the native fast path calls.
LAUNCH_ENTRY = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)
POINTER_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64)

SAXPY = {
    "format_version": 1,
    "kernel": "saxpy",
    "entry": "saxpy_v0",
    "arch": "sm_90",
    "index_width": 32,
    "block": [128, 1, 1],
    "dynamic_smem": 0,
    "static_smem": 0,
    "values": {"BLOCK": 256},
    "tensors": [
        {"name": "x", "dtype": "f32", "dims": ["N"], "read": True, "written": False,
         "align": 16, "unit_stride": True},
        {"name": "y", "dtype": "f32", "dims": ["N"], "read": True, "written": False,
         "align": 16, "unit_stride": True},
        {"name": "out", "dtype": "f32", "dims": ["N"], "read": False, "written": True,
         "align": 16, "unit_stride": True},
    ],
    "scalars": [{"name": "alpha", "dtype": "f32"}],
    "slots": [
        {"kind": "pointer", "type": "u64", "param": "x", "axis": None},
        {"kind": "pointer", "type": "u64", "param": "y", "axis": None},
        {"kind": "pointer", "type": "u64", "param": "out", "axis": None},
        {"kind": "extent", "type": "i32", "param": "N", "axis": None},
        {"kind": "scalar", "type": "f32", "param": "alpha", "axis": None},
    ],
    "params": ["x", "y", "out", "alpha"],
    "source_file": "saxpy.ph",
}  # fmt: skip

# scale(a: tensor<f16>[M, K], b: tensor<f16>[K, 64], c: tensor<f32>[M, 64], s: f16, n: i64, on: bool)
SCALE = {
    "format_version": 1,
    "kernel": "scale",
    "entry": "scale_v0",
    "arch": "sm_80",
    "index_width": 64,
    "block": [64, 2, 1],
    "dynamic_smem": 65536,
    "static_smem": 1024,
    "values": {"BM": 64},
    "tensors": [
        {"name": "a", "dtype": "f16", "dims": ["M", "K"], "read": True, "written": False},
        {"name": "b", "dtype": "f16", "dims": ["K", 64], "read": True, "written": False},
        {"name": "c", "dtype": "f32", "dims": ["M", 64], "read": False, "written": True},
    ],
    "scalars": [{"name": "s", "dtype": "f16"}, {"name": "n", "dtype": "i64"},
                {"name": "on", "dtype": "bool"}],
    "slots": [
        {"kind": "pointer", "type": "u64", "param": "a"},
        {"kind": "extent", "type": "i64", "param": "M"},
        {"kind": "stride", "type": "i64", "param": "a", "axis": 0},
        {"kind": "stride", "type": "i64", "param": "a", "axis": 1},
        {"kind": "pointer", "type": "u64", "param": "b"},
        {"kind": "scalar", "type": "f16", "param": "s"},
        {"kind": "pointer", "type": "u64", "param": "c"},
        {"kind": "extent", "type": "i64", "param": "K"},
        {"kind": "stride", "type": "i64", "param": "c", "axis": 0},
        {"kind": "scalar", "type": "i64", "param": "n"},
        {"kind": "scalar", "type": "bool", "param": "on"},
    ],
    "params": ["a", "b", "c", "s", "n", "on"],
}  # fmt: skip


class FakeDriver:
    """Records what the launcher asks of the driver; GPUs, limits and failures are settable.

    With ``native`` (the default) it offers a C entry point, so launches of torch
    tensors take the native fast path as on a real driver; without it, the Python one.
    """

    def __init__(self, native: bool = True) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.launches: list[dict[str, Any]] = []
        self.pointer_devices: dict[int, int] = {}
        self.pointer_queries = 0  # how often a pointer's GPU was asked, from Python or C
        self.context = 0
        self.max_threads = 1024
        self.max_smem = 232448
        self.capability = (9, 0)
        self.version = 13000
        self.refuse: dict[str, int] = {}  # "cubin" / "ptx" -> CUDA error code
        self.modules: list[bytes] = []
        self.events = 0
        self.function_contexts: dict[int, int] = {}  # function -> the context it was loaded in
        self.refuse_launch = 0  # a CUDA error code every launch returns
        self._entry = LAUNCH_ENTRY(self._launch_from_c)
        self._pointer_entry = POINTER_ENTRY(self._pointer_attribute_from_c)
        self.launch_entry = ctypes.cast(self._entry, ctypes.c_void_p).value if native else None
        self.pointer_attribute_entry = (
            ctypes.cast(self._pointer_entry, ctypes.c_void_p).value if native else None
        )

    def driver_version(self) -> int:
        return self.version

    def error(self, call: str, code: int, detail: str = "") -> CudaError:
        return CudaError(call, code, f"CUDA_ERROR_{code}", detail or f"error {code}")

    def primary_context(self, device: int) -> int:
        self.calls.append(("primary_context", device))
        return 0xC0 + device

    def current_context(self) -> int:
        return self.context

    def set_current_context(self, context: int) -> None:
        self.calls.append(("set_current_context", context))
        self.context = context

    def compute_capability(self, device: int) -> tuple[int, int]:
        return self.capability

    def device_name(self, device: int) -> str:
        return f"Fake GPU {device}"

    def max_shared_memory_per_block(self, device: int) -> int:
        return self.max_smem

    def load_module(self, image: bytes) -> int:
        kind = "ptx" if image.endswith(b"\0") else "cubin"
        self.calls.append(("load_module", kind, self.context))
        if kind in self.refuse:
            raise CudaError(
                "cuModuleLoadDataEx", self.refuse[kind], f"CODE_{self.refuse[kind]}", ""
            )
        self.modules.append(image)
        return 0x500 + len(self.modules)

    def get_function(self, module: int, name: str) -> int:
        self.calls.append(("get_function", module, name))
        if name == "missing":
            raise CudaError("cuModuleGetFunction", 500, "CUDA_ERROR_NOT_FOUND", "named symbol")
        self.function_contexts[0xF00 + module] = self.context
        return 0xF00 + module

    def max_threads_per_block(self, function: int) -> int:
        return self.max_threads

    def set_max_dynamic_shared_memory(self, function: int, nbytes: int) -> None:
        self.calls.append(("set_max_dynamic_shared_memory", function, nbytes))

    def pointer_device(self, pointer: int) -> int:
        self.pointer_queries += 1
        if pointer in self.pointer_devices:
            return self.pointer_devices[pointer]
        if pointer < 0x1000:
            raise CudaError("cuPointerGetAttribute", 1, "CUDA_ERROR_INVALID_VALUE", "invalid")
        return 0

    def _pointer_attribute_from_c(self, out, attribute, pointer) -> int:
        """cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) as the native path calls it."""
        assert attribute == 9
        try:
            ctypes.c_int.from_address(out).value = self.pointer_device(pointer)
        except CudaError as exc:
            return exc.code
        return 0

    def create_event(self) -> int:
        self.events += 1
        return 0xE0 + self.events

    def record_event(self, event: int, stream: int) -> None:
        self.calls.append(("record_event", event, stream))

    def stream_wait_event(self, stream: int, event: int) -> None:
        self.calls.append(("stream_wait_event", stream, event))

    def launch(self, config, function, kernel_params, extra) -> int:
        """cuLaunchKernelEx as the generated Python calls it: ctypes objects."""
        params = None if kernel_params is None else ctypes.addressof(kernel_params)
        return self._launch(bytes(config), function.value, params, "python")

    def _launch_from_c(self, config, function, kernel_params, extra) -> int:
        """cuLaunchKernelEx as the native fast path calls it: addresses."""
        return self._launch(ctypes.string_at(config, 40), function, kernel_params, "native")

    def _launch(self, config: bytes, handle: int, params: int | None, caller: str) -> int:
        """The driver's behaviour: refused when another context is current."""
        owner = self.function_contexts.get(handle)
        if self.context not in (0, owner):
            return CUDA_ERROR_INVALID_HANDLE
        if self.refuse_launch:
            return self.refuse_launch
        grid_x, grid_y, grid_z, *cta, smem, stream = struct.unpack_from("<3I3II4xQ", config)
        self.launches.append(
            {
                "function": handle,
                "grid": (grid_x, grid_y, grid_z),
                "block": tuple(cta),
                "smem": smem,
                "stream": stream,
                "params": params,
                "context": self.context or owner,
                "caller": caller,
            }
        )
        return 0

    def synchronize(self) -> None:
        pass

    def encode_tensor_map(self, data_type, pointer, dims, strides, box, swizzle) -> bytes:
        """A TMA descriptor: the fields it was made from, packed (the real one is opaque)."""
        self.calls.append(("encode_tensor_map", data_type, pointer, dims, strides, box, swizzle))
        fields = struct.pack("<iQ2Q1Q2Ii", data_type, pointer, *dims, *strides, *box, swizzle)
        return fields.ljust(128, b"\0")


def fast_launch(
    kernel: LoadedKernel, args: list[Any], device: int = 0, native: bool = False
) -> FastLaunch | None:
    """The fast path ``kernel`` would make for the signature of ``args`` on ``device``.

    ``native``: the C one (native.py; None without it), else the generated Python.
    """
    return kernel.fast_path(args, device, native)


class CudaArray:
    """Any array library's GPU array, seen only through ``__cuda_array_interface__``."""

    def __init__(
        self,
        shape: tuple[int, ...],
        typestr: str = "<f4",
        ptr: int = 0x7F0000000000,
        strides: tuple[int, ...] | None = None,
        readonly: bool = False,
        stream: int | None = None,
        version: int = 3,
    ) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": strides,
            "version": version,
        }
        if stream is not None:
            self.__cuda_array_interface__["stream"] = stream


class FakeTorchDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


TORCH_DTYPES = {
    name: FakeTorchDtype(name) for name in ("float32", "float16", "bfloat16", "int32", "int64")
}


class Tensor:
    """Looks like a torch tensor to the launcher (its type's module is ``torch``)."""

    __module__ = "torch"

    def __init__(self, shape, dtype="float32", ptr=0x7F0000000000, strides=None, device=0):
        self.shape = tuple(shape)
        self.dtype = TORCH_DTYPES[dtype]
        self._ptr = ptr
        self._strides = strides
        self._device = device
        self.is_cuda = device >= 0
        self.device = f"cuda:{device}" if device >= 0 else "cpu"

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        if self._strides is not None:
            return self._strides
        strides, step = [], 1
        for n in reversed(self.shape):
            strides.append(step)
            step *= n
        return tuple(reversed(strides))

    def get_device(self) -> int:
        return self._device

    def is_contiguous(self) -> bool:
        """torch's rule: no elements, or every axis longer than 1 at its row-major stride."""
        if 0 in self.shape:
            return True
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.stride())):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


class HostArray:
    """A numpy-like array in host memory (``__array_interface__``, no CUDA interface)."""

    __array_interface__: dict[str, Any] = {}  # noqa: RUF012

    def __init__(self, shape: tuple[int, ...] = (), typestr: str = "<f4", ptr: int = 0x5000):
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False)}


@pytest.fixture
def driver() -> FakeDriver:
    return FakeDriver()


@pytest.fixture
def contract() -> dict[str, Any]:
    return copy.deepcopy(SAXPY)


@pytest.fixture
def scale_contract() -> dict[str, Any]:
    return copy.deepcopy(SCALE)


@pytest.fixture
def saxpy(driver, contract):
    return load_kernel(contract, cubin=b"CUBIN", driver=driver)


@pytest.fixture
def fakes():
    """The fake array classes (tests build arrays of the shapes they need)."""

    class Fakes:
        cuda_array = CudaArray
        tensor = Tensor
        host_array = HostArray

    return Fakes
