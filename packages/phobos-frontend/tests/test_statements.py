"""Each Python statement spelling → the one Phobos statement it spells."""

from __future__ import annotations

from phobos.compile.syntax import ast as ph

X, N, K, BK, IDX = (ph.Name(n) for n in ("x", "N", "K", "BK", "i"))
ZERO, ONE = ph.IntLit(0), ph.IntLit(1)


def test_bindings_and_assignments(kernel_body) -> None:
    body = kernel_body(
        """
        a: ph.let = 1
        b: ph.var = 0
        b = b + a
        b += a
        b -= 1
        b //= 2
        b <<= 1
        x[0:+N] = x[0:+N] * 2.0
        x[0] = 1.0
        """
    )
    a, b = ph.Name("a"), ph.Name("b")
    assert body == (
        ph.Let("a", ONE),
        ph.Var("b", ZERO),
        ph.Assign(b, ph.Binary("+", b, a)),
        ph.Assign(b, a, op="+"),
        ph.Assign(b, ONE, op="-"),
        ph.Assign(b, ph.IntLit(2), op="/"),
        ph.Assign(b, ONE, op="<<"),
        ph.Assign(
            ph.Subscript(X, (ph.Window(ZERO, N),)),
            ph.Binary("*", ph.Subscript(X, (ph.Window(ZERO, N),)), ph.FloatLit(2.0)),
        ),
        ph.Assign(ph.Subscript(X, (ph.Point(ZERO),)), ph.FloatLit(1.0)),
    )


def test_for_loops_over_range(kernel_body) -> None:
    body = kernel_body(
        """
        for k in range(0, K, BK):
            pass
        for k in range(1, K):
            pass
        for k in range(K):
            pass
        """
    )
    empty = ph.Block(())
    assert body == (
        ph.For("k", ZERO, K, BK, empty),
        ph.For("k", ONE, K, None, empty),
        ph.For("k", ZERO, K, None, empty),
    )


def test_if_elif_else_and_while(kernel_body) -> None:
    body = kernel_body(
        """
        i: ph.var = 0
        if i < 1:
            i = 1
        elif i < 2:
            i = 2
        else:
            i = 3
        while i > 0:
            i -= 1
        if i == 0:
            return
        """
    )

    def assign(value: int) -> ph.Block:
        return ph.Block((ph.Assign(IDX, ph.IntLit(value)),))

    def lt(value: int) -> ph.Expr:
        return ph.Binary("<", IDX, ph.IntLit(value))

    assert body[1] == ph.If(lt(1), assign(1), ph.Block((ph.If(lt(2), assign(2), assign(3)),)))
    assert body[2] == ph.While(ph.Binary(">", IDX, ZERO), ph.Block((ph.Assign(IDX, ONE, op="-"),)))
    assert body[3] == ph.If(ph.Binary("==", IDX, ZERO), ph.Block((ph.Return(),)))


def test_else_holding_an_if_is_else_if(kernel_body) -> None:
    nested = kernel_body(
        """
        if x[0] > 0.0:
            x[0] = 0.0
        else:
            if x[0] < 1.0:
                x[0] = 1.0
        """
    )
    flat = kernel_body(
        """
        if x[0] > 0.0:
            x[0] = 0.0
        elif x[0] < 1.0:
            x[0] = 1.0
        """
    )
    assert nested == flat


def test_an_expression_statement(kernel_body) -> None:
    (stmt,) = kernel_body("ph.atomic_add(x, 0, 1.0)\n")
    assert stmt == ph.ExprStmt(ph.Call("atomic_add", (X, ZERO, ph.FloatLit(1.0))))
