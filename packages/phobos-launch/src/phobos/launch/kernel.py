"""The kernel loader: a contract plus its cubin (or PTX), loaded per device and launched.

``load_kernel`` reads the contract; the code is loaded into a device's primary
context (the one torch and CuPy use, so the kernel runs beside them) the first time
the kernel is launched on that device, or at once when ``device=`` is given.
``LoadedKernel.launch`` binds the arguments, picks the stream, writes the
parameter block in place and calls ``cuLaunchKernel``.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from phobos.launch.arrays import ArrayProtocolError
from phobos.launch.binder import ArgumentBinder, Binding
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
from phobos.launch.fastpath import compile_fast_binder
from phobos.launch.grid import MAX_GRID, Grid, call_grid, grid_dims
from phobos.launch.params import ParameterBlock
from phobos.launch.streams import StreamOrdering, stream_handle

_DEFAULT_DYNAMIC_SMEM = 48 * 1024  # above this a kernel must opt in (cuFuncSetAttribute)
# What the fast path may raise on arguments that the reference binder then explains.
_RETRY_SLOWLY = (struct.error, OverflowError, ArrayProtocolError)
_MAX_GRID_X = MAX_GRID[0]


class _OnDevice:
    """The kernel loaded on one GPU: its primary context and function handle."""

    __slots__ = ("context", "function")

    def __init__(self, context: int, function: int) -> None:
        self.context = context
        self.function = function


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
        self._binder = ArgumentBinder(contract, self._pointer_device)
        self._slot_types = tuple(slot.type for slot in contract.slots)
        self._cta = contract.block
        self._dynamic_smem = contract.dynamic_smem
        self._devices: dict[int, _OnDevice] = {}
        self._load_lock = threading.Lock()
        self._per_thread = threading.local()
        self._ordering: StreamOrdering | None = None
        # The fast path of the signature last launched; it checks the argument types itself.
        self._fast: Callable[..., Any] | None = None

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
    ) -> None:
        """Check ``args`` against the contract and launch the kernel on ``grid``.

        ``grid`` is a tuple of 1 to 3 block counts or a function of ``meta`` (the
        contract's compile-time values, then ``values``, then the named extents).
        ``stream`` is a CUstream handle or a torch/CuPy stream; by default the array
        library's current stream.  Raises ``LaunchError`` (nothing launched) when an
        argument does not fit; this call is also the figure for host time per launch.
        """
        block = self._block()
        bound = None
        fast = self._fast
        if fast is not None:
            try:
                bound = fast(args, block.write)
            except _RETRY_SLOWLY:
                bound = None
        if bound is None:
            bound = self._bind(args, block)
        device, extents, producers, plan = bound
        if device is None or self._pinned is not None:
            device = self._device_for(device)
        on_device = self._devices.get(device) or self._loaded(device)
        if callable(grid):
            grid = call_grid(self.name, grid, self._meta(extents, values))
        if (
            grid.__class__ is tuple
            and len(grid) == 1
            and grid[0].__class__ is int
            and 0 < grid[0] <= _MAX_GRID_X
        ):
            gx, gy, gz = grid[0], 1, 1
        else:
            dims = grid_dims(self.name, grid)
            if dims is None:
                return
            gx, gy, gz = dims
        handle = plan.current_stream(device) if stream is None else stream_handle(stream)

        driver = self._driver
        context = on_device.context
        previous = driver.current_context()
        if previous != context:
            driver.set_current_context(context)
        try:
            if producers:
                self._stream_ordering().wait_for(context, handle, producers)
            driver.launch_kernel(
                on_device.function,
                gx,
                gy,
                gz,
                *self._cta,
                self._dynamic_smem,
                handle,
                block.address,
            )
        finally:
            if previous != context:
                driver.set_current_context(previous)

    def _bind(self, args: Sequence[Any], block: ParameterBlock) -> tuple[Any, ...]:
        """Bind when the last fast path did not: this signature's fast path, else the reference."""
        plan = self._binder.plans.get(tuple(map(type, args)))
        if plan is not None and plan.fast is not None and plan.fast is not self._fast:
            try:
                bound = plan.fast(args, block.write)
            except _RETRY_SLOWLY:
                bound = None
            if bound is not None:
                self._fast = plan.fast
                return bound
        return self._bind_slowly(args, block)

    def _bind_slowly(self, args: Sequence[Any], block: ParameterBlock) -> tuple[Any, ...]:
        """The reference binder: explains a bad launch; compiles the fast path after a good one."""
        binder = self._binder
        plan = binder.plan(args)
        device, extents, slot_values, producers = binder.bind(args, plan)
        try:
            block.write(*slot_values)
        except (struct.error, OverflowError):
            raise LaunchError(binder.unfit_problem(slot_values)) from None
        if not plan.fast_compiled:
            plan.fast = compile_fast_binder(binder, plan, args)
            plan.fast_compiled = True
        if plan.fast is not None:
            self._fast = plan.fast
        return device, extents, producers, plan

    def bind(self, args: Sequence[Any]) -> Binding:
        """Check ``args`` as a launch would, and say what the launch would use; launches nothing."""
        binding = self._binder.binding(args)
        if self._pinned is not None:
            self._device_for(binding.device)
        return binding

    def parameter_block(self) -> ParameterBlock:
        """This thread's parameter block (what the last launch from this thread wrote)."""
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

    def _block(self) -> ParameterBlock:
        local = self._per_thread
        try:
            return local.block
        except AttributeError:
            local.block = ParameterBlock(self._slot_types)
            return local.block

    def _stream_ordering(self) -> StreamOrdering:
        if self._ordering is None:
            self._ordering = StreamOrdering(self.driver)
        return self._ordering

    def _pointer_device(self, pointer: int) -> int:
        return self.driver.pointer_device(pointer)

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
