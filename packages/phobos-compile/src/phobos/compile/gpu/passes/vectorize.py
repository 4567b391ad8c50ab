"""Vector widths of memory accesses, and which are provably aligned.

A load or store moves, per thread, runs of registers that hold consecutive
elements of the tensor's last axis (``Layout.contiguous_registers``); a run is
one vector access of up to 16 bytes where the tensor's last axis has unit stride
(the specialisation says so) and the base is aligned to the vector (the
specialisation's ``align``).  The run-time alignment test is dropped where the
window's start along the last axis is provably a multiple of the vector and the
tensor has no other axis whose stride could move a row off it (a 1-D tensor):
``saxpy``'s hot path is then two 16-byte loads, one 16-byte store and a bounds
compare per run.
"""

from __future__ import annotations

import math

from phobos.compile.gpu import ir
from phobos.compile.gpu.passes.cta import element_bytes

VECTOR_BYTES = 16


def vectorize(kernel: ir.Kernel) -> None:
    facts = Multiples(kernel)
    for op in kernel.walk():
        if isinstance(op, (ir.Load, ir.Store)):
            tile = (op.result if isinstance(op, ir.Load) else op.value).tile
            op.vector, op.aligned = _width(kernel, facts, op, tile)
        elif isinstance(op, ir.SharedStore):
            op.vector = 1


def _width(
    kernel: ir.Kernel, facts: Multiples, op: ir.Load | ir.Store, tile: ir.Tile
) -> tuple[int, bool]:
    tensor = kernel.tensors[op.tensor]
    last = len(op.lengths) - 1
    if op.lengths[last] is None or not kernel.unit_stride.get(op.tensor, False):
        return 1, False
    assert tile.layout is not None
    size = element_bytes(tensor.dtype)
    run = tile.layout.contiguous_registers(len(tile.shape) - 1)
    vector = max(1, min(run, VECTOR_BYTES // size, kernel.align.get(op.tensor, 1) // size))
    while op.lengths[last] % vector:
        vector //= 2
    if vector == 1:
        return 1, False
    start = facts.multiple(op.starts[last])
    aligned = len(op.lengths) == 1 and start % vector == 0
    return vector, aligned


class Multiples:
    """A number each uniform integer value is provably a multiple of (1: nothing known)."""

    def __init__(self, kernel: ir.Kernel) -> None:
        self.known: dict[ir.Value, int] = {}
        self.defs = ir.definitions(kernel)
        for op in kernel.walk():
            if isinstance(op, ir.For):
                start, _, step = op.operands[:3]
                self.known[op.body.args[0]] = math.gcd(self.multiple(start), self.multiple(step))

    def multiple(self, v: ir.Value) -> int:
        if v in self.known:
            return self.known[v]
        op = self.defs.get(v)
        out = 1
        if (
            isinstance(op, ir.Constant)
            and not isinstance(op.value, bool)
            and float(op.value).is_integer()
        ):
            out = abs(int(op.value)) or 1 << 30
        elif isinstance(op, ir.Binary) and op.op in ("mul", "add", "sub", "shl"):
            left, right = (self.multiple(o) for o in op.operands)
            if op.op == "mul":
                out = left * right
            elif op.op == "shl":
                shift = self.defs.get(op.operands[1])
                out = left << int(shift.value) if isinstance(shift, ir.Constant) else left
            else:
                out = math.gcd(left, right)
        elif isinstance(op, ir.Cast) and v.dtype[0] in "iu":
            out = self.multiple(op.operands[0])
        self.known[v] = out
        return out
