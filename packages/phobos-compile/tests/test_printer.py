"""The printer: canonical text, round trips through the parser, span maps."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phobos.compile.syntax import (
    ast,
    format_module,
    format_with_span_map,
    parse,
    remap_spans,
)

DATA = Path(__file__).parent / "data" / "syntax"
REPO = Path(__file__).resolve().parents[3]
SEED = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""
CANONICAL = sorted(p for p in DATA.glob("*.ph") if p.name != "layout.ph")


def test_seed_prints_byte_for_byte() -> None:
    assert format_module(parse(SEED)) == SEED


def test_saxpy_example_prints_byte_for_byte() -> None:
    text = (REPO / "examples" / "saxpy_fp32.ph").read_text()
    assert format_module(parse(text)) == text


@pytest.mark.parametrize("path", CANONICAL, ids=lambda p: p.name)
def test_canonical_files_print_byte_for_byte(path: Path) -> None:
    text = path.read_text()
    tree = parse(text, path.name)
    assert format_module(tree) == text
    assert parse(format_module(tree)) == tree


def test_loose_layout_prints_canonically() -> None:
    tree = parse((DATA / "layout.ph").read_text(), "layout.ph")
    printed = format_module(tree)
    assert printed == (DATA / "layout.expected.ph").read_text()
    assert parse(printed) == tree


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.ph")), ids=lambda p: p.name)
def test_examples_round_trip(path: Path) -> None:
    tree = parse(path.read_text(), str(path))
    printed = format_module(tree)
    assert parse(printed) == tree
    assert format_module(parse(printed)) == printed


def let(value: ast.Expr) -> ast.Module:
    body = ast.Block((ast.Let("v", value),))
    return ast.Module((ast.Kernel("k", (), body),))


def printed_value(value: ast.Expr) -> str:
    return format_module(let(value)).splitlines()[1].removeprefix("    let v = ")


def n(name: str) -> ast.Name:
    return ast.Name(name)


@pytest.mark.parametrize(
    ("tree", "text"),
    [
        (ast.Binary("-", n("a"), ast.Binary("-", n("b"), n("c"))), "a - (b - c)"),
        (ast.Binary("-", ast.Binary("-", n("a"), n("b")), n("c")), "a - b - c"),
        (ast.Binary("*", ast.Binary("+", n("a"), n("b")), n("c")), "(a + b) * c"),
        (ast.Binary("&", n("a"), ast.Binary("==", n("b"), n("c"))), "a & b == c"),
        (ast.Binary("==", ast.Binary("&", n("a"), n("b")), n("c")), "(a & b) == c"),
        (ast.Unary("-", ast.Binary("*", n("a"), n("b"))), "-(a * b)"),
        (ast.Unary("!", ast.Unary("-", n("a"))), "!-a"),
        (ast.Subscript(ast.Unary("-", n("t")), (ast.Point(n("i")),)), "(-t)[i]"),
        (ast.FloatLit(1e-6), "1e-06"),
        (ast.FloatLit(2.0), "2.0"),
        (ast.FloatLit(2.5, "f16"), "2.5f16"),
        (ast.IntLit(0x1F, "u32"), "31u32"),
        (ast.Call("sum", (n("t"),), (ast.Keyword("axis", ast.IntLit(1)),)), "sum(t, axis=1)"),
        (ast.Call("f", (), (ast.Keyword("axis", ast.IntLit(1)),)), "f(axis=1)"),
        (ast.Subscript(n("t"), (ast.FullAxis(), ast.NewAxis())), "t[:, newaxis]"),
        (ast.Subscript(n("t"), (ast.Window(n("a"), n("L")),)), "t[a :+ L]"),
        (ast.TileCtor("zeros", ast.ScalarType("f32"), (n("BM"), n("BN"))), "zeros<f32>[BM, BN]"),
        (ast.Ctx("grid", "y"), "ctx.grid.y"),
        (ast.BoolLit(False), "false"),
    ],
)
def test_expression_spelling(tree: ast.Expr, text: str) -> None:
    assert printed_value(tree) == text


def test_statement_spelling() -> None:
    empty = ast.Block(())
    body = ast.Block(
        (
            ast.For("k", ast.IntLit(0), n("K"), n("BK"), empty),
            ast.If(n("a"), empty, ast.Block((ast.If(n("b"), empty, empty),))),
            ast.Assign(n("x"), ast.IntLit(1), "<<"),
            ast.ExprStmt(ast.Call("f", ())),
            ast.Return(),
        )
    )
    function = ast.Function("g", (ast.Param("a", ast.ScalarType("f32")),), None, body)
    assert format_module(ast.Module((ast.Const("C", ast.IntLit(4)), function))) == (
        "const C = 4\n\n"
        "fn g(a: f32) {\n"
        "    for k in 0 .. K step BK {\n    }\n"
        "    if a {\n    } else if b {\n    } else {\n    }\n"
        "    x <<= 1\n"
        "    f()\n"
        "    return\n"
        "}\n"
    )


def test_empty_module_prints_nothing() -> None:
    assert format_module(ast.Module(())) == ""
    assert format_module(ast.Module((), ("only a comment",))) == "// only a comment\n"


def test_non_finite_float_cannot_be_printed() -> None:
    with pytest.raises(ValueError, match="finite"):
        format_module(let(ast.FloatLit(float("inf"))))


# ------------------------------------------------------------------ span maps


def nodes(value: object) -> Iterator[object]:
    """Every node under ``value`` (itself first), in field order."""
    if isinstance(value, tuple):
        for item in value:
            yield from nodes(item)
    elif dataclasses.is_dataclass(value) and hasattr(value, "span"):
        yield value
        for f in dataclasses.fields(value):
            if f.name != "span":
                yield from nodes(getattr(value, f.name))


@pytest.mark.parametrize("path", sorted(DATA.glob("*.ph")), ids=lambda p: p.name)
def test_span_map_leads_each_printed_node_back_to_its_origin(path: Path) -> None:
    original = parse(path.read_text(), "user.ph")
    text, span_map = format_with_span_map(original, "printed.ph")
    reparsed = parse(text, "printed.ph")
    pairs = list(zip(nodes(original), nodes(reparsed)))
    assert len(pairs) > 50
    for before, after in pairs:
        assert type(before) is type(after)
        assert span_map.lookup(after.span) == before.span, type(before).__name__

    remapped = remap_spans(reparsed, span_map)
    assert remapped == original
    assert [x.span for x in nodes(remapped)] == [x.span for x in nodes(original)]


def test_span_map_entries_cover_printed_text() -> None:
    text, span_map = format_with_span_map(parse(SEED, "saxpy.ph"))
    lines = text.splitlines()
    for printed, source in span_map.entries:
        if printed.line == printed.end_line and printed.line <= len(lines):
            spelled = lines[printed.line - 1][printed.col - 1 : printed.end_col - 1]
            original = SEED.splitlines()[source.line - 1][source.col - 1 : source.end_col - 1]
            assert spelled == original


# ------------------------------------------------------- random round trips

NAMES = st.sampled_from(["a", "b", "x", "t", "BLOCK", "step", "acc", "f32", "zeros", "tensor"])
SUFFIXES = st.none() | st.sampled_from(ast.SCALAR_TYPES)
LEAVES = st.one_of(
    NAMES.map(ast.Name),
    st.builds(ast.IntLit, st.integers(min_value=0, max_value=2**70), SUFFIXES),
    st.builds(
        ast.FloatLit,
        st.floats(min_value=0.0, allow_nan=False, allow_infinity=False).map(abs),
        SUFFIXES,
    ),
    st.builds(ast.BoolLit, st.booleans()),
    st.builds(ast.Ctx, st.sampled_from(["block", "grid"]), st.sampled_from(["x", "y", "z"])),
)


def _compound(inner: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
    index_item = st.one_of(
        st.builds(ast.Point, inner),
        st.builds(ast.Window, inner, inner),
        st.just(ast.FullAxis()),
        st.just(ast.NewAxis()),
    )
    few = {"min_size": 1, "max_size": 3}
    return st.one_of(
        st.builds(ast.Unary, st.sampled_from(["-", "!", "~"]), inner),
        st.builds(ast.Binary, st.sampled_from(sorted(ast.BINARY_PRECEDENCE)), inner, inner),
        st.builds(
            ast.Call,
            st.sampled_from(["exp", "sum", "dot", "where", "g"]),
            st.lists(inner, max_size=3).map(tuple),
            st.lists(
                st.builds(ast.Keyword, st.sampled_from(["axis", "keep"]), inner), max_size=2
            ).map(tuple),
        ),
        st.builds(ast.Subscript, inner, st.lists(index_item, **few).map(tuple)),
        st.builds(
            ast.TileCtor,
            st.sampled_from(["zeros", "ones"]),
            st.sampled_from(ast.SCALAR_TYPES).map(ast.ScalarType),
            st.lists(inner, **few).map(tuple),
        ),
    )


EXPRESSIONS = st.recursive(LEAVES, _compound, max_leaves=12)


@settings(max_examples=120, deadline=None)
@given(EXPRESSIONS)
def test_random_expressions_round_trip(value: ast.Expr) -> None:
    module = let(value)
    text = format_module(module)
    assert parse(text) == module
    assert format_module(parse(text)) == text


COMMENT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8).map(str.rstrip)
LEADING = st.lists(COMMENT, max_size=2).map(tuple)
TRAILING = st.none() | COMMENT
SIMPLE = st.one_of(
    st.builds(ast.Let, NAMES, EXPRESSIONS, LEADING, TRAILING),
    st.builds(ast.Var, NAMES, LEAVES, LEADING, TRAILING),
    st.builds(
        ast.Assign,
        NAMES.map(ast.Name),
        LEAVES,
        st.sampled_from([None, "+", "<<"]),
        LEADING,
        TRAILING,
    ),
    st.builds(ast.ExprStmt, EXPRESSIONS, LEADING, TRAILING),
    st.builds(ast.Return, st.none() | LEAVES, LEADING, TRAILING),
)


def _blocks(stmts: st.SearchStrategy[ast.Stmt]) -> st.SearchStrategy[ast.Stmt]:
    block = st.builds(ast.Block, st.lists(stmts, max_size=3).map(tuple), LEADING)
    return st.one_of(
        # A comment after a closing brace belongs to the block, so these have no trailing.
        st.builds(ast.For, NAMES, LEAVES, LEAVES, st.none() | LEAVES, block, LEADING, st.none()),
        st.builds(ast.If, LEAVES, block, st.none() | block, LEADING, st.none()),
        st.builds(ast.While, LEAVES, block, LEADING, st.none()),
    )


STATEMENTS = st.recursive(SIMPLE, _blocks, max_leaves=8)
PARAMS = st.lists(
    st.builds(
        ast.Param, NAMES, st.sampled_from(ast.SCALAR_TYPES).map(ast.ScalarType), LEADING, TRAILING
    ),
    max_size=3,
).map(tuple)


@settings(max_examples=50, deadline=None)
@given(st.lists(STATEMENTS, max_size=4).map(tuple), LEADING, PARAMS, LEADING, LEADING)
def test_random_statements_and_comments_round_trip(
    body: tuple[ast.Stmt, ...],
    end_comments: tuple[str, ...],
    params: tuple[ast.Param, ...],
    leading: tuple[str, ...],
    module_end: tuple[str, ...],
) -> None:
    kernel = ast.Kernel("k", params, ast.Block(body, end_comments), (), leading)
    module = ast.Module((ast.Const("C", ast.IntLit(1)), kernel), module_end)
    text = format_module(module)
    assert parse(text) == module
    assert format_module(parse(text)) == text
