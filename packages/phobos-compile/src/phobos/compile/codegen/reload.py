"""Tiles reloaded where a loop reads them instead of held in registers across it.

A ``let`` tile defined before a loop and read inside it stays live for the whole
loop: layer norm's backward holds ``weight = f32(w[0 :+ BLOCK_N])`` beside its two
running sums, and over 16384 columns that no longer fits the register file.
When the tile is only a window of a tensor the kernel never writes, converted or
combined elementwise with block-uniform values fixed before the loop, reading
it again from memory (an L1 or L2 hit after the first row) gives the same lanes
at every use and frees its registers; Triton's tutorial reloads ``w`` per row
the same way.  Such a variable is not emitted where it is defined; each read
emits its definition again (see ``expressions.tile``).

A ``let`` inside a loop body that is a window of an unwritten tensor and is read
only as ``dot`` operands (the attention backward's ``queries``, ``grad`` and
``keys``) is reloaded the same way: each dot then copies the window straight to
shared memory with ``cp.async`` (``dot.py``) instead of loading it into registers
once and storing those registers for every dot that reads it.
"""

from __future__ import annotations

from phobos.compile.codegen.walk import walk
from phobos.compile.ir import nodes as ir

_ELEMENTWISE = (ir.Unary, ir.Binary, ir.Math, ir.Cast, ir.Select, ir.Splat)
_UNIFORM = (ir.Const, ir.ScalarArg, ir.Extent, ir.CtxValue)


def reloaded_tiles(body: tuple[ir.Stmt, ...], written: frozenset[str]) -> dict[str, ir.Expr]:
    """Each ``let`` tile that only loops read and that can be read again: its definition."""
    definitions = {
        n.var.name: n.value
        for n in body
        if isinstance(n, ir.Define) and isinstance(n.var.type, ir.TileT) and not n.var.mutable
    }
    inside_loops: set[str] = set()
    for loop in (n for n in body if isinstance(n, (ir.For, ir.While))):
        inside_loops |= {n.var.name for n in walk((loop,)) if isinstance(n, ir.Read)}
    outside = {
        n.var.name
        for stmt in body
        if not isinstance(stmt, (ir.For, ir.While))
        for n in walk((stmt,))
        if isinstance(n, ir.Read)
    }
    reloads = {
        name: value
        for name, value in definitions.items()
        if name in inside_loops
        and name not in outside
        and _reloadable(value, written)
        and any(isinstance(n, ir.Load) for n in walk((value,)))
    }
    for loop in (n for n in walk(body) if isinstance(n, (ir.For, ir.While))):
        reloads |= _dot_operand_windows(loop.body, written)
    return reloads


def _dot_operand_windows(body: tuple[ir.Stmt, ...], written: frozenset[str]) -> dict[str, ir.Expr]:
    """Each ``let`` window of a loop body that only dots read, as ``a``, ``b`` or ``trans(b)``."""
    windows = {
        n.var.name: n.value
        for n in body
        if isinstance(n, ir.Define)
        and isinstance(n.var.type, ir.TileT)
        and not n.var.mutable
        and isinstance(n.value, ir.Load)
        and _reloadable(n.value, written)
    }
    reads: dict[str, int] = {}
    operands: dict[str, int] = {}
    for node in walk(body):
        if isinstance(node, ir.Read) and node.var.name in windows:
            reads[node.var.name] = reads.get(node.var.name, 0) + 1
        if isinstance(node, ir.Dot):
            b = node.b.operand if isinstance(node.b, ir.Transpose) else node.b
            for operand in (node.a, b):
                if isinstance(operand, ir.Read) and operand.var.name in windows:
                    operands[operand.var.name] = operands.get(operand.var.name, 0) + 1
    return {name: windows[name] for name in reads if reads[name] == operands.get(name, 0)}


def _reloadable(e: object, written: frozenset[str]) -> bool:
    """A tile of unwritten tensors' windows and fixed scalars, elementwise: same at every read."""
    if isinstance(e, _UNIFORM):
        return True
    if isinstance(e, ir.Read):
        return isinstance(e.var.type, ir.ScalarT) and not e.var.mutable
    if isinstance(e, ir.Load):
        starts = [i.start if isinstance(i, ir.WindowIndex) else i.index for i in e.indices]
        return e.tensor.name not in written and all(_reloadable(s, written) for s in starts)
    if isinstance(e, _ELEMENTWISE):
        fields = ("operand", "left", "right", "cond", "if_true", "if_false")
        children = [getattr(e, name) for name in fields if hasattr(e, name)]
        return all(_reloadable(c, written) for c in children)
    return False
