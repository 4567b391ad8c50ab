"""Integer index expressions as affine forms over the block, loop iterations and invariants.

An index such as ``ctx.block.x * 256 + k`` becomes ``256·block.x + 1·iter(k) + start(k)``:
a constant plus integer multiples of *atoms*.  Atoms are

* ``Block(axis)``: the block's coordinate, different between the two blocks compared;
* ``Iteration(loop, trips)``: how many steps a ``for`` loop has taken, 0 ≤ it < trips
  (``trips`` None when not known at compile time);
* ``Invariant(expr)``: any other value that is the same in every block and every
  iteration (an extent, a scalar argument, ``ctx.grid.x``, ``N / 2``), keyed by its IR;
* ``GridStride(loop, axis)``: ``ctx.grid.axis`` times the iteration count of a
  grid-stride loop, unbounded.

A value that is neither (a load, a mutable variable, a product of two unknowns
that depends on the block) has no form: ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phobos.compile.ir import nodes as ir

BLOCK_AXES = ("x", "y", "z")


@dataclass(frozen=True)
class Block:
    axis: str


@dataclass(frozen=True)
class Iteration:
    loop: str
    trips: int | None


@dataclass(frozen=True)
class Invariant:
    expr: object


@dataclass(frozen=True)
class GridStride:
    """``ctx.grid.<axis> · iteration`` of a grid-stride loop (``step ctx.grid.x * S``)."""

    loop: str
    axis: str


Atom = Block | Iteration | Invariant | GridStride


@dataclass(frozen=True)
class Affine:
    """``constant + Σ coefficient·atom`` with integer coefficients, none of them zero."""

    constant: int = 0
    terms: tuple[tuple[Atom, int], ...] = field(default=())

    @staticmethod
    def of(constant: int = 0, terms: dict[Atom, int] | None = None) -> Affine:
        kept = tuple((a, c) for a, c in (terms or {}).items() if c != 0)
        return Affine(constant, kept)

    @property
    def coefficients(self) -> dict[Atom, int]:
        return dict(self.terms)

    def coefficient(self, atom: Atom) -> int:
        return self.coefficients.get(atom, 0)

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        merged = self.coefficients
        for atom, c in other.terms:
            merged[atom] = merged.get(atom, 0) + sign * c
        return Affine.of(self.constant + sign * other.constant, merged)

    def times(self, k: int) -> Affine:
        return Affine.of(self.constant * k, {a: c * k for a, c in self.terms})

    def without(self, atom: Atom) -> Affine:
        return Affine.of(self.constant, {a: c for a, c in self.terms if a != atom})

    def substitute(self, atom: Atom, value: int) -> Affine:
        return Affine(self.constant + self.coefficient(atom) * value, ()).plus(self.without(atom))

    def blocks(self) -> dict[str, int]:
        """The coefficient of each block axis the form depends on."""
        return {a.axis: c for a, c in self.terms if isinstance(a, Block)}

    def invariants(self) -> frozenset[tuple[Atom, int]]:
        return frozenset((a, c) for a, c in self.terms if isinstance(a, Invariant))

    def iteration_range(self) -> tuple[int, int] | None:
        """The least and greatest value of the iteration terms, None if a loop is unbounded."""
        low = high = 0
        for atom, c in self.terms:
            if isinstance(atom, GridStride):
                return None
            if not isinstance(atom, Iteration):
                continue
            if atom.trips is None:
                return None
            if atom.trips <= 0:
                continue
            span = c * (atom.trips - 1)
            low, high = low + min(0, span), high + max(0, span)
        return low, high

    @property
    def is_constant(self) -> bool:
        return not self.terms


@dataclass
class Bindings:
    """What a variable read means: an affine form, or None (unknown, may depend on the block).

    ``definitions`` holds, for each variable with one value for the whole block
    (a ``let``, or a ``var`` never assigned), its defining expression with the
    variables it reads written out in turn (``races.terms``): the tile proofs
    read the ``/`` and ``%`` that have no affine form there.
    """

    values: dict[str, Affine | None] = field(default_factory=dict)
    definitions: dict[str, ir.Expr] = field(default_factory=dict)

    def child(self) -> Bindings:
        return Bindings(dict(self.values), dict(self.definitions))


def affine(expr: ir.Expr, bindings: Bindings) -> Affine | None:
    """``expr`` as an affine form, or None when it is not one (or may vary unpredictably)."""
    if isinstance(expr, ir.Const):
        if isinstance(expr.value, bool) or not isinstance(expr.value, int):
            return None
        return Affine(expr.value)
    if isinstance(expr, ir.CtxValue):
        if expr.group == "block":
            return Affine.of(0, {Block(expr.axis): 1})
        return Affine.of(0, {Invariant(expr): 1})
    if isinstance(expr, (ir.Extent, ir.ScalarArg)):
        return Affine.of(0, {Invariant(expr): 1})
    if isinstance(expr, ir.Read):
        return bindings.values.get(expr.var.name)
    if isinstance(expr, ir.Cast):
        is_int = expr.type.dtype in ir.INT_DTYPES or expr.type.dtype == "index"
        return affine(expr.operand, bindings) if is_int else None
    if isinstance(expr, ir.Unary) and expr.op == "neg":
        inner = affine(expr.operand, bindings)
        return None if inner is None else inner.times(-1)
    if isinstance(expr, ir.Binary):
        return _binary(expr, bindings)
    return _opaque(expr, bindings)


def _binary(expr: ir.Binary, bindings: Bindings) -> Affine | None:
    left, right = affine(expr.left, bindings), affine(expr.right, bindings)
    if left is not None and right is not None:
        if expr.op in ("add", "sub"):
            return left.plus(right, 1 if expr.op == "add" else -1)
        if expr.op == "mul" and right.is_constant:
            return left.times(right.constant)
        if expr.op == "mul" and left.is_constant:
            return right.times(left.constant)
        if expr.op == "shl" and right.is_constant and 0 <= right.constant < 63:
            return left.times(1 << right.constant)
    return _opaque(expr, bindings)


def _opaque(expr: ir.Expr, bindings: Bindings) -> Affine | None:
    """A value with no affine form: an invariant atom when it is the same everywhere."""
    if isinstance(expr.type, ir.ScalarT) and is_invariant(expr, bindings):
        return Affine.of(0, {Invariant(expr): 1})
    return None


def is_invariant(expr: ir.Expr, bindings: Bindings) -> bool:
    """True when ``expr`` has one value in every block and every loop iteration."""
    if isinstance(expr, (ir.Const, ir.Extent, ir.ScalarArg)):
        return True
    if isinstance(expr, ir.CtxValue):
        return expr.group == "grid"
    if isinstance(expr, ir.Read):
        form = bindings.values.get(expr.var.name)
        return form is not None and all(isinstance(a, Invariant) for a, _ in form.terms)
    if isinstance(expr, (ir.Unary, ir.Cast)):
        return is_invariant(expr.operand, bindings)
    if isinstance(expr, ir.Math):
        return all(is_invariant(o, bindings) for o in expr.operands)
    if isinstance(expr, ir.Binary):
        return is_invariant(expr.left, bindings) and is_invariant(expr.right, bindings)
    if isinstance(expr, ir.Select):
        parts = (expr.cond, expr.if_true, expr.if_false)
        return all(is_invariant(p, bindings) for p in parts)
    return False
