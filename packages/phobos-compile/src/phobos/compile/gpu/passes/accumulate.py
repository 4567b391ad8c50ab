"""Products accumulated where the instruction accumulates: ``x + dot(a, b, 0)`` is ``dot(a, b, x)``.

``acc += a @ b`` and ``acc = acc + dot(a, b)`` spell a product into zeros and then
an add; the tensor cores add into their accumulator for free, so the add becomes
the product's accumulator (and the zeros disappear).  The sum is the same up to
the order the terms are added in, which floating-point reductions never promise.
Presence is unchanged: a product into zeros has the operands' presence, and the add
takes the other summand's too, which is what a product into it takes.  With this,
every spelling of the matmul k-loop reaches instruction selection as the same
``Dot``, and gets the same instructions.
"""

from __future__ import annotations

from phobos.compile.gpu import ir


def fold_accumulation(kernel: ir.Kernel) -> None:
    defs = ir.definitions(kernel)
    users = ir.users(kernel)
    for block in _blocks(kernel.body):
        for op in list(block.ops):
            if not (
                isinstance(op, ir.Binary) and op.op == "add" and isinstance(op.result.type, ir.Tile)
            ):
                continue
            for side in (0, 1):
                product = defs.get(op.operands[side])
                other = op.operands[1 - side]
                if (
                    isinstance(product, ir.Dot)
                    and product in block.ops
                    and _zeros(product.operands[2], defs)
                    and len(users.get(product.result, [])) == 1
                    and other.dtype == product.result.dtype
                    and _defined_before(other, product, block, defs)
                ):
                    product.operands[2] = other
                    ir.replace_uses(kernel.body, op.result, product.result)
                    block.ops.remove(op)
                    break


def _zeros(v: ir.Value, defs: dict[ir.Value, ir.Op]) -> bool:
    splat = defs.get(v)
    if not isinstance(splat, ir.Splat):
        return False
    constant = defs.get(splat.operands[0])
    return isinstance(constant, ir.Constant) and constant.value == 0


def _defined_before(v: ir.Value, op: ir.Op, block: ir.Block, defs: dict[ir.Value, ir.Op]) -> bool:
    """``v`` is available where ``op`` is (made earlier in its block, or outside it)."""
    definer = defs.get(v)
    if definer is None or definer not in block.ops:
        return True
    return block.ops.index(definer) < block.ops.index(op)


def _blocks(block: ir.Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)
