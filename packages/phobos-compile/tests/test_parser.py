"""The parser: trees, precedence, comments as trivia, spans and syntax errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phobos.compile.diagnostics import PhobosError
from phobos.compile.span import Span
from phobos.compile.syntax import ast, format_module, parse

DATA = Path(__file__).parent / "data" / "syntax"
SEED = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""


def expr(text: str) -> ast.Expr:
    """The value of ``let v = text`` inside a kernel."""
    stmt = body(f"let v = {text}")[0]
    assert isinstance(stmt, ast.Let)
    return stmt.value


def body(text: str) -> tuple[ast.Stmt, ...]:
    indented = "".join("    " + line + "\n" for line in text.splitlines())
    return parse(f"kernel k() {{\n{indented}}}\n").kernels[0].body.body


def n(name: str) -> ast.Name:
    return ast.Name(name)


def b(op: str, left: ast.Expr, right: ast.Expr) -> ast.Binary:
    return ast.Binary(op, left, right)


def block_of(tensor: str) -> ast.Subscript:
    """``tensor[base :+ BLOCK]``."""
    return ast.Subscript(n(tensor), (ast.Window(n("base"), n("BLOCK")),))


def test_seed_tree() -> None:
    f32 = ast.ScalarType("f32")
    vector = ast.TensorType(f32, (n("N"),))
    expected = ast.Module(
        (
            ast.Kernel(
                "saxpy",
                (
                    ast.Param("x", vector),
                    ast.Param("y", vector),
                    ast.Param("out", vector),
                    ast.Param("alpha", f32),
                ),
                ast.Block(
                    (
                        ast.Let("base", b("*", ast.Ctx("block", "x"), n("BLOCK"))),
                        ast.Assign(
                            block_of("out"),
                            b("+", b("*", n("alpha"), block_of("x")), block_of("y")),
                        ),
                    )
                ),
                (ast.TuneParam("BLOCK", ast.PowerRange(ast.IntLit(16), ast.IntLit(8192))),),
            ),
        )
    )
    assert parse(SEED, "saxpy.ph") == expected


def test_seed_spans() -> None:
    module = parse(SEED, "saxpy.ph")
    kernel = module.kernels[0]
    assert kernel.span == Span("saxpy.ph", 2, 1, 5, 2)
    assert kernel.autotune[0].span == Span("saxpy.ph", 1, 11, 1, 30)
    alpha = SEED.splitlines()[1].index("alpha: f32") + 1
    assert kernel.params[3].span == Span("saxpy.ph", 2, alpha, 2, alpha + len("alpha: f32"))
    let, assign = kernel.body.body
    assert let.span == Span("saxpy.ph", 3, 5, 3, 35)
    assert let.value.span == Span("saxpy.ph", 3, 16, 3, 35)
    assert assign.target.items[0].span == Span("saxpy.ph", 4, 9, 4, 22)


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("a + b * c", b("+", n("a"), b("*", n("b"), n("c")))),
        ("a - b - c", b("-", b("-", n("a"), n("b")), n("c"))),
        ("a - (b - c)", b("-", n("a"), b("-", n("b"), n("c")))),
        ("a & b == c", b("&", n("a"), b("==", n("b"), n("c")))),
        ("a | b ^ c & d", b("|", n("a"), b("^", n("b"), b("&", n("c"), n("d"))))),
        ("a || b && c", b("||", n("a"), b("&&", n("b"), n("c")))),
        ("a < b << c", b("<", n("a"), b("<<", n("b"), n("c")))),
        ("a @ b + c", b("+", b("@", n("a"), n("b")), n("c"))),
        ("-a * b", b("*", ast.Unary("-", n("a")), n("b"))),
        ("!a && ~b", b("&&", ast.Unary("!", n("a")), ast.Unary("~", n("b")))),
        ("-x[i]", ast.Unary("-", ast.Subscript(n("x"), (ast.Point(n("i")),)))),
        ("--x", ast.Unary("-", ast.Unary("-", n("x")))),
        ("(a + b)[0]", ast.Subscript(b("+", n("a"), n("b")), (ast.Point(ast.IntLit(0)),))),
    ],
)
def test_precedence(text: str, tree: ast.Expr) -> None:
    assert expr(text) == tree


def test_calls_subscripts_and_constructors() -> None:
    assert expr("sum(t, axis=1)") == ast.Call(
        "sum", (n("t"),), (ast.Keyword("axis", ast.IntLit(1)),)
    )
    assert expr("f()") == ast.Call("f", ())
    assert expr("t[:, newaxis, i, a :+ 4]") == ast.Subscript(
        n("t"),
        (ast.FullAxis(), ast.NewAxis(), ast.Point(n("i")), ast.Window(n("a"), ast.IntLit(4))),
    )
    assert expr("zeros<f16>[BM, 64]") == ast.TileCtor(
        "zeros", ast.ScalarType("f16"), (n("BM"), ast.IntLit(64))
    )
    assert expr("ctx.grid.z") == ast.Ctx("grid", "z")
    assert expr("true") == ast.BoolLit(True)
    assert expr("f(a,\n  b,\n)") == ast.Call("f", (n("a"), n("b")))
    assert expr("a < f32") == b("<", n("a"), n("f32"))


@pytest.mark.parametrize(
    ("cast", "literal"),
    [
        ("f16(2.5)", ast.FloatLit(2.5, "f16")),
        ("2.5f16", ast.FloatLit(2.5, "f16")),
        ("i64(7)", ast.IntLit(7, "i64")),
        ("7i64", ast.IntLit(7, "i64")),
        ("bf16((1.0))", ast.FloatLit(1.0, "bf16")),
    ],
)
def test_casts_of_plain_numbers_fold_into_typed_literals(cast: str, literal: ast.Expr) -> None:
    assert expr(cast) == literal


@pytest.mark.parametrize("text", ["f16(-2.5)", "f16(x)", "f16(7i32)", "f16(1, 2)"])
def test_other_casts_stay_calls(text: str) -> None:
    assert isinstance(expr(text), ast.Call)


def test_statements() -> None:
    stmts = body(
        "var x = 1\n"
        "x <<= 2\n"
        "x = 3\n"
        "t[i] = x\n"
        "atomic_add(t[0], 1)\n"
        "for k in 0 .. K step BK {\n}\n"
        "for k in 0 .. step {\n}\n"
        "while x > 0 {\n    x -= 1\n}\n"
        "if a { return }\n"
        "return x"
    )
    var, shift, plain, store, call, loop, stepped, while_, if_, ret = stmts
    assert var == ast.Var("x", ast.IntLit(1))
    assert shift == ast.Assign(n("x"), ast.IntLit(2), "<<")
    assert plain == ast.Assign(n("x"), ast.IntLit(3))
    assert store == ast.Assign(ast.Subscript(n("t"), (ast.Point(n("i")),)), n("x"))
    assert isinstance(call, ast.ExprStmt) and isinstance(call.value, ast.Call)
    assert loop == ast.For("k", ast.IntLit(0), n("K"), n("BK"), ast.Block(()))
    assert stepped == ast.For("k", ast.IntLit(0), n("step"), None, ast.Block(()))
    assert while_ == ast.While(
        b(">", n("x"), ast.IntLit(0)), ast.Block((ast.Assign(n("x"), ast.IntLit(1), "-"),))
    )
    assert if_ == ast.If(n("a"), ast.Block((ast.Return(),)))
    assert ret == ast.Return(n("x"))


def test_else_if_is_an_else_block_holding_one_if() -> None:
    (stmt,) = body("if a {\n} else if b {\n} else {\n    return\n}")
    empty = ast.Block(())
    inner = ast.If(n("b"), empty, ast.Block((ast.Return(),)))
    assert stmt == ast.If(n("a"), empty, ast.Block((inner,)))
    assert stmt.orelse is not None and stmt.orelse.span == stmt.orelse.body[0].span
    assert stmt.orelse.span == Span("<string>", 3, 12, 6, 6)


def test_items() -> None:
    module = parse(
        "const C = 4\n\n"
        "fn f(a: f32, b: tensor<i8>[N, 16]) -> f32 {\n    return a\n}\n"
        "fn g() {\n}\n"
        "@autotune(A in [1, 8])\n@autotune(B in {64, 128,})\nkernel k() {\n}\n"
    )
    const, f, g, k = module.items
    assert const == ast.Const("C", ast.IntLit(4))
    assert isinstance(f, ast.Function) and f.result == ast.ScalarType("f32")
    assert f.params[1].type == ast.TensorType(ast.ScalarType("i8"), (n("N"), ast.IntLit(16)))
    assert isinstance(g, ast.Function) and g.result is None and g.params == ()
    assert isinstance(k, ast.Kernel) and [t.name for t in k.autotune] == ["A", "B"]
    assert k.autotune[1].space == ast.ValueSet((ast.IntLit(64), ast.IntLit(128)))


def test_comments_become_trivia() -> None:
    module = parse((DATA / "comments.ph").read_text(), "comments.ph")
    const, f, k = module.items
    assert const.leading == (
        "A file whose comments sit in every place the tree keeps them.",
        "Two lines of them, even.",
        "Before a constant.",
    )
    assert const.trailing == "after a constant"
    assert isinstance(f, ast.Function)
    assert f.params[0].leading == ("before a parameter",)
    assert f.params[0].trailing == "after a parameter"
    let, ret = f.body.body
    assert (let.leading, let.trailing) == (("before a statement",), "after a statement")
    assert ret.leading == ("", "  indented text inside a comment")
    # A comment after a closing brace ends that block's comments (Python has no brace to follow).
    assert f.body.end_comments == ("at the end of a block", "after a function")
    assert f.trailing is None
    assert k.leading == ("Before the autotune line.",)
    loop, if_, while_ = k.body.body
    assert (loop.trailing, loop.body.end_comments) == (None, ("after a loop",))
    assert if_.orelse is not None and if_.orelse.end_comments == ("after the if",)
    assert while_.body.end_comments == ("only comments here",)
    assert module.end_comments == ("The file's last words.",)


def test_comments_inside_constructs_lead_their_holder() -> None:
    stmts = body(
        "let x = f(a, // inside\n    b) // after\n"
        "if c { // on the brace line\n    return\n} else if d {\n} // after the chain"
    )
    let, if_ = stmts
    assert (let.leading, let.trailing) == (("inside",), "after")
    assert if_.then.body[0].leading == ("on the brace line",)
    assert if_.trailing is None
    assert if_.orelse is not None and if_.orelse.body[0].then.end_comments == ("after the chain",)
    module = parse("@autotune(B in [1, 2]) // tune\nkernel k(\n    a: f32,\n    // stray\n) {\n}\n")
    assert module.kernels[0].leading == ("tune", "stray")


@pytest.mark.parametrize(
    ("text", "where", "message", "help"),
    [
        ("kernel k() {\n    let x = 1 +\n}\n", "2:16", "expected an expression", "parentheses"),
        ("kernel k() {\n    let x = (1 +\n", "2:13", "unclosed `(`", "`)`"),
        ("kernel k() {\n    let x = 12abc\n}\n", "2:13", "invalid number", "scalar type"),
        ("kernel k() {\n    t[i : +4] = 1\n}\n", "2:9", "slices", "no space between"),
        ("kernel k() {\n    let y = i :+ 4\n}\n", "2:15", "found `:+`", "inside a subscript"),
        ("kernel k() {\n    t[:+ 4] = 1\n}\n", "2:7", "a window needs a start", "t[a :+ L]"),
        ("@autotune(BLOCK [16, 64])\nkernel k() {\n}\n", "1:17", "expected `in`", "powers"),
        ("@autotune(B=[16, 64])\nkernel k() {\n}\n", "1:12", "expected `in`", "Python"),
        ("@autotune(B in {})\nkernel k() {\n}\n", "1:16", "empty autotune set", "NAME in"),
        ("kernel k() {\n    for k in range(0, 4) {\n    }\n}\n", "2:26", "expected `..`", "for k"),
        ("kernel k() {\n    if x {\n    }\n    else {\n    }\n}\n", "4:5", "`else`", "} else {"),
        ("kernel k() {\n    1 + 2 = 3\n}\n", "2:5", "cannot assign", "t[a :+ L] = e"),
        ("fn f(a f32) {\n}\n", "1:8", "expected `:`", "a: f32"),
        ("kernel k() {\n    let x = ctx.warp.x\n}\n", "2:17", "no `warp`", "ctx.block"),
        ("kernel k() {\n    let x = +1\n}\n", "2:13", "unary `+`", "remove"),
        ("kernel k() {\n    let x = 1 let y = 2\n}\n", "2:15", "end of the line", None),
        ("let x = 1\n", "1:1", "expected `kernel`", "inside a kernel"),
        ("kernel k() {\n    if x:\n        return\n}\n", "2:9", "expected `{`", "braces"),
        ("@autotune(B in [1, 2])\nfn f() {\n}\n", "2:1", "`kernel`", "only a kernel"),
        ("kernel k() -> f32 {\n}\n", "1:12", "expected `{`", "returns nothing"),
        ("kernel k(t: tensor<f99>[N]) {\n}\n", "1:20", "element type", "f32"),
        ("kernel k(t: tensor<f32>[]) {\n}\n", "1:13", "at least one dimension", None),
        ("kernel k() {\n    let x = f(a=1, 2)\n}\n", "2:20", "keyword argument", "positional"),
        ("kernel k() {\n    let x = t[newaxis + 1]\n}\n", "2:23", "found `+`", None),
        ("kernel k() {\n    let x = newaxis\n}\n", "2:13", "newaxis", "t[:, newaxis]"),
        ("kernel k() {\n    let x = (f)(1)\n}\n", "2:16", "named directly", "f(x)"),
        ("kernel k() {\n    let x = t[]\n}\n", "2:13", "empty subscript", None),
        ("@autotune(A in [1, 2], A in {3})\nkernel k() {\n}\n", "1:24", "given twice", None),
        ("kernel k() {\n    let = 1\n}\n", "2:9", "a name after `let`", None),
        ("kernel k() {\n    let x = a and b\n}\n", "2:15", "found `and`", "`&&`"),
        ("kernel k() {\n    let x = a.b\n}\n", "2:14", "found `.`", "only `ctx`"),
        ("kernel k() {\n    if a {\n    }\n    elif b {\n    }\n}\n", "4:5", "`elif`", "else if"),
    ],
)
def test_syntax_errors_point_at_the_exact_place(
    text: str, where: str, message: str, help: str | None
) -> None:
    with pytest.raises(PhobosError) as info:
        parse(text, "bad.ph")
    rendered = str(info.value)
    assert f"bad.ph:{where}: error:" in rendered
    assert message in rendered
    line, col = (int(part) for part in where.split(":"))
    source_line = text.splitlines()[line - 1]
    caret_line = rendered.splitlines()[2]
    assert rendered.splitlines()[1] == "    " + source_line
    assert caret_line.index("^") == 4 + col - 1
    assert "\nhelp: " in rendered
    if help is not None:
        assert help in rendered


EDITS = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
        st.sampled_from(["(", ")", "{", "}", "[", "]", ",", ":", ":+", "..", "=", "+", "-", "!",
                         "\n", " ", "0x", "1e", "//", "let ", "else ", "kernel ", "ctx.", "@", ""]),
    ),
    min_size=1,
    max_size=3,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(EDITS)
def test_edited_programs_parse_or_fail_with_a_located_error(edits: list[tuple[float, str]]) -> None:
    """A typo anywhere gives a tree that prints back to itself, or a located PhobosError."""
    text = (DATA / "grammar.ph").read_text()
    for where, insert in edits:
        cut = int(where * len(text))
        text = text[:cut] + insert + text[cut + (insert == "") :]
    try:
        tree = parse(text, "typo.ph")
    except PhobosError as exc:
        rendered = str(exc)
        assert rendered.startswith(f"typo.ph:{exc.span.line}:{exc.span.col}: error: ")
        assert "^" in rendered.splitlines()[2]
    else:
        assert parse(format_module(tree)) == tree


def test_windows_line_endings_give_the_same_tree() -> None:
    text = (DATA / "comments.ph").read_text()
    assert parse(text.replace("\n", "\r\n")) == parse(text)
