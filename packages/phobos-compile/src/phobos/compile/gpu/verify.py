"""The GPU IR's rules, checked after every pass (``pipeline.py``): a pass that breaks one fails at once.

* SSA: every operand is defined before its use, in the same block or one enclosing
  it (or is an argument of an enclosing region); every value is defined once.
* Regions: a ``for`` has the loop variable and one argument per carried value, and
  its body yields as many values; both sides of an ``if`` yield its results; a
  ``while`` condition region ends in ``condition``.
* Types: elementwise ops take uniforms or tiles of the result's shape (and, once
  layouts are assigned, its layout); the free shape ops (new axis, broadcast,
  transpose, squeeze) have the layouts that make them free; shared-memory ops take
  buffers; a ``wgmma_wait`` takes a ``wgmma``'s result, in the same layout.
* Products in flight: a ``wgmma``'s result, and a value carried from one, is read
  only by a ``wgmma_wait``, a region's ``yield`` or as the accumulator of a
  ``chained`` ``wgmma``; a chained product's accumulator is not read after it but by
  a wait without a result (their registers are one).
* Stage: once layouts are assigned every tile has one; after the conversions pass no
  ``convert`` is left, and after the reductions pass no ``reduce`` on a tile.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.gpu import ir


class VerifyError(AssertionError):
    """A pass broke a rule of the GPU IR (a compiler bug, never the user's)."""


@dataclass(frozen=True)
class Stage:
    """What the IR must have reached: layouts assigned, conversions and reductions expanded."""

    layouts: bool = False
    conversions: bool = False
    reductions: bool = False


def verify(kernel: ir.Kernel, stage: Stage = Stage(), after: str = "") -> None:
    _Verifier(kernel, stage, after).run()


class _Verifier:
    def __init__(self, kernel: ir.Kernel, stage: Stage, after: str) -> None:
        self.kernel = kernel
        self.stage = stage
        self.after = after
        self.defined: set[ir.Value] = set()

    def fail(self, op: ir.Op | None, message: str) -> None:
        where = f" after {self.after}" if self.after else ""
        what = f" at {op.NAME} ({op.span})" if op is not None else ""
        raise VerifyError(f"GPU IR{where}{what}: {message}")

    def run(self) -> None:
        self.block(self.kernel.body, set())
        self.products_in_flight()

    def block(self, block: ir.Block, visible: set[ir.Value]) -> None:
        scope = set(visible) | set(block.args)
        for arg in block.args:
            self.define(None, arg)
        for op in block.ops:
            for v in op.operands:
                if v not in scope:
                    self.fail(op, f"operand {v!r} is not defined before its use")
            for region in op.regions:
                self.block(region, scope)
            self.check(op)
            for v in op.results:
                self.define(op, v)
                scope.add(v)

    def define(self, op: ir.Op | None, v: ir.Value) -> None:
        if v in self.defined:
            self.fail(op, f"{v!r} is defined twice")
        self.defined.add(v)
        if self.stage.layouts and isinstance(v.type, ir.Tile) and v.type.layout is None:
            self.fail(op, f"{v!r} has no layout")

    # ------------------------------------------------------------------ per op

    def check(self, op: ir.Op) -> None:
        if isinstance(op, ir.For):
            body = op.body
            if len(body.args) != 1 + len(op.inits) or len(op.results) != len(op.inits):
                self.fail(op, "its carried values, arguments and results do not match")
            self.yields(op, body, len(op.inits))
        elif isinstance(op, ir.If):
            if len(op.regions) != 2 or not op.operands[0].is_uniform:
                self.fail(op, "an if takes a uniform condition and two sides")
            for region in op.regions:
                self.yields(op, region, len(op.results))
        elif isinstance(op, ir.While):
            cond, body = op.regions
            if not cond.ops or not isinstance(cond.ops[-1], ir.Condition):
                self.fail(op, "its condition region does not end in a condition")
            self.yields(op, body, len(op.operands))
        elif isinstance(op, ir.ELEMENTWISE):
            self.elementwise(op)
        elif isinstance(op, (ir.ExpandDims, ir.Broadcast, ir.Transpose, ir.Squeeze)):
            self.shape_op(op)
        elif isinstance(op, (ir.SharedStore, ir.SharedLoad, ir.CopyAsync, ir.CopyTma)):
            if not isinstance(op.operands[0].type, ir.Shared):
                self.fail(op, "its first operand is not a shared buffer")
            if isinstance(op, ir.CopyTma):
                self.tma(op)
        elif isinstance(op, (ir.MbarrierInit, ir.MbarrierWait, ir.MbarrierArrive)):
            if not isinstance(op.operands[0].type, ir.Mbarriers):
                self.fail(op, "its first operand is not an mbarrier array")
        elif isinstance(op, ir.WgmmaWait):
            waited = op.operands[0].type
            if op.results and not (
                isinstance(waited, ir.Tile)
                and (waited.dtype, waited.shape) == (op.result.tile.dtype, op.result.tile.shape)
                and (not self.stage.layouts or waited.layout == op.result.tile.layout)
            ):
                self.fail(op, "waits for a product of another type")
        elif isinstance(op, ir.Convert) and self.stage.conversions:
            self.fail(op, "a conversion is left after the conversions pass")
        elif (
            isinstance(op, ir.Reduce)
            and self.stage.reductions
            and isinstance(op.operands[0].type, ir.Tile)
        ) and op.operands[0].tile.layout is not None:
            self.fail(op, "a reduction is left after the reductions pass")

    def tma(self, op: ir.CopyTma) -> None:
        buffer, bars = op.operands[0].type, op.operands[1].type
        assert isinstance(buffer, ir.Shared)
        layout = buffer.layout
        if not isinstance(bars, ir.Mbarriers) or len(op.operands) != 3 + len(op.lengths):
            self.fail(op, "takes a buffer, mbarriers, a start per axis and a stage")
        elif layout.kind != "swizzled" or op.box != (1,) * (len(op.lengths) - 2) + (
            layout.rows,
            layout.width // layout.element_bytes,
        ):
            self.fail(op, f"its box {op.box} is not a swizzle atom of {layout}")
        elif op.lengths[-2:] != (layout.rows, layout.cols) or any(op.lengths[:-2]):
            self.fail(op, f"copies {op.lengths} into a buffer of {layout}")

    def yields(self, op: ir.Op, region: ir.Block, count: int) -> None:
        last = region.ops[-1] if region.ops else None
        if not isinstance(last, ir.Yield) or len(last.operands) != count:
            self.fail(op, f"a region does not yield its {count} values")

    def elementwise(self, op: ir.Op) -> None:
        result = op.result
        for v in op.operands:
            if isinstance(result.type, ir.Uniform):
                if not v.is_uniform:
                    self.fail(op, "a uniform result from a tile operand")
                continue
            if not isinstance(v.type, ir.Tile) or v.tile.shape != result.tile.shape:
                self.fail(op, f"operand {v!r} is not a tile of the result's shape")
            if self.stage.layouts and v.tile.layout != result.tile.layout:
                self.fail(op, f"operand {v!r} is in another layout than the result")

    def shape_op(self, op: ir.Op) -> None:
        if not self.stage.layouts:
            return
        x, result = op.operands[0], op.result
        layout, want = result.tile.layout, x.tile.layout
        assert layout is not None and want is not None
        if isinstance(op, ir.ExpandDims):
            ok = want.expanded(op.axis) == layout
        elif isinstance(op, ir.Squeeze):
            ok = want.sliced(op.axis) == layout
        elif isinstance(op, ir.Transpose):
            ok = want.transposed() == layout
        else:
            collapsed = layout
            for axis, n in enumerate(x.tile.shape):
                if n == 1 and layout.shape[axis] != 1:
                    collapsed = collapsed.collapsed(axis)
            ok = collapsed == want
        if not ok:
            self.fail(op, "its operand's layout is not the one that makes it free")

    # ------------------------------------------------------------------ products in flight

    def products_in_flight(self) -> None:
        flights = in_flight_values(self.kernel)
        for block in _blocks(self.kernel.body):
            for i, op in enumerate(block.ops):
                for index, v in enumerate(op.operands):
                    if v not in flights:
                        continue
                    chain = isinstance(op, ir.Wgmma) and op.chained and index == 2
                    if not (chain or isinstance(op, (ir.WgmmaWait, ir.Yield, *_REGIONS))):
                        self.fail(op, f"reads {v!r}, a product in flight, without a wait")
                    if chain:
                        self.chain_ends(op, v, block.ops[i + 1 :])

    def chain_ends(self, product: ir.Op, acc: ir.Value, later: list[ir.Op]) -> None:
        for op in later:
            for inner in [op, *(o for r in op.regions for o in r.walk())]:
                if acc in inner.operands and not (
                    isinstance(inner, ir.WgmmaWait) and not inner.results
                ):
                    self.fail(product, f"{acc!r} is read after a product chained onto it")


_REGIONS = (ir.For, ir.If, ir.While)


def _blocks(block: ir.Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)


def in_flight_values(kernel: ir.Kernel) -> set[ir.Value]:
    """The values that may hold a product in flight: a ``wgmma``'s results, and what a
    region carries or gives from one."""
    flights = {op.result for op in kernel.walk() if isinstance(op, ir.Wgmma)}
    changed = True
    while changed:
        changed = False
        for op in kernel.walk():
            for targets, sources in _carried(op):
                for target, source in zip(targets, sources):
                    if source in flights and target not in flights:
                        flights.add(target)
                        changed = True
    return flights


def _carried(op: ir.Op) -> list[tuple[list[ir.Value], list[ir.Value]]]:
    """Pairs (values, what flows into them) of a region op."""
    yields = [r.ops[-1].operands for r in op.regions if r.ops and isinstance(r.ops[-1], ir.Yield)]
    if isinstance(op, ir.For):
        args = op.body.args[1:]
        return [(args, op.inits), *((args, y) for y in yields), *((op.results, y) for y in yields)]
    if isinstance(op, ir.If):
        return [(op.results, y) for y in yields]
    if isinstance(op, ir.While):
        cond, body = op.regions
        sources = [op.operands, *yields]
        return [(t, src) for t in (cond.args, body.args, op.results) for src in sources]
    return []
