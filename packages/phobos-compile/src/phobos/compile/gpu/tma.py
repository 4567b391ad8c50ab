"""Where a window copy may go by TMA: what a tensor descriptor and a swizzled box need.

The tensor memory accelerator copies a box of a tensor into shared memory in one
instruction, swizzled as ``wgmma`` reads it, with the bytes outside the tensor zero
(what absent lanes mean for a product).  A descriptor needs a base on 16 bytes, a
unit last stride and every other stride a multiple of 16 bytes: the specialisation's
``align``, ``unit_stride`` and ``row_align``, so a launch whose arrays break them
takes another variant.  A box is at most 256 rows and one swizzle atom wide (the
buffer's swizzle width, 32 to 128 bytes), so a buffer of several atoms takes one copy
each.  The window's tile must be the tensor's last two axes (the columns the unit-
stride one); the axes before are single indices (a box of 1), five axes at most.
Coordinates are 32-bit: 64-bit variants copy with ``cp.async``.
"""

from __future__ import annotations

from phobos.compile.gpu import ir
from phobos.compile.gpu.arch import capability

ROW_BYTES = 16  # what TMA needs of the base and of every stride but the last
MAX_BOX = 256
MAX_RANK = 5


def tma_box(kernel: ir.Kernel, copy: ir.CopyAsync, buffer: ir.Shared) -> tuple[int, ...] | None:
    """The box (one extent an axis of the tensor, 1 where the window takes an index) of
    each TMA copy that ``copy`` becomes, when TMA may do it; else None."""
    layout = buffer.layout
    tensor = copy.tensor
    lengths = copy.lengths
    if not (
        capability(kernel.arch) >= 90
        and kernel.index_width == 32
        and 2 <= len(lengths) <= MAX_RANK
        and all(n is None for n in lengths[:-2])
        and kernel.unit_stride.get(tensor, False)
        and kernel.align.get(tensor, 1) >= ROW_BYTES
        and kernel.row_align.get(tensor, 1) >= ROW_BYTES
        and layout.kind == "swizzled"
        and layout.element_bytes == 2
        and layout.width in (32, 64, 128)
        and (layout.rows, layout.cols) == lengths[-2:]
        and layout.rows % 8 == 0
        and layout.rows <= MAX_BOX
    ):
        return None
    return (1,) * (len(lengths) - 2) + (layout.rows, layout.width // layout.element_bytes)


def atoms(buffer: ir.Shared) -> int:
    """How many boxes fill one stage of ``buffer``."""
    layout = buffer.layout
    return layout.cols * layout.element_bytes // layout.width
