"""The launch contract: everything a launcher needs to run a compiled kernel.

It is written as JSON beside the PTX and cubin (``NAME.contract.json``) and is
the whole interface between the compiler and ``phobos.launch``, which reads the
JSON itself (it depends on nothing but the standard library).  The layout is
documented in docs/contract.md; ``FORMAT_VERSION`` changes with any change to it.

Parameter slots are the kernel's C parameters, in order.  Each slot says what it
holds and where the launcher gets it:

* ``pointer``: the device address of tensor ``param`` (8 bytes).
* ``stride``: the stride, in elements, of axis ``axis`` of tensor ``param``.
* ``extent``: the value of the named extent ``param`` (``N``).
* ``scalar``: the value of scalar parameter ``param``.
* ``tensormap``: a TMA descriptor of tensor ``param`` (``CUtensorMap``, 128 bytes) for
  copies of a ``box`` (an extent an axis, outermost first), swizzled by the bytes of
  the box's rows.

``type`` is the slot's C type as a Phobos dtype: "u64" for pointers, "i32" or
"i64" (the index width) for strides and extents, the parameter's dtype for scalars,
"tmap" for descriptors.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

FORMAT_VERSION = 2  # 2: tensormap slots and row_align (format 1 reads as ever)
READABLE_VERSIONS = (1, 2)


@dataclass(frozen=True)
class Slot:
    kind: str  # "pointer" | "stride" | "extent" | "scalar" | "tensormap"
    type: str
    param: str
    axis: int | None = None
    box: tuple[int, ...] | None = None  # a tensormap's box: an extent an axis


@dataclass(frozen=True)
class TensorSpec:
    """A tensor parameter and the specialisation the code assumes for it."""

    name: str
    dtype: str
    dims: tuple[str | int, ...]
    read: bool
    written: bool
    align: int = 1  # the base address is a multiple of this many bytes
    unit_stride: bool = False  # the last axis has stride 1
    row_align: int = 1  # every other axis's stride is a multiple of this many bytes


@dataclass(frozen=True)
class ScalarSpec:
    name: str
    dtype: str


@dataclass(frozen=True)
class Contract:
    kernel: str
    entry: str  # the symbol in the PTX/cubin
    arch: str  # "sm_90", "sm_90a", "sm_80", ...
    index_width: int  # 32 or 64
    block: tuple[int, int, int]  # the CTA size
    dynamic_smem: int
    static_smem: int
    values: dict[str, int]  # the variant's compile-time values
    tensors: tuple[TensorSpec, ...]
    scalars: tuple[ScalarSpec, ...]
    slots: tuple[Slot, ...]
    source_file: str = ""
    format_version: int = field(default=FORMAT_VERSION)
    # The kernel's parameter names in declaration order (the order a launch takes its
    # arguments). Empty: the order in which the parameters' first slots appear.
    params: tuple[str, ...] = ()

    @property
    def written(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tensors if t.written)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Contract:
        raw = json.loads(text)
        version = raw.get("format_version")
        if version not in READABLE_VERSIONS:
            raise ValueError(
                f"launch contract format {version} is not one of {READABLE_VERSIONS}; recompile the "
                "kernel"
            )
        return cls(
            kernel=raw["kernel"],
            entry=raw["entry"],
            arch=raw["arch"],
            index_width=raw["index_width"],
            block=tuple(raw["block"]),
            dynamic_smem=raw["dynamic_smem"],
            static_smem=raw["static_smem"],
            values=dict(raw["values"]),
            tensors=tuple(TensorSpec(**{**t, "dims": tuple(t["dims"])}) for t in raw["tensors"]),
            scalars=tuple(ScalarSpec(**s) for s in raw["scalars"]),
            slots=tuple(
                Slot(**{**s, "box": tuple(s["box"]) if s.get("box") else None})
                for s in raw["slots"]
            ),
            source_file=raw.get("source_file", ""),
            format_version=version,
            params=tuple(raw.get("params", ())),
        )
