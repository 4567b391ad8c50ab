"""The fast-path table: one call signature's checks and packing, derived once from the binder.

``launch_table`` derives it from the binder's tables (the one description of the
checks) for a call signature, GPU and thread: per tensor which accessors to read and
what to check, per slot where its value comes from, the extents to compare, the
launch block to write.  Both fast paths are made from it: ``fastpath.py`` writes
straight-line Python from it, and the C extension's ``FastLaunch(table)`` reads it as
the C struct ``LaunchTable``.  The struct, its enums and constants are declared once,
here: ``c_header()`` writes them for ``native_fast_launch.c`` to include (with static
assertions that the C layout is this one), and the extension checks the table's size.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from ctypes import c_int32, c_int64, c_uint32, c_uint64, py_object
from dataclasses import dataclass
from enum import IntEnum
from functools import partial
from typing import Any

from phobos.launch.arrays import INDEX32_LIMIT, read_cai, read_torch
from phobos.launch.binder import ArgumentBinder, Plan, Source, TensorCheck
from phobos.launch.driver import POINTER_ATTR_DEVICE_ORDINAL
from phobos.launch.dtypes import ITEMSIZE, torch_dtype
from phobos.launch.grid import MAX_GRID
from phobos.launch.params import (
    CONFIG_BLOCK,
    CONFIG_GRID,
    CONFIG_SIZE,
    CONFIG_SMEM,
    CONFIG_STREAM,
    LaunchBlock,
)
from phobos.launch.streams import LEGACY_DEFAULT_STREAM, stream_handle

FastLaunch = Callable[[Any, Sequence[Any], Any], "int | None"]  # try_launch(grid, args, stream)

MAX_TENSORS, MAX_RANK, MAX_SLOTS, MAX_EXTENTS, MAX_CHECKS = 64, 8, 256, 64, 256
SLOT_TYPES = tuple(ITEMSIZE)  # the slot types, numbered as the C enum TYPE_* numbers them


class Read(IntEnum):
    """How a tensor argument is read."""

    TORCH = 0  # torch's accessors (its dtype is the torch dtype object)
    CAI = 1  # __cuda_array_interface__ (its dtype is the typestr less the byte order: "f4")


class Exact(IntEnum):
    """Which Python type a scalar argument is packed as is, without calling its reader."""

    NONE = 0
    FLOAT = 1
    INT = 2
    BOOL = 3


def exact_for(slot_type: str) -> Exact:
    if slot_type == "bool":
        return Exact.BOOL
    if slot_type == "bf16":
        return Exact.NONE  # its reader rounds it to 16 bits
    return Exact.FLOAT if slot_type.startswith("f") else Exact.INT


class TensorEntry(ctypes.Structure):
    _fields_ = [
        ("position", c_int32),
        ("rank", c_int32),
        ("read", c_int32),  # Read
        ("written", c_int32),  # a readonly CAI array is refused
        ("unit_stride", c_int32),
        ("needs_strides", c_int32),
        ("check_contiguous", c_int32),  # one unit-stride axis: torch's is_contiguous() settles it
        ("span_check", c_int32),  # 32-bit indexing: the furthest element offset
        ("align", c_int64),
        ("itemsize", c_int64),  # bytes per element: CAI strides are in bytes
        ("type", py_object),  # the argument's type, compared by identity
        ("dtype", py_object),
    ]


class SlotEntry(ctypes.Structure):
    _fields_ = [
        ("source", c_int32),  # Source
        ("a", c_int32),  # the tensor, extent or argument position
        ("b", c_int32),  # a stride's axis
        ("type", c_int32),  # the index of its type in SLOT_TYPES
        ("exact", c_int32),  # Exact
        ("offset", c_int64),  # in the parameter values
        ("reader", py_object),  # a scalar's reader (NULL for the others)
    ]


class DimEntry(ctypes.Structure):
    _fields_ = [("tensor", c_int32), ("axis", c_int32), ("value", c_int64)]


class LaunchTable(ctypes.Structure):
    _fields_ = [
        ("nargs", c_int32),
        ("ntensors", c_int32),
        ("nslots", c_int32),
        ("nextents", c_int32),
        ("nextent_checks", c_int32),  # value: the extent each must equal
        ("nliteral_checks", c_int32),  # value: the size each must be
        ("index32", c_int32),
        ("device", c_int32),
        ("owner", c_uint64),  # the thread whose launch block this is
        ("launch", c_uint64),  # cuLaunchKernelEx's address
        ("pointer_attribute", c_uint64),  # cuPointerGetAttribute's (0: no CAI array)
        ("function", c_uint64),
        ("config", c_uint64),  # the launch block's CUlaunchConfig, parameter values, void*s
        ("params", c_uint64),
        ("kernel_params", c_uint64),
        ("cta", c_uint32 * 3),
        ("dynamic_smem", c_uint32),
        ("max_grid", c_int64 * 3),
        ("other_thread", py_object),  # what a launch from another thread calls instead
        ("current_stream", py_object),  # the array library's current stream, by device
        ("stream_handle", py_object),  # the CUstream of a stream= object
        ("meta", py_object),  # the compile-time values a grid function sees
        ("extent_names", py_object),  # tuple of str
        ("keep", py_object),  # the launch block and target the addresses point into
        ("tensors", TensorEntry * MAX_TENSORS),
        ("slots", SlotEntry * MAX_SLOTS),
        ("extent_sources", DimEntry * MAX_EXTENTS),
        ("extent_checks", DimEntry * MAX_CHECKS),
        ("literal_checks", DimEntry * MAX_CHECKS),
    ]


@dataclass(frozen=True)
class LaunchTarget:
    """Where a fast path launches: one kernel loaded on one GPU, and one thread's launch block."""

    device: int
    function: ctypes.c_void_p  # the CUfunction
    launch: Callable[..., int]  # the driver's cuLaunchKernelEx, for the generated Python
    launch_entry: int | None  # its C entry point's address, for the native path
    pointer_entry: int | None  # cuPointerGetAttribute's, for arrays read through their CAI
    pointer_device: Callable[[int], int]  # a pointer's GPU (-1 if none), for the Python path
    block: LaunchBlock
    owner: int  # threading.get_ident() of the thread the block belongs to
    other_thread: FastLaunch  # what a launch from any other thread calls instead
    meta: dict[str, int]  # the compile-time values a grid function sees


def tensor_reads(
    binder: ArgumentBinder, check: TensorCheck, strided: bool
) -> tuple[bool, bool, bool]:
    """What a fast path reads of a torch tensor: (strides?, ``is_contiguous()``?, 32-bit span?).

    Strides are read only where a slot (``strided``), the 32-bit span or a unit-stride
    test of several axes needs them; for one axis, torch's contiguity is exactly
    "stride 1 or at most one element", so ``is_contiguous()`` settles a unit stride.
    """
    one_unit_axis = check.rank == 1 and check.unit_stride
    span_check = binder.index32 and check.rank > 0 and not one_unit_axis
    needs_strides = strided or span_check or (check.unit_stride and not one_unit_axis)
    return needs_strides, check.unit_stride and not needs_strides, span_check


def launch_table(
    binder: ArgumentBinder, plan: Plan, types: Sequence[type], target: LaunchTarget
) -> LaunchTable | None:
    """The table for ``plan`` and argument ``types`` on ``target``, or ``None`` when there is no
    fast path for them (an array read otherwise, more than the table holds).

    The arguments of these types passed the reference checks, so their dtypes were read
    already: what the table compares them with comes from those readings.
    """
    contract = binder.contract
    if (
        len(binder.tensors) > MAX_TENSORS
        or len(binder.slot_sources) > MAX_SLOTS
        or len(binder.extent_sources) > MAX_EXTENTS
        or max(len(binder.extent_checks), len(binder.literal_checks)) > MAX_CHECKS
        or any(t.rank > MAX_RANK for t in binder.tensors)
    ):
        return None
    table = LaunchTable()
    strided = binder.strided_tensors()
    for i, (check, reader) in enumerate(zip(binder.tensors, plan.readers)):
        entry = table.tensors[i]
        needs_strides, check_contiguous, span_check = tensor_reads(binder, check, i in strided)
        if reader is read_torch:
            entry.read, entry.dtype = Read.TORCH, torch_dtype(check.dtype)
        elif reader is read_cai and check.dtype != "bf16":  # the CAI has no typestr for bf16
            kind = "b" if check.dtype == "bool" else check.dtype[0]
            entry.read, entry.dtype = Read.CAI, f"{kind}{ITEMSIZE[check.dtype]}"
            needs_strides, check_contiguous = True, False
        else:
            return None
        if entry.dtype is None:
            return None
        entry.position, entry.rank, entry.written = check.position, check.rank, check.written
        entry.unit_stride, entry.needs_strides = check.unit_stride, needs_strides
        entry.check_contiguous, entry.span_check = check_contiguous, span_check
        entry.align, entry.itemsize = check.align, ITEMSIZE[check.dtype]
        entry.type = types[check.position]
    block = target.block
    for slot, (source, a, b), kind, offset in zip(
        table.slots, binder.slot_sources, contract.slots, block.offsets
    ):
        slot.source, slot.a, slot.b, slot.offset = source, a, b, offset
        slot.type, slot.exact = SLOT_TYPES.index(kind.type), exact_for(kind.type)
        if source == Source.SCALAR:
            slot.reader = partial(binder.read_scalar, a)
    for entries, rows in (
        (table.extent_sources, [(t, axis, 0) for t, axis in binder.extent_sources]),
        (table.extent_checks, binder.extent_checks),
        (table.literal_checks, binder.literal_checks),
    ):
        for entry, (t, axis, value) in zip(entries, rows):
            entry.tensor, entry.axis, entry.value = t, axis, value
    table.nargs, table.ntensors, table.nslots = (
        binder.count,
        len(binder.tensors),
        len(contract.slots),
    )
    table.nextents, table.nextent_checks = len(binder.extent_sources), len(binder.extent_checks)
    table.nliteral_checks, table.index32 = len(binder.literal_checks), binder.index32
    table.device, table.owner = target.device, target.owner
    table.launch, table.pointer_attribute = target.launch_entry or 0, target.pointer_entry or 0
    table.function = target.function.value or 0
    table.config = ctypes.addressof(block.config)
    table.params = table.config + CONFIG_SIZE
    table.kernel_params = ctypes.addressof(block.pointers)
    table.cta[:], table.dynamic_smem, table.max_grid[:] = block.cta, block.dynamic_smem, MAX_GRID
    table.other_thread, table.current_stream = target.other_thread, plan.current_stream
    table.stream_handle, table.meta = stream_handle, dict(target.meta)
    table.extent_names, table.keep = tuple(binder.extent_names), (block, target)
    return table


_C_TYPES = {c_int32: "int32_t", c_int64: "int64_t", c_uint32: "uint32_t", c_uint64: "uint64_t"}


def _field(kind: Any, name: str) -> str:
    if hasattr(kind, "_length_"):
        return f"{_field(kind._type_, name)}[{kind._length_}]"
    if kind is py_object:
        return f"PyObject *{name}"
    return f"{kind.__name__ if issubclass(kind, ctypes.Structure) else _C_TYPES[kind]} {name}"


def c_header() -> str:
    """The C declarations of the table (``phobos_launch_table.h``), included after Python.h."""
    lines = ["/* Written by phobos.launch.table.c_header() for native_fast_launch.c. */"]
    constants = {
        "MAX_TENSORS": MAX_TENSORS,
        "MAX_RANK": MAX_RANK,
        "INDEX32_LIMIT": f"INT64_C({INDEX32_LIMIT})",
        "CONFIG_GRID": CONFIG_GRID,
        "CONFIG_BLOCK": CONFIG_BLOCK,
        "CONFIG_SMEM": CONFIG_SMEM,
        "CONFIG_STREAM": CONFIG_STREAM,
        "POINTER_ATTRIBUTE_DEVICE_ORDINAL": POINTER_ATTR_DEVICE_ORDINAL,
        "LEGACY_DEFAULT_STREAM": LEGACY_DEFAULT_STREAM,
    }
    lines += [f"#define {name} {value}" for name, value in constants.items()]
    enums = [("SOURCE", list(Source)), ("READ", list(Read)), ("EXACT", list(Exact))]
    enums.append(("TYPE", [(t.upper(), i) for i, t in enumerate(SLOT_TYPES)]))  # type: ignore[misc]
    for prefix, members in enums:
        named = [(m.name, m.value) if isinstance(m, IntEnum) else m for m in members]
        lines.append("enum { " + ", ".join(f"{prefix}_{n} = {v}" for n, v in named) + " };")
    for struct in (TensorEntry, SlotEntry, DimEntry, LaunchTable):
        name = struct.__name__
        fields = "".join(f"    {_field(kind, field)};\n" for field, kind in struct._fields_)
        lines.append(f"typedef struct {{\n{fields}}} {name};")
        layout = " && ".join(
            [f"sizeof({name}) == {ctypes.sizeof(struct)}"]
            + [f"offsetof({name}, {f}) == {getattr(struct, f).offset}" for f, _ in struct._fields_]
        )
        lines.append(f'_Static_assert({layout}, "{name} is laid out as phobos.launch.table says");')
    return "\n".join(lines) + "\n"
