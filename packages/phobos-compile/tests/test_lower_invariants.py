"""Random programs: the checker answers with a PhobosError or with IR that keeps the IR's rules.

The rules checked on every lowered kernel are those the back ends rely on: the
operands of an elementwise op share one element type and one shape, broadcasts
are explicit, tensor indices are ``index`` scalars, a stored value has the
window's shape and the tensor's type, and a partial value is never assigned to
a variable that is not partial.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax.parser import parse

HEADER = (
    "@autotune(B in {8})\n"
    "kernel k(x: tensor<f32>[N], h: tensor<f16>[N], u: tensor<u8>[N], "
    "a: f32, n: i32, w: i64, b: bool) {\n"
)
ATOMS = (
    "a", "n", "w", "b", "1", "2.5", "-1", "inf", "B", "N", "ctx.block.x", "x[0 :+ 8]", "x[n]",
    "h[0 :+ 8]", "x[0 :+ 4][:, newaxis]", "zeros<f32>[4, 8]", "arange(8)", "true", "7i64", "x",
    "u[0 :+ 8]", "h[0 :+ 4][newaxis, :]",
)  # fmt: skip
OPERATORS = ("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "==", "<", "&&", "||", "@")
CALLS = (
    "exp",
    "abs",
    "f16",
    "i32",
    "index",
    "sum",
    "max",
    "prod",
    "any",
    "all",
    "xor_sum",
    "trans",
    "fill",
    "maximum",
    "where",
    "dot",
)


def random_expr(rng: random.Random, depth: int) -> str:
    pick = rng.random()
    if depth == 0 or pick < 0.3:
        return rng.choice(ATOMS)
    if pick < 0.6:
        op = rng.choice(OPERATORS)
        return f"({random_expr(rng, depth - 1)} {op} {random_expr(rng, depth - 1)})"
    if pick < 0.7:
        return rng.choice("-!~") + random_expr(rng, depth - 1)
    args = ", ".join(random_expr(rng, depth - 1) for _ in range(rng.randint(1, 3)))
    func = rng.choice(CALLS)
    if func in ("sum", "max", "prod", "any", "all", "xor_sum") and rng.random() < 0.5:
        args += ", axis=" + rng.choice(("0", "1", "B", "n"))
    return f"{func}({args})"


def random_body(rng: random.Random) -> str:
    e = lambda depth: random_expr(rng, depth)  # noqa: E731
    return rng.choice(
        (
            f"let t = {e(3)}",
            f"x[0 :+ 8] = {e(3)}",
            f"var t = {e(2)}\nt = {e(2)}",
            f"var t = {e(2)}\nfor i in 0 .. N step B {{\n    t += {e(2)}\n}}",
            f"if {e(2)} {{\n}}",
            f"for i in {e(1)} .. {e(1)} step {e(1)} {{\n}}",
            f"atomic_add(x[0 :+ 8], {e(2)})",
            f"let t = {e(2)}[{rng.choice((':', ':, newaxis', '0', 'newaxis, :'))}]",
        )
    )


def shape(t: ir.IRType) -> tuple[int, ...] | None:
    return t.shape if isinstance(t, ir.TileT) else None


def partial(t: ir.IRType) -> bool:
    return isinstance(t, ir.TileT) and t.partial


def window_shape(indices: tuple[ir.TensorIndex, ...]) -> tuple[int, ...] | None:
    return tuple(i.length for i in indices if isinstance(i, ir.WindowIndex)) or None


def check_indices(indices: tuple[ir.TensorIndex, ...]) -> None:
    for index in indices:
        value = index.index if isinstance(index, ir.PointIndex) else index.start
        assert value.type == ir.ScalarT("index")
        check_expr(value)


def check_expr(e: ir.Expr) -> None:
    for f in dataclasses.fields(e):
        child = getattr(e, f.name)
        if f.name == "indices":
            check_indices(child)
        elif f.name not in ("type", "var", "param", "tensor") and hasattr(child, "type"):
            check_expr(child)
    t = e.type
    if isinstance(e, ir.Binary):
        assert e.left.type.dtype == e.right.type.dtype
        assert shape(e.left.type) == shape(e.right.type) == shape(t)
        assert partial(t) == (partial(e.left.type) or partial(e.right.type))
    elif isinstance(e, ir.Select):
        assert e.cond.type.dtype == "bool"
        assert shape(e.cond.type) == shape(e.if_true.type) == shape(e.if_false.type) == shape(t)
        assert e.if_true.type.dtype == e.if_false.type.dtype == t.dtype
    elif isinstance(e, (ir.Unary, ir.Cast)):
        assert shape(e.operand.type) == shape(t) and partial(e.operand.type) == partial(t)
    elif isinstance(e, ir.Math):
        for o in e.operands:
            check_expr(o)
        assert all(shape(o.type) == shape(t) for o in e.operands)
        assert partial(t) == any(partial(o.type) for o in e.operands)
    elif isinstance(e, ir.Splat):
        assert shape(e.operand.type) is None and not t.partial
    elif isinstance(e, ir.Broadcast):
        pairs = zip(e.operand.type.shape, t.shape, strict=True)
        assert all(have in (1, want) for have, want in pairs)
    elif isinstance(e, ir.ExpandDims):
        grown = list(e.operand.type.shape)
        grown.insert(e.axis, 1)
        assert tuple(grown) == t.shape
    elif isinstance(e, ir.Dot):
        assert e.acc.type.shape == t.shape and e.a.type.dtype == e.b.type.dtype
    elif isinstance(e, ir.Load):
        assert shape(t) == window_shape(e.indices)


def check_body(stmts: tuple[ir.Stmt, ...]) -> None:
    for s in stmts:
        if isinstance(s, (ir.Define, ir.Assign)):
            check_expr(s.value)
            assert s.value.type.dtype == s.var.type.dtype
            assert shape(s.value.type) == shape(s.var.type)
            assert partial(s.var.type) or not partial(s.value.type)
        elif isinstance(s, (ir.Store, ir.AtomicAdd)):
            check_indices(s.indices)
            check_expr(s.value)
            assert shape(s.value.type) == window_shape(s.indices)
            assert s.value.type.dtype == s.tensor.dtype
        elif isinstance(s, ir.For):
            for bound in (s.start, s.stop, s.step):
                check_expr(bound)
                assert bound.type == s.var.type
            check_body(s.body)
        elif isinstance(s, (ir.If, ir.While)):
            check_expr(s.cond)
            assert s.cond.type == ir.ScalarT("bool")
            check_body(s.then + s.orelse if isinstance(s, ir.If) else s.body)


@pytest.mark.parametrize("seed", range(4))
def test_random_programs_lower_to_well_formed_ir_or_fail_cleanly(seed: int):
    rng = random.Random(seed)
    lowered = 0
    for _ in range(150):
        text = HEADER + random_body(rng) + "\n}\n"
        try:
            kernel = lower(parse(text, "random.ph"), "k", {"B": 8})
        except PhobosError as failure:
            assert failure.span.line > 0, text
            continue
        check_body(kernel.body)
        lowered += 1
    assert lowered > 5
