"""A window copy wholly inside its tensor, on 16 bytes, copies without tests.

A checked ``copy_async`` tests each of its 16-byte groups: inside the tensor along
every axis, and aligned (a row stride that is not a whole number of groups moves a
row off 16 bytes); a group that fails is copied lane by lane, with zeros outside.
In matmul's k-loop those tests, a branch per group, are most of what the threads
issue between two products.  Every window away from the tensor's edges passes all of
them together, so this pass tests the window once (a test every thread of the CTA
agrees on) and copies it with bare ``cp.async`` when it passes
(``checked=False, aligned=True``); the tested copy stays for the windows at an edge.

It applies where the specialisation gives the tensor a unit-stride last axis and a
base on 16 bytes; the window's start along the last axis and the other axes' strides
must be whole groups, which the test checks at run time (the strides only where the
specialisation does not already put every row on 16 bytes, ``row_align``).
"""

from __future__ import annotations

from phobos.compile.gpu import ir
from phobos.compile.gpu.builder import Builder
from phobos.compile.gpu.passes.cta import element_bytes

_GROUP_BYTES = 16


def split_interior_copies(kernel: ir.Kernel) -> None:
    copies = [
        (block, op)
        for block in _blocks(kernel.body)
        for op in block.ops
        if isinstance(op, ir.CopyAsync) and _applies(kernel, op)
    ]
    for block, op in copies:
        _split(kernel, block, op)


def _blocks(block: ir.Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)


def _applies(kernel: ir.Kernel, op: ir.CopyAsync) -> bool:
    group = _GROUP_BYTES // element_bytes(kernel.tensors[op.tensor].dtype)
    last = op.lengths[-1]
    return (
        op.checked
        and kernel.unit_stride.get(op.tensor, False)
        and kernel.align.get(op.tensor, 1) >= _GROUP_BYTES
        and last is not None
        and last % group == 0
    )


def _split(kernel: ir.Kernel, block: ir.Block, op: ir.CopyAsync) -> None:
    """``if window inside and on 16 bytes: copy untested, else: the tested copy``."""
    tensor = kernel.tensors[op.tensor]
    group = _GROUP_BYTES // element_bytes(tensor.dtype)
    index = f"i{kernel.index_width}"
    test = ir.Block()
    b = Builder(test)
    b.span = op.span
    zero = b.constant(0, index)
    whole: ir.Value | None = None
    starts = op.operands[1 : 1 + len(op.lengths)]
    for axis, (start, length) in enumerate(zip(starts, op.lengths)):
        dim = tensor.dims[axis]
        extent = (
            b.value(ir.Extent(extent=dim), ir.Uniform(index), name=dim)
            if isinstance(dim, str)
            else b.constant(dim, index)
        )
        start = b.cast(start, index)
        whole = b.land(whole, b.binary("ge", start, zero, "bool"))
        if length is None:
            whole = b.land(whole, b.binary("lt", start, extent, "bool"))
        else:
            room = b.binary("sub", extent, b.constant(length, index))
            whole = b.land(whole, b.binary("le", start, room, "bool"))
        words = b.constant(group, index)
        if axis == len(op.lengths) - 1:
            offset = b.binary("mod", start, words)
        elif kernel.row_align.get(op.tensor, 1) >= _GROUP_BYTES:
            continue  # the specialisation puts every row on 16 bytes
        else:
            stride = b.value(ir.Stride(tensor=op.tensor, axis=axis), ir.Uniform(index))
            offset = b.binary("mod", stride, words)
        whole = b.land(whole, b.binary("eq", offset, zero, "bool"))
    assert whole is not None
    bare = ir.CopyAsync(
        tensor=op.tensor,
        lengths=op.lengths,
        layout=op.layout,
        checked=False,
        aligned=True,
        operands=list(op.operands),
        span=op.span,
    )
    split = ir.If(
        operands=[whole],
        regions=[ir.Block(ops=[bare, ir.Yield()]), ir.Block(ops=[op, ir.Yield()])],
        span=op.span,
    )
    test.ops.append(split)
    at = block.ops.index(op)
    block.ops[at : at + 1] = test.ops
