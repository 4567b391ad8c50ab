"""The kernel's C parameters and the launch contract's slots, which mirror them.

Slot order is C-parameter order: the kernel's parameters in declaration order (a
tensor gives its pointer, then the stride of each axis the specialisation does
not fix), then the named extents in order of first appearance, then a TMA
descriptor for each tensor and box the kernel's TMA copies use (``__grid_constant__``,
so the copies read it where the launch put it).  Strides and
extents have the index type; a scalar keeps its dtype.  C names are made from the
parameter's position, never its spelling, so any identifier the language accepts
is a valid kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.contract import Slot
from phobos.compile.gpu import ir
from phobos.compile.gpu.cdtypes import ctype
from phobos.compile.ir import nodes as tir


@dataclass(frozen=True)
class Signature:
    """The C parameter list (``declarations``), its contract ``slots`` and the C names."""

    declarations: tuple[str, ...]
    slots: tuple[Slot, ...]
    pointers: dict[str, str]
    strides: dict[tuple[str, int], str]
    extents: dict[str, str]
    scalars: dict[str, str]
    tensor_maps: dict[tuple[str, tuple[int, ...]], str]

    def pointer(self, tensor: str) -> str:
        return self.pointers[tensor]

    def stride(self, tensor: str, axis: int) -> str:
        return self.strides.get((tensor, axis), "1")

    def extent(self, name: str) -> str:
        return self.extents[name]

    def extent_of(self, tensor: tir.TensorParam, axis: int) -> str:
        dim = tensor.dims[axis]
        return self.extents[dim] if isinstance(dim, str) else str(dim)

    def scalar(self, name: str) -> str:
        return self.scalars[name]

    def tensor_map(self, tensor: str, box: tuple[int, ...]) -> str:
        return self.tensor_maps[(tensor, box)]


def build_signature(kernel: ir.Kernel) -> Signature:
    index = f"i{kernel.index_width}"
    written = {
        op.tensor for op in kernel.walk() if isinstance(op, (ir.Store, ir.StoreUniform, ir.Atomic))
    }
    declarations: list[str] = []
    slots: list[Slot] = []
    pointers: dict[str, str] = {}
    strides: dict[tuple[str, int], str] = {}
    extents: dict[str, str] = {}
    scalars: dict[str, str] = {}
    for position, param in enumerate(kernel.params):
        if isinstance(param, tir.TensorParam):
            pointer = f"p{position}"
            pointers[param.name] = pointer
            const = "" if param.name in written else "const "
            declarations.append(f"{const}{ctype(param.dtype)}* __restrict__ {pointer}")
            slots.append(Slot("pointer", "u64", param.name))
            unit = kernel.unit_stride.get(param.name, False)
            for axis in range(param.rank):
                if unit and axis == param.rank - 1:
                    continue
                name = f"s{position}_{axis}"
                strides[(param.name, axis)] = name
                declarations.append(f"{ctype(index)} {name}")
                slots.append(Slot("stride", index, param.name, axis))
        else:
            name = f"a{position}"
            scalars[param.name] = name
            dtype = index if param.dtype == "index" else param.dtype
            declarations.append(f"{ctype(dtype)} {name}")
            slots.append(Slot("scalar", dtype, param.name))
    for position, extent in enumerate(kernel.extents):
        name = f"e{position}"
        extents[extent] = name
        declarations.append(f"{ctype(index)} {name}")
        slots.append(Slot("extent", index, extent))
    tensor_maps: dict[tuple[str, tuple[int, ...]], str] = {}
    positions = {p.name: i for i, p in enumerate(kernel.params)}
    for op in kernel.walk():
        if isinstance(op, ir.CopyTma) and (op.tensor, op.box) not in tensor_maps:
            name = f"m{positions[op.tensor]}_{len(tensor_maps)}"
            tensor_maps[(op.tensor, op.box)] = name
            declarations.append(f"const __grid_constant__ phobos::TensorMap {name}")
            slots.append(Slot("tensormap", "tmap", op.tensor, box=op.box))
    return Signature(
        tuple(declarations), tuple(slots), pointers, strides, extents, scalars, tensor_maps
    )
