"""The launch fast path: one plan's checks and slot packing compiled into straight-line Python.

Host time per launch is a first-class figure, and a loop over parameters and slots
costs more than the driver call it feeds.  For each plan (a call signature) this
module writes a function that reads every array once with the accessors its type
has, tests every check the reference binder makes as one boolean expression, and
packs the parameter block with one ``write`` call.  It returns ``None`` whenever
a check fails: the caller then runs the reference binder, which raises the
``LaunchError`` that explains it.  So the fast path only decides how quickly a
good launch goes, never what a bad one says.

Generated for saxpy on torch tensors (``tensor<f32>[N]`` ×3, ``alpha: f32``)::

    def bind_fast(args, write):
        if len(args) != 4:
            return None
        a0, a1, a2, a3, = args
        if not (a0.__class__ is T0 and a1.__class__ is T1 and a2.__class__ is T2):
            return None
        s0 = a0.shape; s1 = a1.shape; s2 = a2.shape
        if not (a0.is_cuda and a0.dtype is D0 and len(s0) == 1 and ...):
            return None
        p0 = a0.data_ptr(); t0 = a0.stride(); ...
        e0 = s0[0]
        device = a0.get_device()
        if (p0 % 16 or (t0[-1] != 1 and s0[-1] != 1) or s1[0] != e0 or ...):
            return None
        write(p0, p1, p2, e0, a3 if a3.__class__ is float else R3(a3))
        return device, (e0,), (), PLAN
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from phobos.launch.arrays import read_cai, read_torch
from phobos.launch.binder import EXTENT, INDEX32_LIMIT, POINTER, STRIDE, ArgumentBinder, Plan
from phobos.launch.dtypes import from_torch

FastBinder = Callable[[Sequence[Any], Callable[..., None]], Any]

# Scalars of these slot types whose argument is already of this Python type are packed as is.
_EXACT_SCALAR = {"f16": "float", "f32": "float", "f64": "float", "bool": "bool"}


def compile_fast_binder(
    binder: ArgumentBinder, plan: Plan, args: Sequence[Any]
) -> FastBinder | None:
    """The fast path for ``plan``, or ``None`` when there is none for its argument types.

    ``args`` are arguments that passed the reference checks with ``plan``; they
    supply the types and torch dtype objects the fast path compares by identity.
    The function returns ``(device, extents, producer streams, plan)`` or ``None``.
    """
    namespace: dict[str, Any] = {"LIMIT": INDEX32_LIMIT, "PLAN": plan}
    params = [f"a{i}" for i in range(binder.count)]
    head = [f"    if len(args) != {binder.count}:", "        return None"]
    if params:
        head.append(f"    {', '.join(params)}, = args")
    types: list[str] = []  # the call signature's tensor types, compared by identity
    shapes: list[str] = []
    gate: list[str] = []  # tested before any shape is indexed
    reads: list[str] = []
    checks: list[str] = []
    producers: list[str] = []
    for i, (check, reader) in enumerate(zip(binder.tensors, plan.readers)):
        arg = f"a{check.position}"
        p, s, t = f"p{i}", f"s{i}", f"t{i}"
        namespace[f"T{i}"] = type(args[check.position])
        types.append(f"{arg}.__class__ is T{i}")
        if reader is read_torch:
            dtype = args[check.position].dtype
            if from_torch(dtype) != check.dtype:
                return None
            namespace[f"D{i}"] = dtype
            reads_shape = f"    {s} = {arg}.shape"
            gate += [f"{arg}.is_cuda", f"{arg}.dtype is D{i}"]
            reads.append(f"    {p} = {arg}.data_ptr(); {t} = {arg}.stride()")
            device = f"{arg}.get_device()"
        elif reader is read_cai:
            namespace[f"READ{i}"] = read_cai
            namespace[f"DEVICE{i}"] = partial(binder.device_of, check)
            reads_shape = f"    {p}, {s}, {t}, d{i}, _, r{i}, st{i} = READ{i}({arg})"
            gate += [f"d{i} == {check.dtype!r}", f"{p} != 0"]
            if check.written:
                gate.append(f"not r{i}")
            producers.append(f"st{i}")
            device = f"DEVICE{i}({p})"
        else:
            return None
        shapes.append(reads_shape)
        gate.append(f"len({s}) == {check.rank}")
        if check.align > 1:
            checks.append(f"{p} % {check.align}")
        if check.unit_stride:
            checks.append(f"({t}[-1] != 1 and {s}[-1] != 1)")
        if i == 0:
            reads.append(f"    device = {device}")
        else:
            checks.append(f"{device} != device")
        if binder.index32 and not (check.rank == 1 and check.unit_stride):
            span = " + ".join(
                f"({s}[{a}] - 1 if {s}[{a}] > 1 else 0) * abs({t}[{a}])" for a in range(check.rank)
            )
            checks.append(f"{span} >= LIMIT")

    extents = [f"e{e}" for e in range(len(binder.extent_names))]
    reads += [f"    e{e} = s{t}[{a}]" for e, (t, a) in enumerate(binder.extent_sources)]
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

    if not binder.tensors:
        reads.append("    device = None")
    returned = f"({', '.join(producers)},)" if producers else "()"
    if producers:
        returned = f"tuple(s for s in {returned} if s is not None)"
    lines = ["def bind_fast(args, write):", *head]
    if types:
        lines += [f"    if not ({' and '.join(types)}):", "        return None"]
    lines += shapes
    if gate:
        lines += [f"    if not ({' and '.join(gate)}):", "        return None"]
    lines += reads
    if checks:
        lines += [f"    if {' or '.join(checks)}:", "        return None"]
    lines.append(f"    write({', '.join(values)})")
    extent_tuple = f"({', '.join(extents)},)" if extents else "()"
    lines.append(f"    return device, {extent_tuple}, {returned}, PLAN")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<phobos.launch fast path for {binder.kernel}>", "exec"), namespace)
    function = namespace["bind_fast"]
    function.source = source
    return function
