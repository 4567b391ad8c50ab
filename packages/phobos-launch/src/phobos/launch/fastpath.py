"""The launch fast path: one signature's checks, packing and driver call as straight-line Python.

Host time per launch is a first-class figure, and a loop over parameters and slots
costs more than the driver call it feeds.  For each call signature, GPU and thread,
``compile_fast_launch`` writes, from the signature's ``LaunchTable`` (table.py, which
the native path reads too), a function that reads every array once with the
cheapest accessors its type has, tests every check the reference binder makes as
boolean expressions (the driver's answer about CAI pointers last), packs the launch
block with one ``pack_into`` and calls ``cuLaunchKernelEx``.  It returns 0 when it
launched, the CUresult when the driver refused (nothing launched), and ``None`` when
a check fails or it cannot tell: the caller then takes the reference path, which
raises the ``LaunchError`` that explains it.  So the fast path only decides how
quickly a good launch goes, never what a bad one says.

It does not ask the driver which context is current: a launch of a function loaded
in a context that is not current is refused (``CUDA_ERROR_INVALID_HANDLE``), and
the caller then makes the right context current and launches again.  Each keeps its
source as its ``source`` attribute.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence

from phobos.launch.arrays import INDEX32_LIMIT, ArrayProtocolError, read_cai
from phobos.launch.binder import Source
from phobos.launch.dtypes import from_typestr
from phobos.launch.errors import LaunchError
from phobos.launch.grid import MAX_GRID
from phobos.launch.streams import LEGACY_DEFAULT_STREAM
from phobos.launch.table import Exact, FastLaunch, LaunchTable, Read

# What reading or packing may raise on arguments that the reference binder then explains
# (a scalar reader's LaunchError too: the reference path raises it where the caller sees it).
RETRY_SLOWLY = (struct.error, OverflowError, ArrayProtocolError, KeyError, LaunchError)

_EXACT = {Exact.FLOAT: "float", Exact.INT: "int", Exact.BOOL: "bool"}


def compile_fast_launch(table: LaunchTable, name: str) -> FastLaunch:
    """The generated-Python fast path made from ``table`` (for kernel ``name``)."""
    block = table.block
    namespace: dict[str, object] = {
        "LIMIT": INDEX32_LIMIT,
        "RETRY": RETRY_SLOWLY,
        "GET_IDENT": threading.get_ident,
        "OWNER": table.owner,
        "OTHER_THREAD": table.other_thread,
        "CURRENT": table.current_stream,
        "HANDLE": table.stream_handle,
        "WRITE": block.write,
        "LAUNCH": table.launch_function,
        "CONFIG": block.config,
        "FUNCTION": table.function_handle,
        "PARAMS": block.kernel_params,
        "READ_CAI": read_cai,
        "DEVICE": table.pointer_device,
    }
    device = table.device
    params = [f"a{i}" for i in range(table.nargs)]
    lines = [
        "def try_launch(grid, args, stream):",
        "    if GET_IDENT() != OWNER:",
        "        return OTHER_THREAD(grid, args, stream)",
        f"    if len(args) != {table.nargs}:",
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
    for i in range(table.ntensors):
        entry = table.tensors[i]
        arg, p, s, t = f"a{entry.position}", f"p{i}", f"s{i}", f"t{i}"
        namespace[f"T{i}"] = entry.type
        namespace[f"D{i}"] = entry.dtype
        types.append(f"{arg}.__class__ is T{i}")
        if entry.read == Read.TORCH:
            shapes.append(f"        {s} = {arg}.shape")
            gate.append(f"{arg}.dtype is D{i}")
            reads.append(f"        {p} = {arg}.data_ptr()")
            if entry.needs_strides:
                reads.append(f"        {t} = {arg}.stride()")
            checks.append(f"{arg}.get_device() != {device}")
            if entry.check_contiguous:
                checks.append(f"not {arg}.is_contiguous()")
        else:
            namespace[f"D{i}"] = from_typestr(f"<{entry.dtype}")
            shapes.append(f"        {p}, {s}, {t}, d{i}, _, r{i}, st{i} = READ_CAI({arg})")
            gate += [f"d{i} == D{i}", f"{p} != 0"] + ([f"not r{i}"] if entry.written else [])
            producers.append(f"st{i}")
            queries.append(f"DEVICE({p}) != {device}")
        gate.append(f"len({s}) == {entry.rank}")
        if entry.align > 1:
            checks.append(f"{p} % {entry.align}")
        if entry.unit_stride and entry.needs_strides:
            checks.append(f"({t}[-1] != 1 and {s}[-1] > 1)")
        for a in range(entry.rank - 1) if entry.row_words > 1 else ():
            checks.append(f"({t}[{a}] % {entry.row_words} and {s}[{a}] > 1)")
        if entry.span_check:
            span = " + ".join(
                f"({s}[{a}] - 1 if {s}[{a}] > 1 else 0) * abs({t}[{a}])" for a in range(entry.rank)
            )
            checks.append(f"{span} >= LIMIT")

    extents = [f"e{e}" for e in range(table.nextents)]
    for e, c in zip(extents, table.extent_sources):
        reads.append(f"        {e} = s{c.tensor}[{c.axis}]")
    checks += [
        f"s{c.tensor}[{c.axis}] != e{c.value}" for c in table.extent_checks[: table.nextent_checks]
    ]
    checks += [
        f"s{c.tensor}[{c.axis}] != {c.value}" for c in table.literal_checks[: table.nliteral_checks]
    ]
    if table.index32:
        checks += [f"{e} >= LIMIT" for e in extents]

    values = []
    for slot in table.slots[: table.nslots]:
        a = slot.a
        if slot.source == Source.POINTER:
            values.append(f"p{a}")
        elif slot.source == Source.STRIDE:
            values.append(f"t{a}[{slot.b}]")
        elif slot.source == Source.EXTENT:
            values.append(f"e{a}")
        elif slot.source == Source.TENSORMAP:  # the descriptor, made once per array layout
            namespace[f"M{slot.b}"] = slot.reader
            values.append(f"M{slot.b}(p{a}, s{a}, t{a})")
        else:
            namespace[f"R{a}"] = slot.reader
            exact = _EXACT.get(Exact(slot.exact))
            value = f"R{a}(a{a})"
            values.append(
                value if exact is None else f"(a{a} if a{a}.__class__ is {exact} else {value})"
            )

    if types:
        lines += [f"    if not ({' and '.join(types)}):", "        return None"]
    lines.append("    try:")
    lines += shapes
    if gate:
        lines += [f"        if not ({' and '.join(gate)}):", "            return None"]
    lines += reads
    if checks:
        lines += [f"        if {' or '.join(checks)}:", "            return None"]
    lines += _grid_lines(table.meta, table.extent_names, extents)
    lines += _stream_lines(device, producers)
    if queries:
        lines += [f"        if {' or '.join(queries)}:", "            return None"]
    head = f"gx, gy, gz, {', '.join(str(d) for d in block.cta)}, {block.dynamic_smem}, h"
    lines.append(f"        WRITE({', '.join([head, *values])})")
    lines += ["    except RETRY:", "        return None"]
    lines.append("    return LAUNCH(CONFIG, FUNCTION, PARAMS, None)")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<phobos.launch fast path for {name}>", "exec"), namespace)
    function = namespace["try_launch"]
    function.source = source  # type: ignore[attr-defined]
    return function  # type: ignore[return-value]


def _grid_lines(meta: dict[str, int], names: Sequence[str], extents: Sequence[str]) -> list[str]:
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
