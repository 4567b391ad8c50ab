"""Each Python expression spelling → the one Phobos expression it spells."""

from __future__ import annotations

import pytest

from phobos.compile.syntax import ast as ph
from phobos.frontend import translate_source

N, K, T, A, B, C = (ph.Name(n) for n in ("N", "K", "t", "a", "b", "c"))
F32 = ph.ScalarType("f32")

CASES = [
    ("N", N),
    ("7", ph.IntLit(7)),
    ("2.5", ph.FloatLit(2.5)),
    ("True", ph.BoolLit(True)),
    ("False", ph.BoolLit(False)),
    ("ph.inf", ph.Name("inf")),
    ("-ph.inf", ph.Unary("-", ph.Name("inf"))),
    ("ph.ctx.block.x", ph.Ctx("block", "x")),
    ("ph.ctx.grid.z", ph.Ctx("grid", "z")),
    ("a + b * c", ph.Binary("+", A, ph.Binary("*", B, C))),
    ("(a - b) / c", ph.Binary("/", ph.Binary("-", A, B), C)),
    ("a // b", ph.Binary("/", A, B)),
    ("a % b", ph.Binary("%", A, B)),
    ("a @ b", ph.Binary("@", A, B)),
    ("a << 2", ph.Binary("<<", A, ph.IntLit(2))),
    ("a >> 2", ph.Binary(">>", A, ph.IntLit(2))),
    ("a & b", ph.Binary("&", A, B)),
    ("a | b", ph.Binary("|", A, B)),
    ("a ^ b", ph.Binary("^", A, B)),
    ("~a", ph.Unary("~", A)),
    ("-a", ph.Unary("-", A)),
    ("not a", ph.Unary("!", A)),
    ("a and b", ph.Binary("&&", A, B)),
    ("a or b", ph.Binary("||", A, B)),
    ("a and b and c", ph.Binary("&&", ph.Binary("&&", A, B), C)),
    ("a or b and c", ph.Binary("||", A, ph.Binary("&&", B, C))),
    ("a == b", ph.Binary("==", A, B)),
    ("a != b", ph.Binary("!=", A, B)),
    ("a < b", ph.Binary("<", A, B)),
    ("a <= b", ph.Binary("<=", A, B)),
    ("a > b", ph.Binary(">", A, B)),
    ("a >= b", ph.Binary(">=", A, B)),
    ("ph.exp(t)", ph.Call("exp", (T,))),
    ("ph.tanh(t)", ph.Call("tanh", (T,))),
    ("ph.round(t)", ph.Call("round", (T,))),
    ("ph.pow(a, b)", ph.Call("pow", (A, B))),
    ("ph.fma(a, b, c)", ph.Call("fma", (A, B, C))),
    ("ph.clamp(t, a, b)", ph.Call("clamp", (T, A, B))),
    ("ph.umulhi(a, b)", ph.Call("umulhi", (A, B))),
    ("ph.rand(a, b)", ph.Call("rand", (A, B))),
    ("ph.randn(a, b)", ph.Call("randn", (A, B))),
    ("ph.randint(a, b)", ph.Call("randint", (A, B))),
    ("ph.sum(t, axis=1)", ph.Call("sum", (T,), (ph.Keyword("axis", ph.IntLit(1)),))),
    ("ph.max(t, axis=0)", ph.Call("max", (T,), (ph.Keyword("axis", ph.IntLit(0)),))),
    ("ph.where(c, a, b)", ph.Call("where", (C, A, B))),
    ("ph.dot(a, b, c)", ph.Call("dot", (A, B, C))),
    ("ph.maximum(a, b)", ph.Call("maximum", (A, B))),
    ("ph.fill(t, 0.0)", ph.Call("fill", (T, ph.FloatLit(0.0)))),
    ("ph.trans(t)", ph.Call("trans", (T,))),
    ("ph.f16(t)", ph.Call("f16", (T,))),
    ("ph.bool(t)", ph.Call("bool", (T,))),
    ("ph.f16(2.5)", ph.FloatLit(2.5, "f16")),
    ("ph.f32(1)", ph.IntLit(1, "f32")),
    ("ph.i64(7)", ph.IntLit(7, "i64")),
    ("ph.f16(-2.5)", ph.Call("f16", (ph.Unary("-", ph.FloatLit(2.5)),))),
    ("ph.zeros[ph.f32][N, K]", ph.TileCtor("zeros", F32, (N, K))),
    ("ph.zeros[ph.f32][N]", ph.TileCtor("zeros", F32, (N,))),
    ("t[a]", ph.Subscript(T, (ph.Point(A),))),
    ("t[a:+N]", ph.Subscript(T, (ph.Window(A, N),))),
    ("t[a, b:+K]", ph.Subscript(T, (ph.Point(A), ph.Window(B, K)))),
    (
        "t[a * N:+N, 0:+K]",
        ph.Subscript(T, (ph.Window(ph.Binary("*", A, N), N), ph.Window(ph.IntLit(0), K))),
    ),
    ("t[:, None]", ph.Subscript(T, (ph.FullAxis(), ph.NewAxis()))),
    ("t[None, :]", ph.Subscript(T, (ph.NewAxis(), ph.FullAxis()))),
]


@pytest.mark.parametrize(("python", "phobos"), CASES, ids=[c[0] for c in CASES])
def test_expression_spelling(expr, python: str, phobos: ph.Expr) -> None:
    assert expr(python) == phobos


def test_a_call_of_a_ph_func_by_name(translate) -> None:
    program = translate(
        """
        @ph.func
        def twice(a: ph.f32) -> ph.f32:
            return a + a


        @ph.kernel
        def k(x: ph.tensor[ph.f32][N]):
            x[0:+N] = twice(x[0:+N])
        """
    )
    (store,) = program.module.kernel("k").body.body
    assert store.value == ph.Call(
        "twice", (ph.Subscript(ph.Name("x"), (ph.Window(ph.IntLit(0), N),)),)
    )


def test_other_aliases_of_phobos_lang() -> None:
    for header, prefix in [
        ("from phobos import lang as P", "P"),
        ("from phobos import lang", "lang"),
        ("import phobos.lang", "phobos.lang"),
    ]:
        source = (
            f"{header}\n\n@{prefix}.kernel\ndef k(x: {prefix}.tensor[{prefix}.f32][N]):\n"
            f"    v: {prefix}.let = {prefix}.exp(x[{prefix}.ctx.block.x:+N])\n"
        )
        (let,) = translate_source(source, "/m.py").module.kernel("k").body.body
        window = ph.Subscript(ph.Name("x"), (ph.Window(ph.Ctx("block", "x"), N),))
        assert let == ph.Let("v", ph.Call("exp", (window,))), header
