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
import threading
from collections.abc import Callable, Sequence
from ctypes import c_int32, c_int64, c_uint32, c_uint64, py_object
from enum import IntEnum
from functools import partial
from typing import Any

from phobos.launch.arrays import INDEX32_LIMIT, read_cai, read_torch
from phobos.launch.binder import ArgumentBinder, Plan, Source
from phobos.launch.driver import POINTER_ATTR_DEVICE_ORDINAL, Driver
from phobos.launch.dtypes import ITEMSIZE, SLOT_ITEMSIZE, torch_dtype
from phobos.launch.errors import CudaError
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
SLOT_TYPES = tuple(SLOT_ITEMSIZE)  # the slot types, numbered as the C enum TYPE_* numbers them


class Read(IntEnum):
    """How a tensor argument is read: torch's accessors (its dtype is the torch dtype object),
    or ``__cuda_array_interface__`` (its dtype is the typestr less the byte order: "f4")."""

    TORCH, CAI = range(2)


class Exact(IntEnum):
    """Which Python type a scalar argument is packed as is, without calling its reader."""

    NONE, FLOAT, INT, BOOL = range(4)


def exact_for(slot_type: str) -> Exact:
    if slot_type in ("bool", "bf16"):  # a bf16's reader rounds it to 16 bits
        return Exact.BOOL if slot_type == "bool" else Exact.NONE
    return Exact.FLOAT if slot_type.startswith("f") else Exact.INT


# fmt: off
class TensorEntry(ctypes.Structure):
    """One tensor: where it is among the arguments, how it is read and what is checked
    (``check_contiguous``: one unit-stride axis, which torch's is_contiguous() settles;
    ``span_check``: 32-bit indexing, the furthest element offset; ``row_words``: every stride
    but the last axis's a multiple of it, in elements (1: any); ``itemsize``: CAI strides
    are in bytes; ``type``: the argument's type, compared by identity)."""

    _fields_ = [
        ("position", c_int32), ("rank", c_int32), ("read", c_int32), ("written", c_int32),
        ("unit_stride", c_int32), ("needs_strides", c_int32), ("check_contiguous", c_int32),
        ("span_check", c_int32), ("align", c_int64), ("row_words", c_int64), ("itemsize", c_int64),
        ("type", py_object), ("dtype", py_object),
    ]


class SlotEntry(ctypes.Structure):
    """One parameter slot: its ``Source``, the tensor, extent or argument position ``a``, a
    stride's axis ``b``, its type (an index in SLOT_TYPES), ``Exact``, its offset in the
    parameter values, and a scalar's reader (NULL for the others)."""

    _fields_ = [
        ("source", c_int32), ("a", c_int32), ("b", c_int32), ("type", c_int32),
        ("exact", c_int32), ("offset", c_int64), ("reader", py_object),
    ]


class DimEntry(ctypes.Structure):
    """An axis of a tensor, and the extent (its index) it must equal or the size it must be."""

    _fields_ = [("tensor", c_int32), ("axis", c_int32), ("value", c_int64)]


class LaunchTable(ctypes.Structure):
    """One call signature's table: the counts, the thread that owns the launch block, the
    addresses of cuLaunchKernelEx, cuPointerGetAttribute (0: no CAI array), the function and
    the launch block (its CUlaunchConfig, parameter values and void* array), the CTA, the
    Python objects a launch calls or reads (``block`` holds what the addresses point into;
    the generated Python alone calls ``launch_function`` with ``function_handle``, and asks
    ``pointer_device``), and the entries."""

    _fields_ = [
        ("nargs", c_int32), ("ntensors", c_int32), ("nslots", c_int32), ("nextents", c_int32),
        ("nextent_checks", c_int32), ("nliteral_checks", c_int32), ("index32", c_int32),
        ("device", c_int32), ("owner", c_uint64), ("launch", c_uint64),
        ("pointer_attribute", c_uint64), ("function", c_uint64), ("config", c_uint64),
        ("params", c_uint64), ("kernel_params", c_uint64), ("cta", c_uint32 * 3),
        ("dynamic_smem", c_uint32), ("max_grid", c_int64 * 3),
        ("other_thread", py_object), ("current_stream", py_object), ("stream_handle", py_object),
        ("meta", py_object), ("extent_names", py_object), ("block", py_object),
        ("launch_function", py_object), ("function_handle", py_object),
        ("pointer_device", py_object),
        ("tensors", TensorEntry * MAX_TENSORS), ("slots", SlotEntry * MAX_SLOTS),
        ("extent_sources", DimEntry * MAX_EXTENTS), ("extent_checks", DimEntry * MAX_CHECKS),
        ("literal_checks", DimEntry * MAX_CHECKS),
    ]
# fmt: on


def launch_table(
    binder: ArgumentBinder,
    plan: Plan,
    types: Sequence[type],
    device: int,
    function: ctypes.c_void_p,
    block: LaunchBlock,
    driver: Driver,
    other_thread: FastLaunch,
) -> LaunchTable | None:
    """The table for ``plan`` and argument ``types``, for this thread's launches of
    ``function`` on ``device`` through ``block`` (``other_thread``: what another thread's
    call does instead), or ``None`` when there is no fast path for them (an array read
    otherwise, more than the table holds).

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
        # A torch tensor's strides are read only where a slot, the 32-bit span or a unit-stride
        # test of several axes needs them; for one axis, torch's contiguity is exactly "stride
        # 1 or at most one element", so is_contiguous() settles a unit stride.
        entry, one_unit_axis = table.tensors[i], check.rank == 1 and check.unit_stride
        span_check = binder.index32 and check.rank > 0 and not one_unit_axis
        needs_strides = (
            i in strided
            or span_check
            or (check.unit_stride and not one_unit_axis)
            or check.row_words > 1
        )
        check_contiguous = check.unit_stride and not needs_strides
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
        entry.row_words = check.row_words
        entry.type = types[check.position]
    slots = contract.slots
    for slot, (source, a, b), kind, offset in zip(
        table.slots, binder.slot_sources, slots, block.offsets
    ):
        slot.source, slot.a, slot.b, slot.offset = source, a, b, offset
        slot.type, slot.exact = SLOT_TYPES.index(kind.type), exact_for(kind.type)
        if source == Source.SCALAR:
            slot.reader = partial(binder.read_scalar, a)
        elif source == Source.TENSORMAP:
            slot.reader = binder.tensor_maps[b]
    for entries, rows in (
        (table.extent_sources, [(t, axis, 0) for t, axis in binder.extent_sources]),
        (table.extent_checks, binder.extent_checks),
        (table.literal_checks, binder.literal_checks),
    ):
        for entry, (t, axis, value) in zip(entries, rows):
            entry.tensor, entry.axis, entry.value = t, axis, value
    table.nargs, table.ntensors, table.nslots = binder.count, len(binder.tensors), len(slots)
    table.nextents, table.nextent_checks = len(binder.extent_sources), len(binder.extent_checks)
    table.nliteral_checks, table.index32 = len(binder.literal_checks), binder.index32
    table.device, table.owner, table.function = device, threading.get_ident(), function.value or 0
    table.launch = getattr(driver, "launch_entry", None) or 0
    table.pointer_attribute = getattr(driver, "pointer_attribute_entry", None) or 0
    table.config = ctypes.addressof(block.config)
    table.params = table.config + CONFIG_SIZE
    table.kernel_params = ctypes.addressof(block.pointers)
    table.cta[:], table.dynamic_smem, table.max_grid[:] = block.cta, block.dynamic_smem, MAX_GRID
    table.other_thread, table.current_stream = other_thread, plan.current_stream
    table.stream_handle, table.meta = stream_handle, dict(contract.values)
    table.extent_names, table.block = tuple(binder.extent_names), block
    table.launch_function, table.function_handle = py_object(driver.launch), py_object(function)
    table.pointer_device = partial(_ordinal, driver)
    return table


def _ordinal(driver: Driver, pointer: int) -> int:
    """The GPU of ``pointer``, or -1 when the driver does not know it."""
    try:
        return driver.pointer_device(pointer)
    except CudaError:
        return -1


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
    # fmt: off
    constants = dict(
        MAX_TENSORS=MAX_TENSORS, MAX_RANK=MAX_RANK, INDEX32_LIMIT=f"INT64_C({INDEX32_LIMIT})",
        CONFIG_GRID=CONFIG_GRID, CONFIG_BLOCK=CONFIG_BLOCK, CONFIG_SMEM=CONFIG_SMEM,
        CONFIG_STREAM=CONFIG_STREAM, POINTER_ATTRIBUTE_DEVICE_ORDINAL=POINTER_ATTR_DEVICE_ORDINAL,
        LEGACY_DEFAULT_STREAM=LEGACY_DEFAULT_STREAM,
    )
    # fmt: on
    lines += [f"#define {name} {value}" for name, value in constants.items()]
    enums = {prefix: [(m.name, m.value) for m in e] for prefix, e in
             (("SOURCE", Source), ("READ", Read), ("EXACT", Exact))}  # fmt: skip
    enums["TYPE"] = [(t.upper(), i) for i, t in enumerate(SLOT_TYPES)]
    for prefix, members in enums.items():
        lines.append("enum { " + ", ".join(f"{prefix}_{n} = {v}" for n, v in members) + " };")
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
