"""The kernel loader: a contract plus its cubin (or PTX), loaded per device and launched.

``load_kernel`` reads the contract; the code is loaded into a device's primary
context (the one torch and CuPy use, so the kernel runs beside them) the first time
the kernel is launched on that device, or at once when ``device=`` is given.

A launch first tries ``try_launch``, the fast path made for the call signature, GPU
and thread of an earlier good launch (native.py in C where a C compiler is at hand, else
fastpath.py's generated Python, both from one table.py table).  When that cannot take
the arguments, ``launch`` binds them with the reference binder (which explains anything
wrong), makes the kernel's context current if another one is, launches, and makes the
fast path for next time.
"""

from __future__ import annotations

import contextlib
import ctypes
import struct
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from phobos.launch.arrays import ArrayFields
from phobos.launch.binder import ArgumentBinder, Binding, Plan
from phobos.launch.contract import LaunchContract, read_contract
from phobos.launch.driver import (
    CUDA_ERROR_INVALID_IMAGE,
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
    Driver,
    shared_driver,
)
from phobos.launch.errors import CudaError, LaunchError
from phobos.launch.fastpath import compile_fast_launch
from phobos.launch.grid import Grid, call_grid, grid_dims
from phobos.launch.native import native_launch
from phobos.launch.params import LaunchBlock
from phobos.launch.streams import StreamOrdering, stream_handle
from phobos.launch.table import FastLaunch, launch_table

_DEFAULT_DYNAMIC_SMEM = 48 * 1024  # above this a kernel must opt in (cuFuncSetAttribute)


class _OnDevice:
    """The kernel loaded on one GPU: its primary context and function handle."""

    __slots__ = ("context", "function", "handle")

    def __init__(self, context: int, function: int) -> None:
        self.context = context
        self.function = function
        self.handle = ctypes.c_void_p(function)  # what cuLaunchKernelEx is handed


def _no_fast_path(grid: Any, args: Sequence[Any], stream: Any) -> None:
    return None


def load_kernel(
    contract: str | Mapping[str, Any],
    *,
    cubin: bytes | None = None,
    ptx: str | None = None,
    device: int | None = None,
    driver: Driver | None = None,
) -> LoadedKernel:
    """A compiled kernel ready to launch.

    ``contract`` is the launch contract (JSON text or the parsed dict); ``cubin`` is
    preferred, ``ptx`` is the fallback (JIT-compiled by the driver).  With ``device``
    the kernel is loaded on that GPU now and only launches there; without it, it is
    loaded on each GPU the first time its arrays are there.  ``driver`` replaces the
    CUDA driver (tests pass a fake).
    """
    if cubin is None and ptx is None:
        raise ValueError("load_kernel needs the kernel's code: cubin= (preferred) or ptx=")
    kernel = LoadedKernel(read_contract(contract), cubin, ptx, device, driver)
    if device is not None:
        kernel.load_on(device)
    return kernel


class LoadedKernel:
    """One compiled kernel variant: bind and launch it on any GPU its arrays are on."""

    def __init__(
        self,
        contract: LaunchContract,
        cubin: bytes | None,
        ptx: str | None,
        device: int | None,
        driver: Driver | None,
    ) -> None:
        self.contract = contract
        self.name = contract.kernel
        self._cubin = cubin
        self._ptx = ptx
        self._pinned = device
        self._driver = driver
        self._binder = ArgumentBinder(contract, self._pointer_device, self._encode_tensor_map)
        self._slot_types = tuple(slot.type for slot in contract.slots)
        self._cta = contract.block
        self._dynamic_smem = contract.dynamic_smem
        self._devices: dict[int, _OnDevice] = {}
        self._load_lock = threading.Lock()
        self._per_thread = threading.local()
        self._ordering: StreamOrdering | None = None
        # Fast paths by (argument types, GPU, thread); each thread's latest; None: no fast path.
        self._fast_paths: dict[tuple[Any, ...], FastLaunch | None] = {}
        self._fast_by_thread: dict[int, FastLaunch] = {}
        # ``try_launch(grid, args, stream)``: the fast path of the latest good launch.  It
        # returns 0 when it launched; anything else means: call ``launch``, which explains.
        self.try_launch: FastLaunch = _no_fast_path

    def __repr__(self) -> str:
        return f"<LoadedKernel {self.name} ({self.contract.arch}, params {self.contract.params})>"

    @property
    def driver(self) -> Driver:
        if self._driver is None:
            self._driver = shared_driver()
        return self._driver

    def launch(
        self,
        grid: Grid,
        args: Sequence[Any],
        *,
        stream: Any = None,
        values: Mapping[str, int] | None = None,
        arrays: Sequence[ArrayFields | None] | None = None,
    ) -> None:
        """Check ``args`` against the contract and launch the kernel on ``grid``.

        ``grid`` is a tuple of 1 to 3 block counts or a function of ``meta`` (the
        contract's compile-time values, then ``values``, then the named extents).
        ``stream`` is a CUstream handle or a torch/CuPy stream; by default the array
        library's current stream.  ``arrays``: the arguments as ``read_arguments`` read
        them, for a caller that read them already (the launch then takes the reference
        path, reading nothing again).  Raises ``LaunchError`` (nothing launched) when an
        argument does not fit; this call is also the figure for host time per launch.
        """
        if values is None and arrays is None and self.try_launch(grid, args, stream) == 0:
            return
        self._launch_slowly(grid, args, stream, values, arrays)

    def _launch_slowly(
        self,
        grid: Grid,
        args: Sequence[Any],
        stream: Any,
        values: Mapping[str, int] | None,
        arrays: Sequence[ArrayFields | None] | None = None,
    ) -> None:
        """The reference path: bind and explain, switch contexts if needed, launch."""
        binder = self._binder
        plan = binder.plan(args)
        device, extents, slot_values, producers = binder.bind(args, plan, arrays)
        if device is None or self._pinned is not None:
            device = self._device_for(device)
        on_device = self._devices.get(device) or self._loaded(device)
        if callable(grid):
            grid = call_grid(self.name, grid, self._meta(extents, values))
        dims = grid_dims(self.name, grid)
        if dims is None:
            return
        handle = plan.current_stream(device) if stream is None else stream_handle(stream)
        if not 0 <= handle < 2**64:
            raise LaunchError(f"{self.name}: stream={handle} is not a CUstream handle")
        block = self._block()
        try:
            block.fill(dims, handle, slot_values)
        except (struct.error, OverflowError):
            raise LaunchError(binder.unfit_problem(slot_values)) from None
        self._launch_in_context(on_device, block, handle, producers)
        if values is None:
            self._use_fast_path(plan, args, device, on_device, block)

    def _launch_in_context(
        self, on_device: _OnDevice, block: LaunchBlock, stream: int, producers: Sequence[int]
    ) -> None:
        """Launch with the kernel's context current; a thread's other context is put back."""
        driver = self.driver
        context = on_device.context
        previous = driver.current_context()
        if previous != context:
            driver.set_current_context(context)
        try:
            if producers:
                self._stream_ordering().wait_for(context, stream, producers)
            code = driver.launch(block.config, on_device.handle, block.kernel_params, None)
            if code:
                raise driver.error("cuLaunchKernelEx", code)
        finally:
            # A thread with no context keeps ours, so its next launches need no switch.
            if previous not in (0, context):
                driver.set_current_context(previous)

    def _use_fast_path(
        self, plan: Plan, args: Sequence[Any], device: int, on_device: _OnDevice, block: LaunchBlock
    ) -> None:
        """Make this signature's fast path (made once) the next launch's first try."""
        thread = threading.get_ident()
        key = (tuple(map(type, args)), device, thread)
        if key not in self._fast_paths:
            self._fast_paths[key] = self._fast_path(plan, key[0], device, on_device, block)
        fast = self._fast_paths[key]
        if fast is not None:
            self._fast_by_thread[thread] = self.try_launch = fast

    def fast_path(
        self, args: Sequence[Any], device: int = 0, native: bool | None = None
    ) -> FastLaunch | None:
        """A fresh fast path for this thread's launches of ``args``'s signature on ``device``
        (``native``: only the C one; False: only the generated Python; None: as a launch
        makes it), or None; for tests and measurements (a launch makes and keeps its own)."""
        plan = self._binder.plan(args)
        with contextlib.suppress(LaunchError):
            self._binder.bind(args, plan)  # what a launch reads before it makes one
        types = tuple(map(type, args))
        return self._fast_path(plan, types, device, self._loaded(device), self._block(), native)

    def _fast_path(
        self,
        plan: Plan,
        types: tuple[type, ...],
        device: int,
        on_device: _OnDevice,
        block: LaunchBlock,
        native: bool | None = None,
    ) -> FastLaunch | None:
        table = launch_table(
            self._binder, plan, types, device, on_device.handle, block, self.driver,
            self._try_other_thread,
        )  # fmt: skip
        fast = None if table is None or native is False else native_launch(table)
        if table is not None and fast is None and native is not True:
            fast = compile_fast_launch(table, self.name)
        return fast

    def _try_other_thread(self, grid: Grid, args: Sequence[Any], stream: Any) -> int | None:
        """``try_launch`` from a thread other than the one whose fast path it is."""
        fast = self._fast_by_thread.get(threading.get_ident())
        return None if fast is None else fast(grid, args, stream)

    def bind(
        self, args: Sequence[Any], arrays: Sequence[ArrayFields | None] | None = None
    ) -> Binding:
        """Check ``args`` as a launch would, and say what the launch would use; launches nothing."""
        binding = self._binder.binding(args, arrays)
        if self._pinned is not None:
            self._device_for(binding.device)
        return binding

    def parameter_block(self) -> LaunchBlock:
        """This thread's launch block (what the last launch from this thread wrote)."""
        return self._block()

    def load_on(self, device: int) -> None:
        """Load the kernel on ``device`` now (launches load it on first use) and check it fits."""
        self._loaded(device)

    def _loaded(self, device: int) -> _OnDevice:
        with self._load_lock:
            loaded = self._devices.get(device)
            if loaded is None:
                loaded = self._devices[device] = self._load(device)
        return loaded

    def _device_for(self, device: int | None) -> int:
        if self._pinned is None:
            return 0 if device is None else device
        if device is not None and device != self._pinned:
            raise LaunchError(
                f"{self.name}: the arrays are on GPU {device} but the kernel was loaded for "
                f"GPU {self._pinned}"
            )
        return self._pinned

    def _meta(self, extents: Sequence[int], values: Mapping[str, int] | None) -> dict[str, int]:
        meta = dict(self.contract.values)
        if values:
            meta.update(values)
        meta.update(zip(self._binder.extent_names, extents))
        return meta

    def _block(self) -> LaunchBlock:
        local = self._per_thread
        try:
            return local.block
        except AttributeError:
            local.block = LaunchBlock(self._slot_types, self._cta, self._dynamic_smem)
            return local.block

    def _stream_ordering(self) -> StreamOrdering:
        if self._ordering is None:
            self._ordering = StreamOrdering(self.driver)
        return self._ordering

    def _pointer_device(self, pointer: int) -> int:
        return self.driver.pointer_device(pointer)

    def _encode_tensor_map(self, *descriptor: Any) -> bytes:
        return self.driver.encode_tensor_map(*descriptor)

    def _load(self, device: int) -> _OnDevice:
        driver = self.driver
        context = driver.primary_context(device)
        previous = driver.current_context()
        driver.set_current_context(context)
        try:
            function = self._function(device)
            self._check_fits(device, function)
        finally:
            driver.set_current_context(previous)
        return _OnDevice(context, function)

    def _function(self, device: int) -> int:
        module = self._module(device)
        try:
            return self.driver.get_function(module, self.contract.entry)
        except CudaError as exc:
            if exc.code != CUDA_ERROR_NOT_FOUND:
                raise
            raise LaunchError(
                f"{self.name}: the code has no kernel named {self.contract.entry!r} (the "
                "contract's entry); the contract and the cubin/PTX are from different builds"
            ) from None

    def _module(self, device: int) -> int:
        driver = self.driver
        cubin_error = None
        if self._cubin is not None:
            try:
                return driver.load_module(self._cubin)
            except CudaError as exc:
                if exc.code not in (CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_INVALID_IMAGE):
                    raise
                cubin_error = self._cubin_refused(device, exc)
                if self._ptx is None:
                    raise cubin_error from None
        try:
            return driver.load_module(self._ptx.encode() + b"\0")  # type: ignore[union-attr]
        except CudaError as exc:
            if exc.code != CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
                raise
            raise self._ptx_refused(exc, cubin_error) from None

    def _cubin_refused(self, device: int, exc: CudaError) -> CudaError:
        major, minor = self.driver.compute_capability(device)
        return CudaError(
            exc.call,
            exc.code,
            exc.name,
            f"the cubin of {self.name} was built for {self.contract.arch} but GPU {device} is "
            f"sm_{major}{minor} (compute capability {major}.{minor}); compile the kernel for "
            f"sm_{major}{minor}",
        )

    def _ptx_refused(self, exc: CudaError, cubin_error: CudaError | None) -> CudaError:
        version = self.driver.driver_version()
        detail = (
            f"the PTX of {self.name} came from a newer NVRTC than this driver supports (the "
            f"driver is CUDA {version // 1000}.{version % 1000 // 10}); ship the cubin "
            "(load_kernel(..., cubin=...)), which loads on older drivers, or update the driver"
        )
        if cubin_error is not None:
            detail += f"; the cubin was refused too: {cubin_error.detail}"
        return CudaError(exc.call, exc.code, exc.name, detail)

    def _check_fits(self, device: int, function: int) -> None:
        driver = self.driver
        threads = self._cta[0] * self._cta[1] * self._cta[2]
        most = driver.max_threads_per_block(function)
        if threads > most:
            raise LaunchError(
                f"{self.name}: the block has {threads} threads but the compiled kernel can run "
                f"at most {most} per block on GPU {device} (too many registers per thread)"
            )
        smem = self.contract.static_smem + self._dynamic_smem
        limit = driver.max_shared_memory_per_block(device)
        if smem > limit:
            raise LaunchError(
                f"{self.name} needs {smem} bytes of shared memory per block (static "
                f"{self.contract.static_smem} + dynamic {self._dynamic_smem}) but GPU {device} "
                f"allows {limit}"
            )
        if self._dynamic_smem > _DEFAULT_DYNAMIC_SMEM:
            driver.set_max_dynamic_shared_memory(function, self._dynamic_smem)
