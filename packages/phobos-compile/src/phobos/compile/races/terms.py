"""Index expressions with the kernel's fixed variables written out.

``m = (first_row + in_group % group_rows) * BM`` reads three variables; the tile
proofs (``races.tiles``) need to see what they are: ``ctx.block.x / group_blocks``
and so on.  ``inline`` replaces each read of a variable with one value for the
whole block by its definition, already written out when it was defined.  Reads
of loop variables and of assigned ``var``s stay reads: no proof accepts them.

A definition is kept only while it is small (``MAX_NODES``): the written-out
expressions share their parts, but a chain of ``let a2 = a1 + a1`` would double
at each step, and every proof walks them as trees.
"""

from __future__ import annotations

from dataclasses import replace

from phobos.compile.ir import nodes as ir

MAX_NODES = 256


def inline(expr: ir.Expr, definitions: dict[str, ir.Expr]) -> ir.Expr:
    """``expr`` with each read of a variable in ``definitions`` replaced by its definition."""
    if isinstance(expr, ir.Read):
        return definitions.get(expr.var.name, expr)
    if isinstance(expr, ir.Binary):
        left, right = inline(expr.left, definitions), inline(expr.right, definitions)
        return replace(expr, left=left, right=right)
    if isinstance(expr, (ir.Unary, ir.Cast)):
        return replace(expr, operand=inline(expr.operand, definitions))
    if isinstance(expr, ir.Select):
        parts = (inline(e, definitions) for e in (expr.cond, expr.if_true, expr.if_false))
        return replace(expr, **dict(zip(("cond", "if_true", "if_false"), parts)))
    return expr


def bare(expr: ir.Expr) -> ir.Expr:
    """``expr`` without integer casts (index arithmetic is taken not to overflow)."""
    while isinstance(expr, ir.Cast) and expr.type.dtype in (*ir.INT_DTYPES, "index"):
        expr = expr.operand
    return expr


def small(expr: ir.Expr) -> bool:
    """True when ``expr`` has at most ``MAX_NODES`` nodes, counted as a tree."""
    budget = MAX_NODES
    stack = [expr]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        node = stack.pop()
        if isinstance(node, ir.Binary):
            stack += (node.left, node.right)
        elif isinstance(node, (ir.Unary, ir.Cast)):
            stack.append(node.operand)
        elif isinstance(node, ir.Select):
            stack += (node.cond, node.if_true, node.if_false)
    return True
