"""Which products a loop could keep in flight across its iterations.

A ``wgmma`` whose result the loop only carries to the next iteration (waited for,
then yielded, nothing else using it) need not be waited for inside the iteration:
``passes/mma_waits.py`` carries the product in flight instead.  That is safe only
where nothing overwrites the product's shared operands while it runs, so
``passes/pipeline.py``, which runs first, gives the rings such a product reads a
stage to spare.  Both ask this module, so they agree on which products those are.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.gpu import ir


@dataclass(frozen=True)
class Carried:
    """A product the loop carries: ``yielded`` is the yield's operand index."""

    yielded: int
    wait: ir.WgmmaWait
    product: ir.Wgmma

    def shared_operands(self) -> list[ir.Value]:
        return [v for v in self.product.operands[:2] if isinstance(v.type, ir.Shared)]


def carried_products(loop: ir.For) -> list[Carried]:
    """The products ``loop``'s body waits for only to yield them, once each."""
    body = loop.body
    final = body.ops[-1]
    assert isinstance(final, ir.Yield)
    defs = {v: op for op in body.ops for v in op.results}
    found = []
    for j, yielded in enumerate(final.operands):
        wait = defs.get(yielded)
        if not isinstance(wait, ir.WgmmaWait) or final.operands.count(yielded) != 1:
            continue
        if [op for op in body.walk() if yielded in op.operands] != [final]:
            continue
        product = defs.get(wait.operands[0])
        if isinstance(product, ir.Wgmma):
            found.append(Carried(j, wait, product))
    return found
