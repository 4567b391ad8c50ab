"""The argument binder: a launch's arguments checked against the contract, slot values gathered.

Everything that depends only on the contract is worked out once, when the binder
is made (the tables below); what depends on the argument types (which reader each
tensor takes) once per call signature, in a ``Plan``.  ``bind`` is the reference
path: it reads and checks each argument in turn and explains any failure, a
``LaunchError`` naming the kernel, the parameter, what was expected and what was
given.  ``fastpath`` compiles the same checks into one straight-line function per
plan, GPU and thread for the launches that pass them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from phobos.launch.arrays import (
    HOST,
    INDEX32_LIMIT,
    ArrayFields,
    ArrayProtocolError,
    Reader,
    element_span,
    not_a_gpu_array,
    reader_for,
)
from phobos.launch.contract import LaunchContract, ScalarParam, TensorParam
from phobos.launch.dtypes import ITEMSIZE
from phobos.launch.errors import CudaError, DriverNotFound, LaunchError
from phobos.launch.scalars import ScalarError, ScalarReader, fits, scalar_reader
from phobos.launch.streams import current_stream_of, library_of
from phobos.launch.tensormaps import Encoder, TensorMaps


class Source(IntEnum):
    """Where a slot's value comes from (the first entry of each ``slot_sources`` row): a
    tensor's data pointer, one of its strides, a named extent, a scalar argument, a TMA
    descriptor of a tensor (``tensormaps.py``)."""

    POINTER, STRIDE, EXTENT, SCALAR, TENSORMAP = range(5)


POINTER, STRIDE, EXTENT, SCALAR, TENSORMAP = Source


class TensorCheck:
    """A tensor parameter with what each launch checks about it, precomputed."""

    __slots__ = ("align", "assumed_align", "dims", "dtype", "name", "position", "rank",
                 "row_words", "unit_stride", "written")  # fmt: skip

    def __init__(self, param: TensorParam, position: int) -> None:
        self.name = param.name
        self.position = position
        self.dtype = param.dtype
        self.dims = param.dims
        self.rank = len(param.dims)
        # A misaligned element is a fault on the GPU whatever the contract assumed.
        self.assumed_align = param.align
        self.align = max(param.align, ITEMSIZE[param.dtype])
        self.unit_stride = param.unit_stride and self.rank > 0
        # Every stride but the last axis's a multiple of this many elements (1: any).
        self.row_words = max(1, param.row_align // ITEMSIZE[param.dtype]) if self.rank > 1 else 1
        self.written = param.written

    def rows_off(self, shape: Sequence[int], strides: Sequence[int]) -> bool:
        """Whether some row (a stride of an axis but the last) is off the assumed alignment."""
        words = self.row_words
        return words > 1 and any(s % words for s, n in zip(strides[:-1], shape[:-1]) if n > 1)

    def declared(self) -> str:
        return f"tensor<{self.dtype}>[{', '.join(str(d) for d in self.dims)}]"


@dataclass(frozen=True)
class Binding:
    """What binding one call's arguments found (see ``LoadedKernel.bind``)."""

    device: int | None  # the arrays' GPU, None when no argument is an array
    extents: dict[str, int]
    slot_values: tuple[Any, ...]
    producer_streams: tuple[int, ...]  # CAI v3 streams the launch must wait for


class Plan:
    """How to read the arguments of one call signature (the tuple of argument types)."""

    __slots__ = ("current_stream", "readers")

    def __init__(self, readers: tuple[Reader, ...], library: str | None) -> None:
        self.readers = readers
        # The current stream of the arguments' array library (torch, CuPy), else the default.
        self.current_stream = current_stream_of(library)


class ArgumentBinder:
    """Checks arguments against one contract and gathers its slot values."""

    def __init__(
        self,
        contract: LaunchContract,
        pointer_device: Callable[[int], int] | None,
        encode_tensor_map: Encoder | None = None,
    ) -> None:
        self.contract = contract
        self.kernel = contract.kernel
        self._pointer_device = pointer_device
        self.count = len(contract.params)
        position = {name: i for i, name in enumerate(contract.params)}
        self.tensors = tuple(TensorCheck(t, position[t.name]) for t in contract.tensors)
        tensor_index = {t.name: i for i, t in enumerate(self.tensors)}
        self.scalar_readers: dict[str, ScalarReader] = {
            s.name: scalar_reader(s.dtype) for s in contract.scalars
        }
        self.index32 = contract.index_width == 32
        self.plans: dict[tuple[type, ...], Plan] = {}

        # Named extents: where each is first read, where it must agree; literal dims.
        self.extent_names: list[str] = []
        self.extent_sources: list[tuple[int, int]] = []
        self.extent_checks: list[tuple[int, int, int]] = []
        self.literal_checks: list[tuple[int, int, int]] = []
        for t_index, tensor in enumerate(self.tensors):
            for axis, dim in enumerate(tensor.dims):
                if isinstance(dim, int):
                    self.literal_checks.append((t_index, axis, dim))
                elif dim in self.extent_names:
                    self.extent_checks.append((t_index, axis, self.extent_names.index(dim)))
                else:
                    self.extent_names.append(dim)
                    self.extent_sources.append((t_index, axis))

        self.slot_sources: list[tuple[Source, int, int]] = []
        self.tensor_maps: list[TensorMaps] = []
        for slot in contract.slots:
            if slot.kind == "tensormap":
                assert slot.box is not None and encode_tensor_map is not None
                t = tensor_index[slot.param]
                self.slot_sources.append((TENSORMAP, t, len(self.tensor_maps)))
                self.tensor_maps.append(
                    TensorMaps(
                        self.kernel, slot.param, self.tensors[t].dtype, slot.box, encode_tensor_map
                    )
                )
            elif slot.kind == "pointer":
                self.slot_sources.append((POINTER, tensor_index[slot.param], 0))
            elif slot.kind == "stride":
                self.slot_sources.append((STRIDE, tensor_index[slot.param], slot.axis or 0))
            elif slot.kind == "extent":
                self.slot_sources.append((EXTENT, self.extent_names.index(slot.param), 0))
            else:
                self.slot_sources.append((SCALAR, position[slot.param], 0))

    @classmethod
    def declared(
        cls, kernel: str, params: Sequence[tuple[str, str, Sequence[str | int] | None]]
    ) -> ArgumentBinder:
        """The checks every variant of a kernel makes, from its declared parameters (name, dtype,
        and a tensor's dims: extent names or literal sizes; None for a scalar): the count,
        dtypes, ranks, element alignment and extents, for ``check_read`` before any variant
        is chosen.  Nothing is assumed of alignment or strides, indices are 64-bit, and no
        tensor counts as written."""
        tensors = [
            TensorParam(n, t, tuple(d), False, 1, False) for n, t, d in params if d is not None
        ]
        scalars = [ScalarParam(n, t) for n, t, d in params if d is None]
        names = tuple(p[0] for p in params)
        unlaunched = ("", "", 64, (1, 1, 1), 0, 0, {})  # entry, arch, index width, block, ...
        return cls(
            LaunchContract(kernel, *unlaunched, tuple(tensors), tuple(scalars), (), names), None
        )

    def strided_tensors(self) -> set[int]:
        """The tensors (by index in ``tensors``) whose strides some slot passes to the kernel
        (a stride itself or a TMA descriptor)."""
        return {a for kind, a, _ in self.slot_sources if kind in (STRIDE, TENSORMAP)}

    def plan(self, args: Sequence[Any]) -> Plan:
        """The plan for the call signature of ``args`` (made on first sight); checks the count."""
        if len(args) != self.count:
            raise LaunchError(self.count_problem(args))
        plan = self.plans.get(tuple(map(type, args)))
        return self._plan(args) if plan is None else plan

    def bind(
        self,
        args: Sequence[Any],
        plan: Plan,
        arrays: Sequence[ArrayFields | None] | None = None,
    ) -> tuple[int | None, list[int], list[Any], list[int]]:
        """Check ``args``; return (device, extents, slot values, producer streams).

        ``arrays`` are the arguments as ``read_arguments`` read them, by position, when the
        caller read them already; else each tensor is read with its plan's reader.  The
        checks that need no driver come first, so a wrong dtype is reported as one even where
        a pointer could not be asked about.
        """
        tensors = self.tensors
        if arrays is None:
            read: list[ArrayFields] = []
            try:
                for reader, check in zip(plan.readers, tensors):
                    read.append(reader(args[check.position]))
            except ArrayProtocolError as exc:
                check = tensors[len(read)]
                raise LaunchError(f"{self.kernel}: {check.name}: {exc}", check.name) from None
        else:
            read = [arrays[check.position] for check in tensors]  # type: ignore[misc]
        extents = self.check(read)
        device, producers = self.devices(read)
        values = []
        for kind, a, b in self.slot_sources:
            if kind == POINTER:
                values.append(read[a][0])
            elif kind == STRIDE:
                values.append(read[a][2][b])
            elif kind == EXTENT:
                values.append(extents[a])
            elif kind == TENSORMAP:
                ptr, shape, strides = read[a][:3]
                values.append(self.tensor_maps[b](ptr, shape, strides))
            else:
                values.append(self.read_scalar(a, args[a]))
        return device, extents, values, producers

    def devices(
        self, arrays: Sequence[ArrayFields], pointer_device: Callable[[int], int] | None = None
    ) -> tuple[int | None, list[int]]:
        """The GPU the tensors' arrays are on (None with none), asking the driver about pointers
        whose array does not say; and the CAI v3 streams they were made on."""
        device = first = None
        producers = []
        for check, (ptr, _, _, _, on, _, stream) in zip(self.tensors, arrays):
            if on is None and ptr:
                on = self.device_of(check, ptr, pointer_device)
            if on is not None and device is None:
                device, first = on, check
            elif on is not None and on != device:
                raise LaunchError(
                    f"{self.kernel}: {check.name} is on GPU {on} but {first.name} is on GPU "  # type: ignore[union-attr]
                    f"{device}; pass all arrays on one GPU",
                    check.name,
                )
            if stream is not None:
                producers.append(stream)
        return device, producers

    def check(self, arrays: Sequence[ArrayFields]) -> list[int]:
        """The checks that need no driver, on each tensor's fields (in ``tensors`` order): dtype,
        rank, alignment, writability, unit stride, named and literal extents, the index width.
        Returns the named extents."""
        for check, fields in zip(self.tensors, arrays):
            ptr, shape, strides, dtype, on, readonly, _ = fields
            if (
                dtype != check.dtype
                or len(shape) != check.rank
                or (ptr % check.align and on != HOST)  # the interpreter minds no alignment
                or (readonly and check.written)
                or (check.unit_stride and strides[-1] != 1 and shape[-1] > 1)
                or (check.rows_off(shape, strides) and on != HOST)
            ):
                raise LaunchError(self._tensor_problem(check, fields), check.name)
        extents = [arrays[t][1][axis] for t, axis in self.extent_sources]
        for t, axis, e in self.extent_checks:
            if arrays[t][1][axis] != extents[e]:
                raise LaunchError(self._extent_problem(t, axis, e, arrays), self.tensors[t].name)
        for t, axis, size in self.literal_checks:
            if arrays[t][1][axis] != size:
                raise LaunchError(
                    self._literal_problem(t, axis, size, arrays), self.tensors[t].name
                )
        if self.index32:
            self._check_index32(extents, arrays)
        return extents

    def check_read(self, args: Sequence[Any], arrays: Sequence[ArrayFields | None]) -> None:
        """``check`` on arguments ``read_arguments`` read (host arrays too), with the count."""
        if len(args) != self.count:
            raise LaunchError(self.count_problem(args))
        for check in self.tensors:
            if arrays[check.position] is None:
                raise LaunchError(self._not_an_array(check, args[check.position]), check.name)
        self.check([arrays[check.position] for check in self.tensors])  # type: ignore[misc]

    def binding(
        self, args: Sequence[Any], arrays: Sequence[ArrayFields | None] | None = None
    ) -> Binding:
        device, extents, values, producers = self.bind(args, self.plan(args), arrays)
        if not all(fits(slot.type, v) for slot, v in zip(self.contract.slots, values)):
            raise LaunchError(self.unfit_problem(values))
        return Binding(
            device, dict(zip(self.extent_names, extents)), tuple(values), tuple(producers)
        )

    def _plan(self, args: Sequence[Any]) -> Plan:
        readers = []
        for check in self.tensors:
            arg = args[check.position]
            reader = reader_for(arg)
            if reader is None:
                raise LaunchError(self._not_an_array(check, arg), check.name)
            readers.append(reader)
        plan = Plan(tuple(readers), library_of(args[t.position] for t in self.tensors))
        self.plans[tuple(map(type, args))] = plan
        return plan

    def read_scalar(self, position: int, value: Any) -> Any:
        name = self.contract.params[position]
        try:
            return self.scalar_readers[name](value)
        except ScalarError as exc:
            raise LaunchError(f"{self.kernel}: {name}: {exc}", name) from None

    def device_of(
        self, check: TensorCheck, ptr: int, pointer_device: Callable[[int], int] | None = None
    ) -> int:
        pointer_device = pointer_device or self._pointer_device
        if pointer_device is None:
            return 0
        try:
            return pointer_device(ptr)
        except DriverNotFound:
            raise
        except CudaError as exc:
            raise LaunchError(
                f"{self.kernel}: {check.name}: its data pointer {ptr:#x} is not GPU memory the "
                f"CUDA driver knows ({exc.name}); pass an array allocated on a GPU",
                check.name,
            ) from None

    def _check_index32(self, extents: list[int], arrays: Sequence[ArrayFields]) -> None:
        for name, size in zip(self.extent_names, extents):
            if size >= INDEX32_LIMIT:
                t, axis = self.extent_sources[self.extent_names.index(name)]
                raise LaunchError(
                    f"{self.kernel}: extent {name} = {size} (axis {axis} of "
                    f"{self.tensors[t].name}) does not fit this variant's 32-bit indexing; "
                    "a 64-bit variant is needed"
                )
        for check, fields in zip(self.tensors, arrays):
            span = element_span(fields[1], fields[2])
            if span >= INDEX32_LIMIT:
                raise LaunchError(
                    f"{self.kernel}: {check.name}: element offsets reach {span} (≥ 2^31), beyond "
                    "this variant's 32-bit indexing; a 64-bit variant is needed"
                )

    # Messages, built only when a check fails.

    def _not_an_array(self, check: TensorCheck, arg: Any) -> str:
        return (
            f"{self.kernel}: {check.name}: expected a GPU array for {check.declared()}; "
            + not_a_gpu_array(arg)
        )

    def count_problem(self, args: Sequence[Any]) -> str:
        params = ", ".join(self.contract.params)
        return f"{self.kernel} takes {self.count} arguments ({params}), got {len(args)}"

    def _tensor_problem(self, check: TensorCheck, fields: ArrayFields) -> str:
        ptr, shape, strides, dtype, _, readonly, _ = fields
        where = f"{self.kernel}: {check.name}"
        shape = tuple(shape)
        if dtype != check.dtype:
            return f"{where}: expected a {check.dtype} tensor, got {dtype} (shape {shape})"
        if len(shape) != check.rank:
            return (
                f"{where}: expected a {check.rank}-D tensor for {check.declared()}, "
                f"got shape {shape} ({len(shape)}-D)"
            )
        if ptr % check.align and check.assumed_align < check.align:
            return (
                f"{where}: data pointer {ptr:#x} is not a multiple of its element size "
                f"({check.align} bytes); pass an array whose elements are aligned"
            )
        if ptr % check.align:
            return (
                f"{where}: data pointer {ptr:#x} is not a multiple of {check.align} bytes, the "
                "alignment the kernel was specialised for; pass an aligned array (a fresh "
                "allocation or a copy), or use a variant compiled for less alignment"
            )
        if readonly and check.written:
            return (
                f"{where} is read-only (its __cuda_array_interface__ says readonly) but the "
                "kernel writes it; pass a writable array"
            )
        if check.rows_off(shape, strides):
            return (
                f"{where}: strides {tuple(strides)} (elements) put rows off "
                f"{check.row_words * ITEMSIZE[check.dtype]} bytes, the row alignment the kernel "
                "was specialised for; pass .contiguous() with a last extent that keeps rows on "
                "it, or use a variant compiled for less row alignment"
            )
        return (
            f"{where}: non-contiguous last axis (stride {strides[-1]}, shape {shape}); the "
            "kernel was specialised for unit stride; pass .contiguous()"
        )

    def _extent_problem(self, t: int, axis: int, e: int, arrays: Sequence[ArrayFields]) -> str:
        name = self.extent_names[e]
        first_t, first_axis = self.extent_sources[e]
        return (
            f"{self.kernel}: extent {name} disagrees: {self.tensors[first_t].name} has {name} = "
            f"{arrays[first_t][1][first_axis]} (axis {first_axis}), {self.tensors[t].name} has "
            f"{name} = {arrays[t][1][axis]} (axis {axis})"
        )

    def _literal_problem(self, t: int, axis: int, size: int, arrays: Sequence[ArrayFields]) -> str:
        check = self.tensors[t]
        return (
            f"{self.kernel}: {check.name}: axis {axis} must be {size} (declared "
            f"{check.declared()}), got {arrays[t][1][axis]} (shape {tuple(arrays[t][1])})"
        )

    def unfit_problem(self, values: Sequence[Any]) -> str:
        """Why the first slot value that does not fit its type fails (after a failed pack)."""
        slots = self.contract.slots
        index = next(i for i, v in enumerate(values) if not fits(slots[i].type, v))
        slot = slots[index]
        value = values[index]
        if slot.kind == "scalar":
            return f"{self.kernel}: {slot.param}: {value!r} does not fit {slot.type}"
        what = f"stride {slot.axis} of {slot.param}" if slot.kind == "stride" else slot.param
        return (
            f"{self.kernel}: {what} = {value} does not fit this variant's {slot.type} "
            "index slots; a 64-bit variant is needed"
        )
