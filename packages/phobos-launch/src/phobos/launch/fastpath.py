"""The launch fast path: one signature's checks, packing and driver call as straight-line Python.

Host time per launch is a first-class figure, and a loop over parameters and slots
costs more than the driver call it feeds.  For each call signature, GPU and thread,
``compile_fast_launch`` writes a function that reads every array once with the
cheapest accessors its type has, tests every check the reference binder makes as
one boolean expression, packs the launch block with one ``pack_into`` and calls
``cuLaunchKernelEx``.  It returns 0 when it launched, the CUresult when the driver
refused (nothing launched), and ``None`` when a check fails or it cannot tell: the
caller then takes the reference path, which raises the ``LaunchError`` that
explains it.  So the fast path only decides how quickly a good launch goes, never
what a bad one says.

It does not ask the driver which context is current: a launch of a function loaded
in a context that is not current is refused (``CUDA_ERROR_INVALID_HANDLE``), and
the caller then makes the right context current and launches again.

Generated for saxpy on torch tensors (``tensor<f32>[N]`` ×3, ``alpha: f32``)::

    def try_launch(grid, args, stream):
        if GET_IDENT() != OWNER:
            return OTHER_THREAD(grid, args, stream)
        if len(args) != 4:
            return None
        a0, a1, a2, a3, = args
        if not (a0.__class__ is T0 and a1.__class__ is T1 and a2.__class__ is T2):
            return None
        try:
            s0 = a0.shape; s1 = a1.shape; s2 = a2.shape
            if not (a0.dtype is D0 and len(s0) == 1 and ...):
                return None
            p0 = a0.data_ptr(); p1 = ...
            e0 = s0[0]
            if (a0.get_device() != 0 or p0 % 16 or not a0.is_contiguous() or s1[0] != e0
                    or ...):
                return None
            ...  # the grid (a tuple, or the grid function called with meta), the stream
            WRITE(gx, gy, gz, 128, 1, 1, 0, h, p0, p1, p2, e0,
                  a3 if a3.__class__ is float else R3(a3))
        except RETRY:
            return None
        return LAUNCH(CONFIG, FUNCTION, PARAMS, None)
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from phobos.launch.arrays import ArrayProtocolError, read_cai, read_torch
from phobos.launch.binder import (
    EXTENT,
    INDEX32_LIMIT,
    POINTER,
    STRIDE,
    ArgumentBinder,
    Plan,
    TensorCheck,
)
from phobos.launch.dtypes import from_torch
from phobos.launch.errors import LaunchError
from phobos.launch.grid import MAX_GRID
from phobos.launch.params import LaunchBlock
from phobos.launch.streams import LEGACY_DEFAULT_STREAM, stream_handle

FastLaunch = Callable[[Any, Sequence[Any], Any], "int | None"]

# What reading or packing may raise on arguments that the reference binder then explains
# (a scalar reader's LaunchError too: the reference path raises it where the caller sees it).
RETRY_SLOWLY = (struct.error, OverflowError, ArrayProtocolError, KeyError, LaunchError)

# Scalars of these slot types whose argument is already of this Python type are packed as is.
_EXACT_SCALAR = {"f16": "float", "f32": "float", "f64": "float", "bool": "bool"}


@dataclass(frozen=True)
class LaunchTarget:
    """Where a fast path launches: one kernel loaded on one GPU, and one thread's launch block."""

    device: int
    function: Any  # the CUfunction as a ctypes.c_void_p
    launch: Callable[..., int]  # the driver's cuLaunchKernelEx
    launch_entry: int | None  # its C entry point's address, for the native path (native.py)
    pointer_entry: int | None  # cuPointerGetAttribute's, for arrays read through their CAI
    block: LaunchBlock
    owner: int  # threading.get_ident() of the thread the block belongs to
    other_thread: FastLaunch  # what a launch from any other thread calls instead
    meta: Mapping[str, int]  # the compile-time values a grid function sees


def compile_fast_launch(
    binder: ArgumentBinder, plan: Plan, args: Sequence[Any], target: LaunchTarget
) -> FastLaunch | None:
    """The fast path for ``plan`` on ``target``, or ``None`` when there is none for its types.

    ``args`` are arguments that passed the reference checks with ``plan``; they
    supply the types and torch dtype objects the fast path compares by identity.
    """
    block = target.block
    namespace: dict[str, Any] = {
        "LIMIT": INDEX32_LIMIT,
        "RETRY": RETRY_SLOWLY,
        "GET_IDENT": threading.get_ident,
        "OWNER": target.owner,
        "OTHER_THREAD": target.other_thread,
        "CURRENT": plan.current_stream,
        "HANDLE": stream_handle,
        "WRITE": block.write,
        "LAUNCH": target.launch,
        "CONFIG": block.config,
        "FUNCTION": target.function,
        "PARAMS": block.kernel_params,
    }
    device = target.device
    params = [f"a{i}" for i in range(binder.count)]
    lines = [
        "def try_launch(grid, args, stream):",
        "    if GET_IDENT() != OWNER:",
        "        return OTHER_THREAD(grid, args, stream)",
        f"    if len(args) != {binder.count}:",
        "        return None",
    ]
    if params:
        lines.append(f"    {', '.join(params)}, = args")
    types: list[str] = []  # the call signature's array types, compared by identity
    shapes: list[str] = []
    gate: list[str] = []  # tested before any shape is indexed
    reads: list[str] = []
    checks: list[str] = []
    producers: list[str] = []
    queries: list[str] = []  # pointers the driver is asked about, after every other check
    strided = binder.strided_tensors()
    for i, (check, reader) in enumerate(zip(binder.tensors, plan.readers)):
        arg = f"a{check.position}"
        p, s, t = f"p{i}", f"s{i}", f"t{i}"
        namespace[f"T{i}"] = type(args[check.position])
        types.append(f"{arg}.__class__ is T{i}")
        needs_strides, check_contiguous, span_check = tensor_reads(binder, check, i in strided)
        if reader is read_torch:
            dtype = args[check.position].dtype
            if from_torch(dtype) != check.dtype:
                return None
            namespace[f"D{i}"] = dtype
            shapes.append(f"        {s} = {arg}.shape")
            gate.append(f"{arg}.dtype is D{i}")
            reads.append(f"        {p} = {arg}.data_ptr()")
            if needs_strides:
                reads.append(f"        {t} = {arg}.stride()")
            checks.append(f"{arg}.get_device() != {device}")
            if check_contiguous:
                checks.append(f"not {arg}.is_contiguous()")
        elif reader is read_cai:
            namespace[f"READ{i}"] = read_cai
            namespace[f"DEVICE{i}"] = partial(binder.device_of, check)
            shapes.append(f"        {p}, {s}, {t}, d{i}, _, r{i}, st{i} = READ{i}({arg})")
            gate += [f"d{i} == {check.dtype!r}", f"{p} != 0"]
            if check.written:
                gate.append(f"not r{i}")
            producers.append(f"st{i}")
            queries.append(f"DEVICE{i}({p}) != {device}")
            needs_strides = True
        else:
            return None
        gate.append(f"len({s}) == {check.rank}")
        if check.align > 1:
            checks.append(f"{p} % {check.align}")
        if check.unit_stride and needs_strides:
            checks.append(f"({t}[-1] != 1 and {s}[-1] > 1)")
        if span_check:
            span = " + ".join(
                f"({s}[{a}] - 1 if {s}[{a}] > 1 else 0) * abs({t}[{a}])" for a in range(check.rank)
            )
            checks.append(f"{span} >= LIMIT")

    extents = [f"e{e}" for e in range(len(binder.extent_names))]
    reads += [f"        e{e} = s{t}[{a}]" for e, (t, a) in enumerate(binder.extent_sources)]
    checks += [f"s{t}[{a}] != e{e}" for t, a, e in binder.extent_checks]
    checks += [f"s{t}[{a}] != {size}" for t, a, size in binder.literal_checks]
    if binder.index32:
        checks += [f"{e} >= LIMIT" for e in extents]

    values = []
    for (kind, a, b), slot in zip(binder.slot_sources, binder.contract.slots):
        if kind == POINTER:
            values.append(f"p{a}")
        elif kind == STRIDE:
            values.append(f"t{a}[{b}]")
        elif kind == EXTENT:
            values.append(f"e{a}")
        else:
            namespace[f"R{a}"] = partial(binder.read_scalar, a)
            exact = _EXACT_SCALAR.get(slot.type, "int" if slot.type != "bf16" else None)
            value = f"R{a}(a{a})"
            if exact is not None:
                value = f"(a{a} if a{a}.__class__ is {exact} else {value})"
            values.append(value)

    if types:
        lines += [f"    if not ({' and '.join(types)}):", "        return None"]
    lines.append("    try:")
    lines += shapes
    if gate:
        lines += [f"        if not ({' and '.join(gate)}):", "            return None"]
    lines += reads
    if checks:
        lines += [f"        if {' or '.join(checks)}:", "            return None"]
    lines += _grid_lines(target.meta, binder.extent_names, extents)
    lines += _stream_lines(device, producers)
    if queries:
        lines += [f"        if {' or '.join(queries)}:", "            return None"]
    cta = ", ".join(str(d) for d in block.cta)
    lines.append(
        f"        WRITE(gx, gy, gz, {cta}, {block.dynamic_smem}, h, {', '.join(values)})"
        if values
        else f"        WRITE(gx, gy, gz, {cta}, {block.dynamic_smem}, h)"
    )
    lines += ["    except RETRY:", "        return None"]
    lines.append("    return LAUNCH(CONFIG, FUNCTION, PARAMS, None)")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<phobos.launch fast path for {binder.kernel}>", "exec"), namespace)
    function = namespace["try_launch"]
    function.source = source
    return function


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


def _grid_lines(meta: Mapping[str, int], names: Sequence[str], extents: Sequence[str]) -> list[str]:
    """A grid tuple, or the grid function called with the values and extents; then its limits."""
    entries = [f"{name!r}: {value!r}" for name, value in meta.items()]
    entries += [f"{name!r}: {e}" for name, e in zip(names, extents)]
    mx, my, mz = MAX_GRID
    return [
        "        if grid.__class__ is tuple and len(grid) == 1:",
        "            gx = grid[0]; gy = 1; gz = 1",
        f"            if gx.__class__ is not int or not 0 < gx <= {mx}:",
        "                return None",
        "        else:",
        "            g = grid if grid.__class__ is tuple else grid({" + ", ".join(entries) + "})",
        "            if g.__class__ is not tuple:",
        "                return None",
        "            n = len(g)",
        "            if n == 1:",
        "                gx = g[0]; gy = 1; gz = 1",
        "            elif n == 2:",
        "                gx, gy = g; gz = 1",
        "            elif n == 3:",
        "                gx, gy, gz = g",
        "            else:",
        "                return None",
        "            if not (gx.__class__ is int and gy.__class__ is int and gz.__class__ is int",
        f"                    and 0 < gx <= {mx} and 0 < gy <= {my} and 0 < gz <= {mz}):",
        "                return None",
    ]


def _stream_lines(device: int, producers: Sequence[str]) -> list[str]:
    """The launch stream; arrays made on another stream send the launch to the reference path."""
    lines = [
        "        if stream is None:",
        f"            h = CURRENT({device})",
        "        elif stream.__class__ is int:",
        "            h = stream",
        "        else:",
        "            h = HANDLE(stream)",
    ]
    if producers:
        legacy = LEGACY_DEFAULT_STREAM
        waits = " or ".join(
            f"({s} is not None and ({s} or {legacy}) != (h or {legacy}))" for s in producers
        )
        lines += [f"        if {waits}:", "            return None"]
    return lines
