"""Every tensor access of a kernel, with its indices as affine forms.

A walk over the IR that keeps, at each point, what each variable means (its
affine form, or unknown), which ``for`` loops enclose it, and which block
coordinates an enclosing ``if ctx.block.x == 0`` pins.  Conditions are
otherwise ignored: an access under an ``if`` may or may not run, and a footprint
that is too large only makes the proof harder, never wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields, is_dataclass

from phobos.compile.ir import nodes as ir
from phobos.compile.races.affine import (
    Affine,
    Bindings,
    GridStride,
    Invariant,
    Iteration,
    affine,
)
from phobos.compile.races.terms import inline, small
from phobos.compile.span import Span

STORE, ATOMIC, LOAD = "store", "atomic", "load"


@dataclass(frozen=True)
class Axis:
    """One tensor axis of an access: ``start :+ length`` (a point index has length 1).

    ``term`` is the start with the fixed variables it reads written out, for the
    tile proofs where ``start`` has no affine form.
    """

    start: Affine | None
    length: int
    term: ir.Expr


@dataclass(frozen=True)
class Access:
    tensor: str
    dims: tuple[str | int, ...]  # the tensor's extents: names, or literal sizes
    kind: str  # STORE, ATOMIC or LOAD
    axes: tuple[Axis, ...]
    pins: tuple[tuple[str, int], ...]  # block axes fixed by enclosing `if ctx.block.a == k`
    span: Span


def accesses(kernel: ir.Kernel) -> list[Access]:
    """The kernel's loads, stores and atomic updates, in program order."""
    walker = _Walker(_assigned(kernel.body))
    walker.block(kernel.body, Bindings(), {})
    return walker.found


def block_axes_used(kernel: ir.Kernel) -> frozenset[str]:
    """The axes along which the kernel tells blocks apart (it reads ctx.block or ctx.grid)."""
    return frozenset(n.axis for n in _nodes(kernel.body) if isinstance(n, ir.CtxValue))


class _Walker:
    def __init__(self, assigned: frozenset[str]) -> None:
        self.assigned = assigned
        self.found: list[Access] = []

    def block(self, body: tuple[ir.Stmt, ...], env: Bindings, pins: dict[str, int]) -> None:
        for stmt in body:
            self.statement(stmt, env, pins)

    def statement(self, stmt: object, env: Bindings, pins: dict[str, int]) -> None:
        if isinstance(stmt, ir.For):
            self.loads((stmt.start, stmt.stop, stmt.step), env, pins)
            inner = env.child()
            inner.values[stmt.var.name] = _loop_form(stmt, env)
            inner.definitions.pop(stmt.var.name, None)
            self.block(stmt.body, inner, pins)
        elif isinstance(stmt, ir.If):
            self.loads((stmt.cond,), env, pins)
            self.block(stmt.then, env.child(), {**pins, **_pinned(stmt.cond, env)})
            self.block(stmt.orelse, env.child(), pins)
        elif isinstance(stmt, ir.While):
            self.loads((stmt.cond,), env, pins)
            self.block(stmt.body, env.child(), pins)
        else:
            self.simple(stmt, env, pins)

    def simple(self, stmt: object, env: Bindings, pins: dict[str, int]) -> None:
        self.loads(tuple(_children(stmt)), env, pins)
        if isinstance(stmt, ir.Store):
            self.record(stmt.tensor, STORE, stmt.indices, env, pins, stmt.span)
        elif isinstance(stmt, (ir.AtomicAdd, ir.AtomicMax, ir.AtomicXchg, ir.AtomicCas)):
            self.record(stmt.tensor, ATOMIC, stmt.indices, env, pins, stmt.span)
        if isinstance(stmt, ir.Define):
            fixed = not stmt.var.mutable or stmt.var.name not in self.assigned
            env.values[stmt.var.name] = affine(stmt.value, env) if fixed else None
            _define(env, stmt.var.name, stmt.value if fixed else None)
        result = getattr(stmt, "result", None)
        if isinstance(result, ir.Variable):
            env.values[result.name] = None
            _define(env, result.name, None)

    def loads(self, exprs: tuple[object, ...], env: Bindings, pins: dict[str, int]) -> None:
        for node in _nodes(exprs):
            if isinstance(node, ir.Load):
                self.record(node.tensor, LOAD, node.indices, env, pins, node.span)

    def record(self, tensor, kind, indices, env, pins, span) -> None:
        axes = tuple(_axis(index, env) for index in indices)
        pinned = tuple(sorted(pins.items()))
        self.found.append(Access(tensor.name, tensor.dims, kind, axes, pinned, span))


def _define(env: Bindings, name: str, value: ir.Expr | None) -> None:
    """Remember ``name``'s written-out definition, or forget it (a value that may change)."""
    term = None if value is None else inline(value, env.definitions)
    if term is not None and isinstance(term.type, ir.ScalarT) and small(term):
        env.definitions[name] = term
    else:
        env.definitions.pop(name, None)


def _axis(index: ir.TensorIndex, env: Bindings) -> Axis:
    if isinstance(index, ir.WindowIndex):
        return Axis(affine(index.start, env), index.length, inline(index.start, env.definitions))
    return Axis(affine(index.index, env), 1, inline(index.index, env.definitions))


def _loop_form(loop: ir.For, env: Bindings) -> Affine | None:
    """The loop variable as ``start + step·iteration``, when the step is a known constant,
    or as ``start + S·grid.a·iteration`` for a grid-stride loop over ``S·block.a + ...``."""
    start, stop, step = (affine(e, env) for e in (loop.start, loop.stop, loop.step))
    if start is None or step is None:
        return None
    if not step.is_constant:
        return _grid_stride(loop, start, step)
    if step.constant <= 0:
        return None
    trips = None
    if stop is not None:
        distance = stop.plus(start, -1)
        if distance.is_constant:
            trips = max(0, -(-distance.constant // step.constant))
    counter = Affine.of(0, {Iteration(loop.var.name, trips): step.constant})
    return start.plus(counter)


def _grid_stride(loop: ir.For, start: Affine, step: Affine) -> Affine | None:
    if step.constant != 0 or len(step.terms) != 1:
        return None
    ((atom, stride),) = step.terms
    grid = atom.expr if isinstance(atom, Invariant) else None
    if not (isinstance(grid, ir.CtxValue) and grid.group == "grid") or stride <= 0:
        return None
    if start.blocks() != {grid.axis: stride}:
        return None
    return start.plus(Affine.of(0, {GridStride(loop.var.name, grid.axis): stride}))


def _pinned(cond: ir.Expr, env: Bindings) -> dict[str, int]:
    """Block coordinates a condition fixes: ``ctx.block.x == 0 && ctx.block.y == 1``."""
    if isinstance(cond, ir.Binary) and cond.op == "land":
        return {**_pinned(cond.left, env), **_pinned(cond.right, env)}
    if not (isinstance(cond, ir.Binary) and cond.op == "eq"):
        return {}
    left, right = affine(cond.left, env), affine(cond.right, env)
    if left is None or right is None:
        return {}
    difference = left.plus(right, -1)
    blocks = difference.blocks()
    if len(blocks) != 1 or len(difference.terms) != 1:
        return {}
    ((axis, c),) = blocks.items()
    if c in (1, -1):
        return {axis: -difference.constant * c}
    return {}


def _assigned(body: tuple[ir.Stmt, ...]) -> frozenset[str]:
    return frozenset(n.var.name for n in _nodes(body) if isinstance(n, ir.Assign))


def _children(node: object) -> Iterator[object]:
    for f in fields(node):  # type: ignore[arg-type]
        if f.name not in ("span", "type", "tensor", "var", "result"):
            yield getattr(node, f.name)


def _nodes(root: object) -> Iterator[object]:
    """Every IR node under ``root`` (a node or a tuple of nodes), itself included."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif is_dataclass(node) and not isinstance(node, type):
            yield node
            stack.extend(_children(node))
