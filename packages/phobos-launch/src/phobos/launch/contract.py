"""The launch contract as the launcher reads it.

The format is stated once, in ``contract.schema.json`` beside this module (a JSON
Schema; docs/contract.md).  phobos-launch depends on nothing but the standard library,
so it reads the JSON itself and checks here what it needs, including what a schema
cannot say; tests/test_contract_schema.py holds this reader, and the compiler's
``Contract``, to the schema.

Reading a contract also checks it, so that a malformed contract fails when it is
loaded, with the field named, not in the middle of a launch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phobos.launch.dtypes import ITEMSIZE, SLOT_ITEMSIZE, TENSOR_MAP
from phobos.launch.errors import ContractError
from phobos.launch.tensormaps import DATA_TYPE, SWIZZLE

FORMAT_VERSION = 2  # 2: tensormap slots; a format-1 contract (without them) reads as ever
READABLE_VERSIONS = (1, 2)
SLOT_KINDS = ("pointer", "stride", "extent", "scalar", "tensormap")


@dataclass(frozen=True)
class Slot:
    """One C parameter of the kernel: what it holds (``kind``) and its C type."""

    kind: str
    type: str
    param: str
    axis: int | None = None
    box: tuple[int, ...] | None = None  # a tensormap's box: an extent an axis


@dataclass(frozen=True)
class TensorParam:
    """A tensor parameter and what the compiled code assumes about it."""

    name: str
    dtype: str
    dims: tuple[str | int, ...]
    written: bool
    align: int
    unit_stride: bool
    row_align: int = 1  # bytes every stride but the last axis's is a multiple of


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: str


@dataclass(frozen=True)
class LaunchContract:
    """The fields of ``phobos.compile.contract.Contract`` that a launch needs."""

    kernel: str
    entry: str
    arch: str
    index_width: int
    block: tuple[int, int, int]
    dynamic_smem: int
    static_smem: int
    values: Mapping[str, int]
    tensors: tuple[TensorParam, ...]
    scalars: tuple[ScalarParam, ...]
    slots: tuple[Slot, ...]
    params: tuple[str, ...]  # parameter names in the order a launch takes its arguments

    def tensor(self, name: str) -> TensorParam | None:
        return next((t for t in self.tensors if t.name == name), None)

    def scalar(self, name: str) -> ScalarParam | None:
        return next((s for s in self.scalars if s.name == name), None)


def read_contract(source: str | Mapping[str, Any]) -> LaunchContract:
    """Read and check a contract given as JSON text or as the parsed dict."""
    if isinstance(source, str):
        try:
            raw = json.loads(source)
        except json.JSONDecodeError as exc:
            raise ContractError(f"the launch contract is not valid JSON: {exc}") from None
    else:
        raw = source
    if not isinstance(raw, Mapping):
        raise ContractError(f"a launch contract is a JSON object, got {type(raw).__name__}")
    version = raw.get("format_version")
    if version not in READABLE_VERSIONS:
        raise ContractError(
            f"launch contract format {version} is not one this phobos-launch reads "
            f"({', '.join(map(str, READABLE_VERSIONS))}); recompile the kernel with a matching "
            "phobos-compile"
        )
    try:
        contract = _build(raw)
    except (KeyError, TypeError, ValueError) as exc:
        detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ContractError(f"malformed launch contract: {detail}") from None
    _check(contract)
    return contract


def _build(raw: Mapping[str, Any]) -> LaunchContract:
    tensors = tuple(
        TensorParam(
            name=t["name"],
            dtype=t["dtype"],
            dims=tuple(t["dims"]),
            written=bool(t["written"]),
            align=int(t.get("align", 1)),
            unit_stride=bool(t.get("unit_stride", False)),
            row_align=int(t.get("row_align", 1)),
        )
        for t in raw["tensors"]
    )
    scalars = tuple(ScalarParam(name=s["name"], dtype=s["dtype"]) for s in raw["scalars"])
    slots = tuple(
        Slot(
            kind=s["kind"],
            type=s["type"],
            param=s["param"],
            axis=s.get("axis"),
            box=tuple(int(b) for b in s["box"]) if s.get("box") is not None else None,  # type: ignore[arg-type]
        )
        for s in raw["slots"]
    )
    block = tuple(int(b) for b in raw["block"])
    if len(block) != 3:
        raise ValueError(f"block must have 3 entries, got {list(block)}")
    return LaunchContract(
        kernel=str(raw["kernel"]),
        entry=str(raw["entry"]),
        arch=str(raw["arch"]),
        index_width=int(raw["index_width"]),
        block=block,  # type: ignore[arg-type]
        dynamic_smem=int(raw["dynamic_smem"]),
        static_smem=int(raw["static_smem"]),
        values={str(k): int(v) for k, v in raw["values"].items()},
        tensors=tensors,
        scalars=scalars,
        slots=slots,
        params=tuple(raw.get("params", ())) or _order_of_first_slots(slots, tensors, scalars),
    )


def _order_of_first_slots(
    slots: tuple[Slot, ...], tensors: tuple[TensorParam, ...], scalars: tuple[ScalarParam, ...]
) -> tuple[str, ...]:
    """Parameter order for contracts without ``params``: as their slots first appear."""
    names = {t.name for t in tensors} | {s.name for s in scalars}
    order = [s.param for s in slots if s.kind in ("pointer", "scalar")]
    order += [t.name for t in tensors] + [s.name for s in scalars]
    return tuple(n for n in dict.fromkeys(order) if n in names)


def _check(c: LaunchContract) -> None:
    def fail(message: str) -> None:
        raise ContractError(f"malformed launch contract for {c.kernel}: {message}")

    if c.index_width not in (32, 64):
        fail(f"index_width must be 32 or 64, got {c.index_width}")
    if any(b < 1 for b in c.block) or c.block[0] * c.block[1] * c.block[2] > 1024:
        fail(f"block {list(c.block)} is not a CTA size of 1 to 1024 threads")
    if c.dynamic_smem < 0 or c.static_smem < 0:
        fail("shared memory sizes must not be negative")
    declared = [t.name for t in c.tensors] + [s.name for s in c.scalars]
    if sorted(c.params) != sorted(declared):
        fail(f"params {list(c.params)} do not list the tensors and scalars {declared}")
    extents = set()
    for t in c.tensors:
        if t.dtype not in ITEMSIZE:
            fail(f"tensor {t.name} has unknown dtype {t.dtype!r}")
        for what, value in (("align", t.align), ("row_align", t.row_align)):
            if value < 1 or value & (value - 1):
                fail(f"tensor {t.name} has {what} {value}, not a power of two")
        extents.update(d for d in t.dims if isinstance(d, str))
    for s in c.scalars:
        if s.dtype not in ITEMSIZE:
            fail(f"scalar {s.name} has unknown dtype {s.dtype!r}")
    for i, slot in enumerate(c.slots):
        where = f"slot {i} ({slot.kind} {slot.param})"
        if slot.kind not in SLOT_KINDS:
            fail(f"{where}: kind must be one of {', '.join(SLOT_KINDS)}")
        if slot.type not in SLOT_ITEMSIZE:
            fail(f"{where}: unknown type {slot.type!r}")
        if (slot.kind == "tensormap") != (slot.type == TENSOR_MAP):
            fail(f"{where}: a tensormap slot, and only one, has type {TENSOR_MAP}")
        if slot.kind == "extent" and slot.param not in extents:
            fail(f"{where}: no tensor has an extent named {slot.param}")
        if slot.kind == "scalar" and c.scalar(slot.param) is None:
            fail(f"{where}: no scalar parameter named {slot.param}")
        if slot.kind in ("pointer", "stride", "tensormap"):
            tensor = c.tensor(slot.param)
            if tensor is None:
                fail(f"{where}: no tensor parameter named {slot.param}")
            elif slot.kind == "tensormap" and not (
                2 <= len(tensor.dims) <= 5
                and slot.box is not None
                and len(slot.box) == len(tensor.dims)
                and all(1 <= b <= 256 for b in slot.box)
                and tensor.dtype in DATA_TYPE
                and slot.box[-1] * ITEMSIZE[tensor.dtype] in SWIZZLE
            ):
                fail(f"{where}: box {slot.box} is no TMA box of {slot.param}")
            elif slot.kind == "stride" and not (
                isinstance(slot.axis, int) and 0 <= slot.axis < len(tensor.dims)
            ):
                fail(f"{where}: axis {slot.axis} is not an axis of {slot.param}")
        if slot.kind in ("stride", "extent") and slot.type not in ("i32", "i64"):
            fail(f"{where}: {slot.kind}s are i32 or i64, not {slot.type}")
