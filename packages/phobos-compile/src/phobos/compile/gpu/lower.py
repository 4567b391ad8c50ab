"""Tile IR → GPU IR: mechanical, with SSA for variables and presence made explicit.

Each tile-IR expression becomes the GPU IR op that says the same thing, with no
layout yet and no choice of instruction: a window load is a ``Load``, a ``dot`` a
``Dot``, a reduction a ``Reduce``.  The passes decide how each is done.

Variables become SSA values: a loop carries the variables its body assigns (block
arguments in, ``Yield`` out), a branch yields the ones either side assigns.

Absent lanes become explicit (``presence.py``): each lowered tile carries its
presence as factors, and lowering adds a mask only where the semantics needs one —
a ``select`` to the identity before a reduction or ``dot`` over an axis with absent
lanes (not where those lanes are a load's zeros and zero is the identity), a mask on
a store for lanes its own window does not already exclude.  A loop-carried or
branch-joined tile's presence travels as flags: each bound applies ``when`` a
uniform flag holds, and the uniform and general parts are carried values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from phobos.compile.gpu import ir
from phobos.compile.gpu.builder import Builder
from phobos.compile.gpu.layouts import SharedLayout
from phobos.compile.gpu.presence import (
    ALL,
    Bound,
    Presence,
    both,
    depends_on,
    in_window,
    mask,
    renumber,
    some_present_any,
    without,
)
from phobos.compile.ir import nodes as tir
from phobos.compile.ir import reduction_ops
from phobos.compile.span import Span


@dataclass(frozen=True)
class Lowered:
    """A lowered expression: its value, presence and whether its absent lanes hold zero."""

    value: ir.Value
    presence: Presence = ALL
    zero_absent: bool = False


def lower_kernel(
    kernel: tir.Kernel,
    *,
    arch: str,
    index_width: int,
    unit_stride: dict[str, bool],
    align: dict[str, int],
    row_align: dict[str, int] | None = None,
) -> ir.Kernel:
    """The GPU IR of one tile-IR variant (no layouts, no CTA size yet)."""
    body = ir.Block()
    out = ir.Kernel(
        name=kernel.name,
        params=kernel.params,
        values=kernel.values,
        body=body,
        threads=0,
        arch=arch,
        index_width=index_width,
        unit_stride=dict(unit_stride),
        align=dict(align),
        row_align=dict(row_align or {}),
        span=kernel.span,
    )
    _Lowerer(out, Builder(body, hoist=True)).block(kernel.body)
    return out


class _Lowerer:
    def __init__(self, kernel: ir.Kernel, builder: Builder) -> None:
        self.kernel = kernel
        self.b = builder
        self.index = f"i{kernel.index_width}"
        self.env: dict[str, Lowered] = {}

    # ------------------------------------------------------------------ types

    def dtype(self, dtype: str) -> str:
        return self.index if dtype == "index" else dtype

    def type_of(self, t: tir.IRType) -> ir.Type:
        if isinstance(t, tir.TileT):
            return ir.Tile(self.dtype(t.dtype), t.shape)
        return ir.Uniform(self.dtype(t.dtype))

    # ------------------------------------------------------------------ statements

    def block(self, body: tuple[tir.Stmt, ...]) -> None:
        for stmt in body:
            self.b.span = stmt.span
            self.statement(stmt)

    def statement(self, stmt: tir.Stmt) -> None:
        if isinstance(stmt, (tir.Define, tir.Assign)):
            self.env[stmt.var.name] = self.expr(stmt.value)
        elif isinstance(stmt, tir.Store):
            self.store(stmt)
        elif isinstance(stmt, (tir.AtomicAdd, tir.AtomicMax, tir.AtomicXchg, tir.AtomicCas)):
            self.atomic(stmt)
        elif isinstance(stmt, tir.For):
            self.for_loop(stmt)
        elif isinstance(stmt, tir.If):
            self.branch(stmt)
        elif isinstance(stmt, tir.While):
            self.while_loop(stmt)
        elif isinstance(stmt, tir.Return):
            self.b.add(ir.Return())
        elif isinstance(stmt, tir.Trace):
            self.trace(stmt)
        elif isinstance(stmt, tir.DeviceAssert):
            self.device_assert(stmt)
        else:  # pragma: no cover - the tile IR has no other statement
            raise AssertionError(type(stmt).__name__)

    # ------------------------------------------------------------------ memory

    def axis_bounds(
        self, tensor: tir.TensorParam, indices: tuple[tir.TensorIndex, ...], partial: bool
    ) -> tuple[list[ir.Value], tuple[int | None, ...], tuple[Bound, ...], ir.Value | None]:
        """Each tensor axis's start, the window lengths, the tile axes' bounds and the
        points' uniform condition.  ``partial`` False: the checker proved the window
        inside the tensor, so nothing is tested."""
        starts: list[ir.Value] = []
        lengths: list[int | None] = []
        bounds: list[Bound] = []
        inside: ir.Value | None = None
        tile_axis = 0
        for axis, index in enumerate(indices):
            start_expr = index.index if isinstance(index, tir.PointIndex) else index.start
            start = self.b.cast(self.scalar(start_expr), self.index)
            starts.append(start)
            extent = self.extent(tensor, axis)
            if isinstance(index, tir.WindowIndex):
                lengths.append(index.length)
                if partial and not _inside(start_expr, index.length, tensor.dims[axis]):
                    bounds.append(Bound(tile_axis, start, extent, index.length))
                tile_axis += 1
            else:
                lengths.append(None)
                if partial:
                    point = Bound(0, start, extent, 1)
                    inside = self.b.land(
                        inside, in_window(self.b, point, self.b.constant(0, "i32"))
                    )
        return starts, tuple(lengths), tuple(bounds), inside

    def extent(self, tensor: tir.TensorParam, axis: int) -> ir.Value:
        dim = tensor.dims[axis]
        if isinstance(dim, str):
            return self.b.value(ir.Extent(extent=dim), ir.Uniform(self.index), name=dim)
        return self.b.constant(dim, self.index)

    def load(self, e: tir.Load) -> Lowered:
        if isinstance(e.type, tir.ScalarT):
            indices = [self.b.cast(self.scalar(i.index), self.index) for i in e.indices]  # type: ignore[union-attr]
            op = ir.LoadUniform(tensor=e.tensor.name, operands=indices)
            return Lowered(self.b.value(op, self.type_of(e.type)))
        partial = e.type.partial
        starts, lengths, bounds, inside = self.axis_bounds(e.tensor, e.indices, partial)
        op = ir.Load(
            tensor=e.tensor.name,
            lengths=lengths,
            checked=bool(bounds) or inside is not None,
            operands=starts,
        )
        value = self.b.value(op, self.type_of(e.type), name=e.tensor.name)
        return Lowered(value, Presence(bounds, inside), zero_absent=True)

    def store(self, stmt: tir.Store) -> None:
        if all(isinstance(i, tir.PointIndex) for i in stmt.indices):
            indices = [self.b.cast(self.scalar(i.index), self.index) for i in stmt.indices]  # type: ignore[union-attr]
            value = self.scalar(stmt.value)
            self.b.add(ir.StoreUniform(tensor=stmt.tensor.name, operands=[*indices, value]))
            return
        value = self.expr(stmt.value)
        partial = True  # the store tests its own window's bounds unless proved inside
        starts, lengths, bounds, _ = self.axis_bounds(stmt.tensor, stmt.indices, partial)
        shape = value.value.tile.shape
        rest = without(value.presence, bounds)
        store_mask = mask(self.b, replace(rest, uniform=None), shape)
        checked = bool(bounds) or any(length is None for length in lengths)
        operands = [*starts, value.value]
        operands += [v for v in (store_mask, rest.uniform) if v is not None]
        op = ir.Store(
            tensor=stmt.tensor.name,
            lengths=lengths,
            checked=checked,
            masked=store_mask is not None,
            predicated=rest.uniform is not None,
            operands=operands,
        )
        self.b.add(op)

    def atomic(self, stmt: tir.Atomic) -> None:
        kind = {
            tir.AtomicAdd: "add",
            tir.AtomicMax: "max",
            tir.AtomicXchg: "xchg",
            tir.AtomicCas: "cas",
        }[type(stmt)]
        window = any(isinstance(i, tir.WindowIndex) for i in stmt.indices)
        starts, lengths, bounds, _ = self.axis_bounds(stmt.tensor, stmt.indices, True)
        operands = list(starts)
        if isinstance(stmt, tir.AtomicCas):
            operands.append(self.scalar(stmt.compare))
        atomic_mask = None
        if window:
            value = self.expr(stmt.value)
            operands.append(value.value)
            atomic_mask = mask(self.b, without(value.presence, bounds), value.value.tile.shape)
        else:
            operands.append(self.scalar(stmt.value))
        if atomic_mask is not None:
            operands.append(atomic_mask)
        op = ir.Atomic(
            kind=kind,
            tensor=stmt.tensor.name,
            lengths=lengths,
            masked=atomic_mask is not None,
            operands=operands,
        )
        result = getattr(stmt, "result", None)
        if result is None:
            self.b.add(op)
            return
        dtype = self.dtype(stmt.tensor.dtype)
        size = tir.DTYPE_BYTES[dtype]
        slot = ir.Shared(dtype, (1,), SharedLayout("rows", 1, 1, size))
        op.operands.append(self.b.value(ir.SharedAlloc(), slot, name="old"))
        value = self.b.value(op, ir.Uniform(dtype), name=result.name)
        self.env[result.name] = Lowered(value)

    # ------------------------------------------------------------------ expressions

    def scalar(self, e: tir.Expr) -> ir.Value:
        lowered = self.expr(e)
        assert lowered.value.is_uniform, f"{type(e).__name__} is not a scalar"
        return lowered.value

    def expr(self, e: tir.Expr) -> Lowered:
        b = self.b
        if isinstance(e, tir.Const):
            return Lowered(b.constant(e.value, self.dtype(e.type.dtype)))
        if isinstance(e, tir.ScalarArg):
            return Lowered(
                b.value(ir.Param(param=e.param.name), self.type_of(e.type), e.param.name)
            )
        if isinstance(e, tir.Extent):
            return Lowered(b.value(ir.Extent(extent=e.name), ir.Uniform(self.index), e.name))
        if isinstance(e, tir.CtxValue):
            op = ir.BlockIndex(group=e.group, axis=e.axis)
            return Lowered(b.value(op, ir.Uniform(self.index)))
        if isinstance(e, tir.Read):
            return self.env[e.var.name]
        if isinstance(e, tir.Load):
            return self.load(e)
        if isinstance(e, (tir.Unary, tir.Binary, tir.Math, tir.Cast, tir.Select)):
            return self.elementwise(e)
        if isinstance(e, tir.Splat):
            value = self.scalar(e.operand)
            return Lowered(b.splat(b.cast(value, self.dtype(e.type.dtype)), e.type.shape))
        if isinstance(e, tir.Full):
            value = b.constant(e.value, self.dtype(e.type.dtype))
            return Lowered(b.splat(value, e.type.shape))
        if isinstance(e, tir.Iota):
            return Lowered(b.coord(e.type.shape, 0, self.dtype(e.type.dtype)))
        if isinstance(e, tir.ExpandDims):
            return self.expand_dims(e)
        if isinstance(e, tir.Broadcast):
            return self.broadcast(e)
        if isinstance(e, tir.Transpose):
            return self.transpose(e)
        if isinstance(e, tir.Fill):
            return self.fill(e)
        if isinstance(e, tir.Reduce):
            return self.reduce(e)
        if isinstance(e, tir.Dot):
            return self.dot(e)
        raise AssertionError(type(e).__name__)  # pragma: no cover

    def elementwise(self, e: tir.Expr) -> Lowered:
        operands = [self.expr(o) for o in _operands(e)]
        result_type = self.type_of(e.type)
        if isinstance(e, tir.Unary):
            op: ir.Op = ir.Unary(op=e.op)
        elif isinstance(e, tir.Binary):
            op = ir.Binary(op=e.op)
        elif isinstance(e, tir.Math):
            op = ir.MathFn(fn=e.fn)
        elif isinstance(e, tir.Cast):
            if operands[0].value.dtype == result_type.dtype:  # type: ignore[union-attr]
                return operands[0]
            op = ir.Cast()
        else:
            op = ir.Select()
        op.operands = [o.value for o in operands]
        value = self.b.value(op, result_type)
        presence = both(self.b, *(o.presence for o in operands))
        zero = isinstance(e, tir.Cast) and operands[0].zero_absent
        zero = zero or (isinstance(e, tir.Unary) and e.op == "neg" and operands[0].zero_absent)
        return Lowered(value, presence, zero)

    def expand_dims(self, e: tir.ExpandDims) -> Lowered:
        x = self.expr(e.operand)
        value = self.b.value(ir.ExpandDims(axis=e.axis, operands=[x.value]), self.type_of(e.type))
        rank = len(e.operand.type.shape)  # type: ignore[union-attr]
        mapping = {a: (a + 1 if a >= e.axis else a) for a in range(rank)}
        presence = renumber(x.presence, mapping, self.b)  # type: ignore[arg-type]
        if presence.general is not None:
            general = ir.ExpandDims(axis=e.axis, operands=[presence.general])
            shape = e.type.shape
            presence = replace(presence, general=self.b.value(general, ir.Tile("bool", shape)))
        return Lowered(value, presence, x.zero_absent)

    def broadcast(self, e: tir.Broadcast) -> Lowered:
        x = self.expr(e.operand)
        source = e.operand.type.shape  # type: ignore[union-attr]
        value = self.b.value(ir.Broadcast(operands=[x.value]), self.type_of(e.type))
        gone = {a: None for a, n in enumerate(source) if n == 1 and e.type.shape[a] != 1}
        presence = renumber(x.presence, gone, self.b)  # type: ignore[arg-type]
        if presence.general is not None:
            general = ir.Broadcast(operands=[presence.general])
            tile = ir.Tile("bool", e.type.shape)
            presence = replace(presence, general=self.b.value(general, tile))
        return Lowered(value, presence, x.zero_absent)

    def transpose(self, e: tir.Transpose) -> Lowered:
        x = self.expr(e.operand)
        value = self.b.value(ir.Transpose(operands=[x.value]), self.type_of(e.type))
        presence = renumber(x.presence, {0: 1, 1: 0}, self.b)
        if presence.general is not None:
            general = ir.Transpose(operands=[presence.general])
            tile = ir.Tile("bool", e.type.shape)
            presence = replace(presence, general=self.b.value(general, tile))
        return Lowered(value, presence, x.zero_absent)

    def fill(self, e: tir.Fill) -> Lowered:
        x = self.expr(e.operand)
        fill = self.expr(e.value)
        present = mask(self.b, x.presence, e.type.shape)
        if present is None:
            return Lowered(x.value, ALL)
        value = fill.value
        if value.is_uniform:
            value = self.b.splat(self.b.cast(value, x.value.dtype), e.type.shape)
        return Lowered(self.b.select(present, x.value, value), ALL)

    def reduce(self, e: tir.Reduce) -> Lowered:
        x = self.expr(e.operand)
        shape = e.operand.type.shape  # type: ignore[union-attr]
        operands = [x.value]
        needs_mask = depends_on(x.presence, e.axis)
        if needs_mask and not (x.zero_absent and reduction_ops.identity_is_zero(e.op)):
            present = mask(self.b, x.presence, shape, {e.axis})
            assert present is not None
            operands.append(present)
        op = ir.Reduce(op=e.op, axis=e.axis, masked=len(operands) > 1, operands=operands)
        value = self.b.value(op, self.type_of(e.type))
        if value.is_uniform:
            return Lowered(value)
        return Lowered(value, self.reduced_presence(x.presence, shape, e.axis))

    def reduced_presence(self, p: Presence, shape: tuple[int, ...], axis: int) -> Presence:
        """A reduction's presence: a lane is present where some lane it combines is."""
        along = [bound for bound in p.bounds if bound.axis == axis]
        rest = tuple(
            replace(bound, axis=bound.axis - (bound.axis > axis))
            for bound in p.bounds
            if bound.axis != axis
        )
        general = None
        uniform = p.uniform
        if p.general is not None:
            present = mask(self.b, Presence(tuple(along), None, p.general), shape)
            assert present is not None
            reduced = tuple(n for a, n in enumerate(shape) if a != axis)
            general = self.b.value(
                ir.Reduce(op="any", axis=axis, operands=[present]), ir.Tile("bool", reduced)
            )
        else:
            uniform = self.b.land(uniform, some_present_any(self.b, along))
        return Presence(rest, uniform, general)

    def dot(self, e: tir.Dot) -> Lowered:
        a, b_, acc = self.expr(e.a), self.expr(e.b), self.expr(e.acc)
        (m, k), n = e.a.type.shape, e.type.shape[1]  # type: ignore[union-attr]
        builder = self.b
        if a.presence.general is not None or b_.presence.general is not None:
            return self.dot_general(e, a, b_, acc)
        a_value, b_value = a.value, b_.value
        if depends_on(a.presence, 1) and not a.zero_absent:
            present = mask(builder, a.presence, (m, k), {1})
            a_value = builder.select(present, a_value, self.zeros(a_value))  # type: ignore[arg-type]
        if depends_on(b_.presence, 0) and not b_.zero_absent:
            present = mask(builder, b_.presence, (k, n), {0})
            b_value = builder.select(present, b_value, self.zeros(b_value))  # type: ignore[arg-type]
        value = builder.value(ir.Dot(operands=[a_value, b_value, acc.value]), self.type_of(e.type))
        rows = tuple(bound for bound in a.presence.bounds if bound.axis == 0)
        cols = tuple(replace(bound, axis=1) for bound in b_.presence.bounds if bound.axis == 1)
        along_k = [bound for bound in a.presence.bounds if bound.axis == 1]
        along_k += [replace(bound, axis=1) for bound in b_.presence.bounds if bound.axis == 0]
        unique: list[Bound] = []
        for bound in along_k:
            if not any(
                bound.start is u.start and bound.extent is u.extent and bound.when is u.when
                for u in unique
            ):
                unique.append(bound)
        uniform = builder.land(a.presence.uniform, b_.presence.uniform)
        uniform = builder.land(uniform, some_present_any(builder, unique))
        product = Presence(rows + cols, uniform)
        return Lowered(value, both(builder, acc.presence, product))

    def dot_general(self, e: tir.Dot, a: Lowered, b_: Lowered, acc: Lowered) -> Lowered:
        """A ``dot`` whose operands' presence is no product of per-axis bounds: the result
        lanes with some pair of present operands are counted by a second product."""
        builder = self.b
        (m, k), n = e.a.type.shape, e.type.shape[1]  # type: ignore[union-attr]
        a_mask = mask(builder, a.presence, (m, k))
        b_mask = mask(builder, b_.presence, (k, n))
        a_value = (
            a.value if a_mask is None else builder.select(a_mask, a.value, self.zeros(a.value))
        )
        b_value = (
            b_.value if b_mask is None else builder.select(b_mask, b_.value, self.zeros(b_.value))
        )
        value = builder.value(ir.Dot(operands=[a_value, b_value, acc.value]), self.type_of(e.type))
        ones_a = (
            builder.cast(a_mask, "f16")
            if a_mask is not None
            else builder.splat(builder.constant(1.0, "f16"), (m, k))
        )
        ones_b = (
            builder.cast(b_mask, "f16")
            if b_mask is not None
            else builder.splat(builder.constant(1.0, "f16"), (k, n))
        )
        zeros = builder.splat(builder.constant(0.0, "f32"), (m, n))
        counts = builder.value(ir.Dot(operands=[ones_a, ones_b, zeros]), ir.Tile("f32", (m, n)))
        some = builder.binary("gt", counts, zeros, "bool")
        return Lowered(value, both(builder, acc.presence, Presence((), None, some)))

    def zeros(self, like: ir.Value) -> ir.Value:
        return self.b.splat(self.b.constant(0, like.dtype), like.tile.shape)

    # ------------------------------------------------------------------ debugging

    def trace(self, stmt: tir.Trace) -> None:
        value = self.expr(stmt.value)
        operands = [value.value]
        trace_mask = None
        if not value.value.is_uniform:
            trace_mask = mask(self.b, value.presence, value.value.tile.shape)
            if trace_mask is not None:
                operands.append(trace_mask)
        if stmt.when is not None:
            operands.append(self.scalar(stmt.when))
        self.b.add(
            ir.Trace(
                label=stmt.name,
                masked=trace_mask is not None,
                conditional=stmt.when is not None,
                operands=operands,
            )
        )

    def device_assert(self, stmt: tir.DeviceAssert) -> None:
        cond = self.expr(stmt.cond)
        operands = [cond.value]
        assert_mask = None
        if not cond.value.is_uniform:
            assert_mask = mask(self.b, cond.presence, cond.value.tile.shape)
            if assert_mask is not None:
                operands.append(assert_mask)
        self.b.add(
            ir.Assert(message=stmt.message, masked=assert_mask is not None, operands=operands)
        )

    # ------------------------------------------------------------------ control flow

    def for_loop(self, stmt: tir.For) -> None:
        start = self.scalar(stmt.start)
        stop = self.scalar(stmt.stop)
        step = self.scalar(stmt.step)
        carried = [name for name in _assigned(stmt.body) if name in self.env]
        iv = ir.Value(self.type_of(stmt.var.type), stmt.var.name)

        def body(env: dict[str, Lowered]) -> None:
            env[stmt.var.name] = Lowered(iv)
            self.env = env
            self.block(stmt.body)

        op = ir.For(operands=[start, stop, step])
        self.carry(op, carried, body, head_args=[iv], body_region=0)

    def while_loop(self, stmt: tir.While) -> None:
        carried = [name for name in _assigned(stmt.body) if name in self.env]

        def body(env: dict[str, Lowered]) -> None:
            self.env = env
            self.block(stmt.body)

        def condition(env: dict[str, Lowered]) -> None:
            self.env = env
            cond = self.scalar(stmt.cond)
            self.b.add(ir.Condition(operands=[cond]))

        op = ir.While()
        self.carry(op, carried, body, head_args=[], body_region=1, condition=condition)

    def carry(
        self,
        op: ir.For | ir.While,
        carried: list[str],
        body,
        head_args: list[ir.Value],
        body_region: int,
        condition=None,
    ) -> None:
        """Build a loop whose body assigns the ``carried`` variables.

        The header's presence starts as the entry's and grows until the body's yield
        adds no bound to it: each bound then applies ``when`` a carried flag holds.
        """
        outer_env = dict(self.env)
        entry = {name: outer_env[name] for name in carried}
        heads = {name: _Head.of(entry[name]) for name in carried}
        for _ in range(8):
            args, bindings = self.head_values(heads, entry)
            regions = [ir.Block() for _ in range(2 if condition else 1)]
            if condition is not None:
                cond_args = [ir.Value(v.type, v.name) for v in args]
                regions[0].args = cond_args
                cond_env = dict(outer_env)
                cond_env.update(self.rebind(heads, bindings, args, cond_args))
                with self.b.inside(regions[0]):
                    condition(cond_env)
            regions[body_region].args = head_args + args
            env = dict(outer_env)
            env.update(bindings)
            with self.b.inside(regions[body_region]):
                body(env)
                # The yield's bounds on values the body defines are folded into its mask:
                # the header can carry only bounds on values from outside the loop.
                yielded = {
                    name: self.normalise(self.env[name], regions[body_region]) for name in carried
                }
                grown = {name: heads[name].grow(yielded[name]) for name in carried}
                if all(grown[name] == heads[name] for name in carried):
                    values = self.head_yield(heads, yielded)
                    self.b.add(ir.Yield(operands=values))
                    break
            heads = grown
        else:  # pragma: no cover - bounds only grow, and there are finitely many
            raise AssertionError("loop presence did not settle")
        op.regions = regions
        op.operands = op.operands + self.head_inits(heads, entry)
        self.env = outer_env
        self.b.add(op, *(v.type for v in args))
        self.env.update(self.bind_results(heads, op.results))

    def branch(self, stmt: tir.If) -> None:
        if isinstance(stmt.cond, tir.Const):  # a compile-time choice: only its side exists
            self.block(stmt.then if stmt.cond.value else stmt.orelse)
            return
        cond = self.scalar(stmt.cond)
        outer_env = dict(self.env)
        assigned = [n for n in _assigned(stmt.then + stmt.orelse) if n in outer_env]
        sides: list[dict[str, Lowered]] = []
        blocks = [ir.Block(), ir.Block()]
        for body, block in zip((stmt.then, stmt.orelse), blocks):
            self.env = dict(outer_env)
            with self.b.inside(block):
                self.block(body)
                sides.append({n: self.normalise(self.env[n], block) for n in assigned})
        heads = {n: _Head.of(sides[0][n]).grow(sides[1][n]) for n in assigned}
        types: list[ir.Type] = []
        for side, block in zip(sides, blocks):
            with self.b.inside(block):
                values = self.head_yield(heads, side)
                block.ops.append(ir.Yield(operands=values))
                types = [v.type for v in values]
        op = ir.If(operands=[cond], regions=blocks)
        self.env = outer_env
        self.b.add(op, *types)
        self.env.update(self.bind_results(heads, op.results))

    def normalise(self, x: Lowered, block: ir.Block) -> Lowered:
        """``x`` with the bounds whose start or extent ``block`` defines folded into its
        general mask: only bounds on values from outside can be carried as flags."""
        local = {v for op in block.walk() for v in op.results} | set(block.args)
        inner = [bd for bd in x.presence.bounds if bd.start in local or bd.extent in local]
        if not inner or x.value.is_uniform:
            return x
        kept = tuple(bd for bd in x.presence.bounds if bd not in inner)
        general = mask(self.b, Presence(tuple(inner), None, x.presence.general), x.value.tile.shape)
        return Lowered(x.value, Presence(kept, x.presence.uniform, general), x.zero_absent)

    # A carried variable travels as: its value, a flag per conditional header bound, its
    # uniform part and its general part (each only where the header has one).

    def head_values(
        self, heads: dict[str, _Head], entry: dict[str, Lowered]
    ) -> tuple[list[ir.Value], dict[str, Lowered]]:
        args: list[ir.Value] = []
        bindings: dict[str, Lowered] = {}
        for name, head in heads.items():
            value = ir.Value(entry[name].value.type, name)
            args.append(value)
            bounds = []
            for bound, always in head.bounds:
                if always:
                    bounds.append(bound)
                    continue
                flag = ir.Value(ir.Uniform("bool"), f"{name}_in")
                args.append(flag)
                bounds.append(replace(bound, when=flag))
            uniform = general = None
            if head.uniform:
                uniform = ir.Value(ir.Uniform("bool"), f"{name}_some")
                args.append(uniform)
            if head.general:
                general = ir.Value(ir.Tile("bool", value.tile.shape), f"{name}_present")
                args.append(general)
            bindings[name] = Lowered(value, Presence(tuple(bounds), uniform, general), head.zero)
        return args, bindings

    def rebind(self, heads, bindings, args, new_args) -> dict[str, Lowered]:
        """``bindings`` with ``args`` replaced by ``new_args`` (the condition region's)."""
        swap = dict(zip(args, new_args))
        out = {}
        for name, x in bindings.items():
            bounds = tuple(replace(bd, when=swap.get(bd.when, bd.when)) for bd in x.presence.bounds)
            p = x.presence
            presence = Presence(
                bounds, swap.get(p.uniform, p.uniform), swap.get(p.general, p.general)
            )  # type: ignore[arg-type]
            out[name] = Lowered(swap[x.value], presence, x.zero_absent)
        return out

    def head_inits(self, heads: dict[str, _Head], entry: dict[str, Lowered]) -> list[ir.Value]:
        return self.head_yield(heads, entry)

    def head_yield(self, heads: dict[str, _Head], values: dict[str, Lowered]) -> list[ir.Value]:
        """What each head argument takes from ``values`` (the entry, a yield or a side)."""
        b = self.b
        out: list[ir.Value] = []
        for name, head in heads.items():
            x = values[name]
            out.append(x.value)
            for bound, always in head.bounds:
                if not always:
                    out.append(_applies(b, x.presence, bound))
            if head.uniform:
                out.append(x.presence.uniform or b.constant(True, "bool"))
            if head.general:
                shape = x.value.tile.shape
                out.append(x.presence.general or b.splat(b.constant(True, "bool"), shape))
        return out

    def bind_results(self, heads: dict[str, _Head], results: list[ir.Value]) -> dict[str, Lowered]:
        out: dict[str, Lowered] = {}
        it = iter(results)
        for name, head in heads.items():
            value = next(it)
            bounds = tuple(
                bound if always else replace(bound, when=next(it)) for bound, always in head.bounds
            )
            uniform = next(it) if head.uniform else None
            general = next(it) if head.general else None
            out[name] = Lowered(value, Presence(bounds, uniform, general), head.zero)
        return out


@dataclass(frozen=True)
class _Head:
    """The shape of a carried variable's presence: its bounds (without ``when``), each
    ``always`` a factor or only under a carried flag, and whether it has uniform and
    general parts."""

    bounds: tuple[tuple[Bound, bool], ...]
    uniform: bool
    general: bool
    zero: bool

    @staticmethod
    def of(x: Lowered) -> _Head:
        tile = not x.value.is_uniform
        bounds: dict[Bound, bool] = {}
        if tile:
            for bound in x.presence.bounds:
                plain = replace(bound, when=None)
                bounds[plain] = bounds.get(plain, False) or bound.when is None
        return _Head(
            tuple(bounds.items()),
            x.presence.uniform is not None,
            tile and x.presence.general is not None,
            x.zero_absent,
        )

    def grow(self, x: Lowered) -> _Head:
        """The head that holds both this one's lanes and ``x``'s (a yield or another side)."""
        other = dict(_Head.of(x).bounds)
        mine = dict(self.bounds)
        bounds = tuple(
            (bound, always and other.get(bound, False)) for bound, always in self.bounds
        ) + tuple((bound, False) for bound in other if bound not in mine)
        return _Head(
            bounds,
            self.uniform or _Head.of(x).uniform,
            self.general or _Head.of(x).general,
            self.zero and x.zero_absent,
        )


def _applies(b: Builder, p: Presence, bound: Bound) -> ir.Value:
    """A uniform flag: whether ``bound`` is a factor of ``p`` (its ``when``, true, or false)."""
    flags = [x.when for x in p.bounds if replace(x, when=None) == bound]
    if not flags:
        return b.constant(False, "bool")
    if any(flag is None for flag in flags):
        return b.constant(True, "bool")
    out = flags[0]
    for flag in flags[1:]:
        out = b.binary("lor", out, flag, "bool")  # type: ignore[arg-type]
    return out  # type: ignore[return-value]


def _assigned(body: tuple[tir.Stmt, ...]) -> list[str]:
    """The variables ``body`` assigns (nested statements included), in order."""
    names: list[str] = []

    def visit(stmts: tuple[tir.Stmt, ...]) -> None:
        for s in stmts:
            if isinstance(s, tir.Assign) and s.var.name not in names:
                names.append(s.var.name)
            elif isinstance(s, (tir.AtomicXchg, tir.AtomicCas)) and s.result is not None:
                pass
            if isinstance(s, tir.For):
                visit(s.body)
            elif isinstance(s, tir.If):
                visit(s.then)
                visit(s.orelse)
            elif isinstance(s, tir.While):
                visit(s.body)

    visit(body)
    return names


def _operands(e: tir.Expr) -> list[tir.Expr]:
    if isinstance(e, (tir.Unary, tir.Cast)):
        return [e.operand]
    if isinstance(e, tir.Math):
        return list(e.operands)
    if isinstance(e, tir.Binary):
        return [e.left, e.right]
    assert isinstance(e, tir.Select)
    return [e.cond, e.if_true, e.if_false]


def _inside(start: tir.Expr, length: int, dim: str | int) -> bool:
    """The window ``start :+ length`` provably inside an axis of literal extent ``dim``."""
    return (
        isinstance(dim, int)
        and isinstance(start, tir.Const)
        and int(start.value) >= 0
        and int(start.value) + length <= dim
    )


def span_of(op: ir.Op) -> Span:
    return op.span
