"""Layout assignment: every register tile gets a layout, and a conversion only where two disagree.

1. **Anchors.**  What an instruction fixes: an MMA's accumulator and register
   operands (the ``Convert`` that instruction selection put before each), fragment
   loads from shared memory.
2. **Hints, backwards.**  A value that flows into an anchor through layout-preserving
   ops (elementwise, casts, broadcasts, new axes, transposes, a loop's carried
   value) is *hinted* the layout it arrives in: ``acc * rescale[:, None]`` feeds
   wgmma's accumulator, so ``rescale`` is hinted the accumulator's rows, and the
   zeros a loop starts ``acc`` from are made in the accumulator layout.
3. **Forward, in program order.**  A source (load, coordinate, splat) takes its hint
   or the default layout of its shape (``blocked``: 16-byte groups along the last
   axis, the kernel's vector width, so every tile of one shape shares a layout);
   an elementwise result takes its operands' strongest layout (an anchor's over a
   hint over a default); a reduction the operand's ``sliced``; a new axis
   ``expanded``; a broadcast its hint, or the default of its shape when that
   collapses to the operand's, or the operand's inflated.  A loop's carried value
   takes the layout its body yields (the body is walked again until it settles).
4. **Conversions.**  Where an operand's layout is not the one its user needs, a
   value made of coordinates and uniforms alone (``arange``, masks, splats) is made
   again in the layout needed (rematerialised, free), a small load of a tensor the
   kernel never writes is loaded again, and anything else gets a ``Convert``
   (``passes/conversions.py`` decides how it moves).
"""

from __future__ import annotations

import math

from phobos.compile.gpu import ir
from phobos.compile.gpu.layouts import LANE_BITS, Coord, Layout, blocked
from phobos.compile.gpu.passes.cta import kernel_vector, lanes_per_group

ANCHOR, HINTED, DEFAULT = 3, 2, 1
# A load of at most this many elements a thread is loaded again in another layout
# rather than converted (a row vector of a ``[BM]`` tile, loaded per warp).
RELOAD_ELEMENTS_PER_THREAD = 8

_PRESERVING = (*ir.ELEMENTWISE,)


def assign_layouts(kernel: ir.Kernel) -> None:
    _Assigner(kernel).run()


class _Assigner:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.threads = kernel.threads
        self.vec = kernel_vector(kernel)
        self.layout: dict[ir.Value, Layout] = {}
        self.strength: dict[ir.Value, int] = {}
        self.hint: dict[ir.Value, Layout] = {}
        self.defs = ir.definitions(kernel)
        self.users = ir.users(kernel)
        self.written = {
            op.tensor
            for op in kernel.walk()
            if isinstance(op, (ir.Store, ir.StoreUniform, ir.Atomic))
        }

    def run(self) -> None:
        self.anchors()
        for _ in range(4):
            before = dict(self.hint)
            self.hints(self.kernel.body)
            if before == self.hint:
                break
        for _ in range(8):
            before = dict(self.layout)
            self.forward(self.kernel.body)
            if before == self.layout:
                break
        self.apply()
        self.convert(self.kernel.body)

    # ------------------------------------------------------------------ 1. anchors

    def anchors(self) -> None:
        for op in self.kernel.walk():
            for v in op.results:
                if isinstance(v.type, ir.Tile) and v.type.layout is not None:
                    self.layout[v] = v.type.layout
                    self.strength[v] = ANCHOR

    # ------------------------------------------------------------------ 2. hints

    def hints(self, block: ir.Block) -> None:
        for op in reversed(block.ops):
            for region in op.regions:
                self.hints(region)
            if isinstance(op, ir.Convert) and op.result in self.layout:
                self.suggest(op.operands[0], self.layout[op.result])
            elif isinstance(op, (ir.Wgmma, ir.MmaSync)):
                continue
            elif isinstance(op, _PRESERVING):
                want = self.known(op.result)
                if want is not None:
                    for v in op.operands:
                        if isinstance(v.type, ir.Tile):
                            self.suggest(
                                v,
                                want.with_shape(v.tile.shape)
                                if v.tile.shape == want.shape
                                else want,
                            )
            elif isinstance(op, ir.Broadcast):
                want = self.known(op.result)
                if want is not None:
                    self.suggest(op.operands[0], _collapse(want, op.operands[0].tile.shape))
            elif isinstance(op, ir.ExpandDims):
                want = self.known(op.result)
                if want is not None and not any(
                    b[op.axis] for b in (*want.registers, *want.lanes, *want.warps)
                ):
                    self.suggest(op.operands[0], want.sliced(op.axis))
            elif isinstance(op, ir.Transpose):
                want = self.known(op.result)
                if want is not None:
                    self.suggest(op.operands[0], want.transposed())
            elif isinstance(op, ir.For):
                for arg, init, result, yielded in zip(
                    op.body.args[1:], op.inits, op.results, op.body.ops[-1].operands
                ):
                    if not isinstance(arg.type, ir.Tile):
                        continue
                    for v in (arg, result, yielded):
                        want = self.known(v)
                        if want is not None:
                            for other in (arg, init, yielded, result):
                                self.suggest(other, want)
                            break
            elif isinstance(op, ir.If):
                for i, result in enumerate(op.results):
                    want = self.known(result)
                    if want is not None:
                        for region in op.regions:
                            self.suggest(region.ops[-1].operands[i], want)
            elif isinstance(op, ir.While):
                for i, arg in enumerate(op.regions[1].args):
                    if not isinstance(arg.type, ir.Tile):
                        continue
                    candidates = (
                        op.regions[0].args[i],
                        arg,
                        op.results[i],
                        op.regions[1].ops[-1].operands[i],
                    )
                    for v in candidates:
                        want = self.known(v)
                        if want is not None:
                            for other in (*candidates, op.operands[i]):
                                self.suggest(other, want)
                            break

    def known(self, v: ir.Value) -> Layout | None:
        return self.layout.get(v) if self.strength.get(v) == ANCHOR else self.hint.get(v)

    def suggest(self, v: ir.Value, layout: Layout) -> None:
        tile = isinstance(v.type, ir.Tile)
        if (
            tile
            and v not in self.hint
            and self.strength.get(v) != ANCHOR
            and layout.shape == v.tile.shape
        ):
            self.hint[v] = layout

    # ------------------------------------------------------------------ 3. forward

    def default(self, shape: tuple[int, ...]) -> Layout:
        return blocked(shape, self.threads, lanes_per_group(shape, self.vec))

    def set(self, v: ir.Value, layout: Layout, strength: int) -> None:
        if self.strength.get(v) == ANCHOR:
            return
        self.layout[v] = layout
        self.strength[v] = strength

    def source(self, v: ir.Value) -> None:
        if v in self.hint:
            self.set(v, self.hint[v], HINTED)
        else:
            self.set(v, self.default(v.tile.shape), DEFAULT)

    def forward(self, block: ir.Block) -> None:
        for arg in block.args:
            if isinstance(arg.type, ir.Tile) and arg not in self.layout:
                self.source(arg)
        for op in block.ops:
            self.forward_op(op)

    def forward_op(self, op: ir.Op) -> None:
        tiles = [v for v in op.results if isinstance(v.type, ir.Tile)]
        if isinstance(op, (ir.For, ir.While)):
            self.loop(op)
            return
        if isinstance(op, ir.If):
            for region in op.regions:
                self.forward(region)
            for i, result in enumerate(op.results):
                if isinstance(result.type, ir.Tile):
                    yielded = op.regions[0].ops[-1].operands[i]
                    self.set(
                        result,
                        self.hint.get(result, self.layout[yielded]),
                        self.strength.get(yielded, DEFAULT),
                    )
            return
        if not tiles or all(self.strength.get(v) == ANCHOR for v in tiles):
            return
        (result,) = tiles
        operands = [v for v in op.operands if isinstance(v.type, ir.Tile)]
        if isinstance(op, (ir.Load, ir.Coord, ir.Splat, ir.SharedLoad, ir.DotShared, ir.Convert)):
            if isinstance(op, ir.DotShared) and op.operands[2] in self.layout:
                self.set(result, self.layout[op.operands[2]], self.strength[op.operands[2]])
            else:
                self.source(result)
        elif isinstance(op, _PRESERVING):
            best = max(operands, key=lambda v: self.strength.get(v, 0), default=None)
            hinted = self.hint.get(result)
            if best is None or (self.strength.get(best, 0) < HINTED and hinted is not None):
                self.source(result)
            else:
                layout = self.layout[best]
                strength = self.strength[best]
                if hinted is not None and any(self.layout.get(v) == hinted for v in operands):
                    layout, strength = hinted, max(strength, HINTED)
                self.set(result, layout, strength)
        elif isinstance(op, ir.Reduce):
            x = op.operands[0]
            self.set(result, self.layout[x].sliced(op.axis), self.strength[x])
            if op.masked:
                self.hint.setdefault(op.operands[1], self.layout[x])
        elif isinstance(op, ir.ExpandDims):
            x = op.operands[0]
            self.set(result, self.layout[x].expanded(op.axis), self.strength[x])
        elif isinstance(op, ir.Transpose):
            x = op.operands[0]
            self.set(result, self.layout[x].transposed(), self.strength[x])
        elif isinstance(op, ir.Broadcast):
            x = op.operands[0]
            shape = result.tile.shape
            partner = self.partner(result, x)
            if result in self.hint:
                self.set(result, self.hint[result], HINTED)
            elif partner is not None:
                self.set(result, partner, self.strength[x])
            elif _collapse(self.default(shape), x.tile.shape) == self.layout[x]:
                self.set(result, self.default(shape), self.strength[x])
            else:
                self.set(result, _inflate(self.layout[x], shape), self.strength[x])
        else:  # pragma: no cover - every tile-making op is handled above
            raise AssertionError(op.NAME)

    def partner(self, result: ir.Value, x: ir.Value) -> Layout | None:
        """The layout of another operand of ``result``'s elementwise users that a broadcast
        of ``x`` reaches for free (``acc / row_sum[:, None]``: the accumulator's)."""
        for user in self.users.get(result, []):
            if not isinstance(user, _PRESERVING):
                continue
            for other in user.operands:
                layout = self.layout.get(other)
                if other is result or layout is None or layout.shape != result.tile.shape:
                    continue
                if _collapse(layout, x.tile.shape) == self.layout[x]:
                    return layout
        return None

    def loop(self, op: ir.For | ir.While) -> None:
        body = op.regions[-1]
        carried = body.args[1:] if isinstance(op, ir.For) else body.args
        inits = op.inits if isinstance(op, ir.For) else op.operands
        heads = [carried] if isinstance(op, ir.For) else [op.regions[0].args, body.args]
        for i, init in enumerate(inits):
            if not isinstance(init.type, ir.Tile):
                continue
            arg = carried[i]
            if arg not in self.layout:
                chosen = self.hint.get(arg, self.layout[init])
                strength = HINTED if arg in self.hint else self.strength.get(init, DEFAULT)
                for args in heads:
                    self.set(args[i], chosen, strength)
        for _ in range(4):
            for region in op.regions:
                self.forward(region)
            changed = False
            yielded = body.ops[-1].operands
            for i, value in enumerate(yielded):
                if not isinstance(value.type, ir.Tile):
                    continue
                arg = carried[i]
                if (
                    self.strength.get(value, 0) > self.strength.get(arg, 0)
                    and self.layout[value] != self.layout[arg]
                ):
                    for args in heads:
                        self.set(args[i], self.layout[value], self.strength[value])
                    changed = True
            if not changed:
                break
        for i, result in enumerate(op.results):
            if isinstance(result.type, ir.Tile):
                self.set(result, self.layout[carried[i]], self.strength[carried[i]])

    # ------------------------------------------------------------------ 4. conversions

    def apply(self) -> None:
        for op in self.kernel.walk():
            for v in op.results:
                if isinstance(v.type, ir.Tile):
                    v.type = v.tile.with_layout(self.layout[v])
            for region in op.regions:
                for arg in region.args:
                    if isinstance(arg.type, ir.Tile):
                        arg.type = arg.tile.with_layout(self.layout[arg])

    def convert(self, block: ir.Block, parent: ir.Op | None = None) -> None:
        out: list[ir.Op] = []
        for op in block.ops:
            for region in op.regions:
                self.convert(region, op)
            needs = (
                _yield_requirements(parent, block)
                if isinstance(op, ir.Yield)
                else _requirements(op)
            )
            new_operands = []
            for i, v in enumerate(op.operands):
                want = needs.get(i)
                if want is None or not isinstance(v.type, ir.Tile) or v.tile.layout == want:
                    new_operands.append(v)
                    continue
                new_operands.append(self.made_in(v, want, out, op))
            op.operands = new_operands
            if isinstance(op, ir.Convert) and op.operands[0].tile.layout == op.result.tile.layout:
                ir.replace_uses(self.kernel.body, op.result, op.operands[0])
                continue
            out.append(op)
        block.ops = out

    def made_in(self, v: ir.Value, layout: Layout, out: list[ir.Op], user: ir.Op) -> ir.Value:
        """``v`` in ``layout``: made again where that is free, else converted."""
        if ir.rematerialisable(v, self.defs):
            return _remake(v, layout, self.defs, out)
        definer = self.defs.get(v)
        if (
            isinstance(definer, ir.Load)
            and definer.tensor not in self.written
            and math.prod(v.tile.shape) <= RELOAD_ELEMENTS_PER_THREAD * self.threads
            and all(not isinstance(o.type, ir.Tile) for o in definer.operands)
        ):
            again = ir.Load(
                tensor=definer.tensor,
                lengths=definer.lengths,
                checked=definer.checked,
                operands=list(definer.operands),
                span=definer.span,
            )
            again.results = [ir.Value(v.tile.with_layout(layout), v.name)]
            out.append(again)
            return again.result
        convert = ir.Convert(operands=[v], span=user.span)
        convert.results = [ir.Value(v.tile.with_layout(layout), v.name)]
        out.append(convert)
        return convert.result


def _requirements(op: ir.Op) -> dict[int, Layout]:
    """The layout each tile operand of ``op`` must be in (operands not listed: any)."""
    if isinstance(op, _PRESERVING) and isinstance(op.results[0].type, ir.Tile):
        return {
            i: op.result.tile.layout
            for i, v in enumerate(op.operands)
            if isinstance(v.type, ir.Tile)
        }  # type: ignore[misc]
    if isinstance(op, ir.Broadcast):
        return {0: _collapse(op.result.tile.layout, op.operands[0].tile.shape)}  # type: ignore[arg-type]
    if isinstance(op, ir.ExpandDims):
        layout = op.result.tile.layout
        assert layout is not None
        return {0: layout.sliced(op.axis)}
    if isinstance(op, ir.Transpose):
        return {0: op.result.tile.layout.transposed()}  # type: ignore[union-attr]
    if isinstance(op, (ir.Wgmma, ir.MmaSync)):
        need = {2: op.result.tile.layout}
        return need  # type: ignore[return-value]
    if isinstance(op, ir.WgmmaWait):
        return {}
    if isinstance(op, (ir.Reduce, ir.ReduceRegisters)) and op.masked:
        return {1: op.operands[0].tile.layout}  # type: ignore[dict-item]
    if isinstance(op, ir.DotShared):
        return {2: op.result.tile.layout}  # type: ignore[dict-item]
    if isinstance(op, (ir.Store, ir.Load, ir.Atomic, ir.Trace, ir.Assert)):
        tiles = [i for i, v in enumerate(op.operands) if isinstance(v.type, ir.Tile)]
        if len(tiles) > 1:  # a value and its mask: one layout
            first = op.operands[tiles[0]].tile.layout
            return {i: first for i in tiles[1:]}  # type: ignore[misc]
        return {}
    if isinstance(op, ir.Yield):
        return {}
    if isinstance(op, ir.For):
        return {
            3 + i: arg.tile.layout
            for i, arg in enumerate(op.body.args[1:])
            if isinstance(arg.type, ir.Tile)
        }  # type: ignore[misc]
    if isinstance(op, ir.While):
        return {
            i: arg.tile.layout
            for i, arg in enumerate(op.regions[0].args)
            if isinstance(arg.type, ir.Tile)
        }  # type: ignore[misc]
    return {}


def _yield_requirements(parent: ir.Op | None, block: ir.Block) -> dict[int, Layout]:
    """A region's ``Yield`` gives what its owner carries on: the layouts of those values."""
    if isinstance(parent, ir.For):
        targets = parent.body.args[1:]
    elif isinstance(parent, ir.While):
        targets = parent.regions[1].args
    elif isinstance(parent, ir.If):
        targets = parent.results
    else:
        return {}
    return {i: t.tile.layout for i, t in enumerate(targets) if isinstance(t.type, ir.Tile)}  # type: ignore[misc]


def _collapse(layout: Layout, shape: tuple[int, ...]) -> Layout:
    """The layout a broadcast to ``layout`` reads its operand (of ``shape``) in."""
    out = layout
    for axis, n in enumerate(shape):
        if n == 1 and layout.shape[axis] != 1:
            out = out.collapsed(axis)
    return out


def _inflate(layout: Layout, shape: tuple[int, ...]) -> Layout:
    """A layout of ``shape`` whose ``collapsed`` is ``layout`` (extent-1 axes grown): the
    replicated lane and warp bits move along the grown axes, then registers."""
    rank = len(shape)
    grow = [a for a in range(rank) if layout.shape[a] == 1 and shape[a] != 1]
    need = {a: (shape[a] - 1).bit_length() for a in grow}
    nextv = dict.fromkeys(grow, 1)

    def take(basis: Coord) -> Coord:
        if any(basis):
            return basis
        for a in grow:
            if need[a] > 0:
                need[a] -= 1
                value = nextv[a]
                nextv[a] *= 2
                return tuple(value if i == a else 0 for i in range(rank))
        return basis

    lanes = tuple(take(b) for b in layout.lanes)
    warps = tuple(take(b) for b in layout.warps)
    registers = list(layout.registers)
    for a in grow:
        while need[a] > 0:
            need[a] -= 1
            registers.append(tuple(nextv[a] if i == a else 0 for i in range(rank)))
            nextv[a] *= 2
    assert len(lanes) == LANE_BITS
    return Layout(shape, tuple(registers), lanes, warps, layout.repeat, layout.repeat_axis)


def _remake(v: ir.Value, layout: Layout, defs: dict[ir.Value, ir.Op], out: list[ir.Op]) -> ir.Value:
    op = defs[v]
    if isinstance(op, (ir.Coord, ir.Splat)):
        operands = list(op.operands)
    elif isinstance(op, _PRESERVING):
        operands = [
            _remake(o, layout.with_shape(o.tile.shape), defs, out)
            if isinstance(o.type, ir.Tile)
            else o
            for o in op.operands
        ]
    elif isinstance(op, ir.Broadcast):
        operands = [
            _remake(op.operands[0], _collapse(layout, op.operands[0].tile.shape), defs, out)
        ]
    elif isinstance(op, ir.ExpandDims):
        operands = [_remake(op.operands[0], layout.sliced(op.axis), defs, out)]
    else:
        assert isinstance(op, ir.Transpose)
        operands = [_remake(op.operands[0], layout.transposed(), defs, out)]
    clone = type(op)(
        **{k: getattr(op, k) for k in op.attributes()}, operands=operands, span=op.span
    )
    clone.results = [ir.Value(v.tile.with_layout(layout), v.name)]
    out.append(clone)
    defs[clone.result] = clone
    return clone.result
