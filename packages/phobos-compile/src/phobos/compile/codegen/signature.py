"""The kernel's C parameters and the launch contract's slots, which mirror them.

Slot order is C-parameter order: the kernel's parameters in declaration order (a
tensor gives its pointer, then the stride of each axis the specialisation does
not fix), then the named extents in order of first appearance.  Strides and
extents have the index type; a scalar keeps its dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.codegen.dtypes import INDEX_CTYPE, ctype
from phobos.compile.codegen.specialization import Specialization
from phobos.compile.contract import Slot
from phobos.compile.ir import nodes as ir


def pointer_name(tensor: ir.TensorParam) -> str:
    return f"p_{tensor.name}"


def extent_name(extent: str) -> str:
    return f"e_{extent}"


def scalar_name(param: ir.ScalarParam) -> str:
    return f"a_{param.name}"


@dataclass(frozen=True)
class TensorAccess:
    """How generated code reaches one tensor: its pointer, strides and extents as C expressions."""

    tensor: ir.TensorParam
    unit_stride: bool
    align: int

    @property
    def pointer(self) -> str:
        return pointer_name(self.tensor)

    def stride(self, axis: int) -> str:
        if self.unit_stride and axis == self.tensor.rank - 1:
            return "1"
        return f"s_{self.tensor.name}_{axis}"

    def extent(self, axis: int) -> str:
        dim = self.tensor.dims[axis]
        return extent_name(dim) if isinstance(dim, str) else f"{INDEX_CTYPE}({dim})"


@dataclass(frozen=True)
class Signature:
    """The C parameter list (``declarations``) and its contract ``slots``."""

    declarations: tuple[str, ...]
    slots: tuple[Slot, ...]
    access: dict[str, TensorAccess]


def build_signature(kernel: ir.Kernel, spec: Specialization, written: frozenset[str]) -> Signature:
    index_dtype = f"i{spec.index_width}"
    declarations: list[str] = []
    slots: list[Slot] = []
    access: dict[str, TensorAccess] = {}
    for param in kernel.params:
        if isinstance(param, ir.TensorParam):
            facts = spec.tensor(param.name)
            tensor = TensorAccess(param, facts.unit_stride, facts.align)
            access[param.name] = tensor
            const = "" if param.name in written else "const "
            declarations.append(f"{const}{ctype(param.dtype)}* {tensor.pointer}")
            slots.append(Slot("pointer", "u64", param.name))
            for axis in range(param.rank):
                stride = tensor.stride(axis)
                if stride != "1":
                    declarations.append(f"{INDEX_CTYPE} {stride}")
                    slots.append(Slot("stride", index_dtype, param.name, axis))
        else:
            declarations.append(f"{ctype(param.dtype)} {scalar_name(param)}")
            slot_type = index_dtype if param.dtype == "index" else param.dtype
            slots.append(Slot("scalar", slot_type, param.name))
    for extent in kernel.extents:
        declarations.append(f"{INDEX_CTYPE} {extent_name(extent)}")
        slots.append(Slot("extent", index_dtype, extent))
    return Signature(tuple(declarations), tuple(slots), access)
