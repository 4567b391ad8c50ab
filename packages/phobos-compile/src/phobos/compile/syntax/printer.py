"""``ast.Module`` → canonical Phobos text, with a span map back to the tree's spans.

One layout for every tree: 4-space indents, one blank line between items, no
line wrapping, the fewest parentheses ``ast.BINARY_PRECEDENCE`` allows, floats as
``repr`` gives them, comments on the lines ``ast`` says.  A parameter list is
printed one parameter per line only when a parameter carries a comment.

The span map pairs the printed extent of every node (statement, parameter,
item, expression, ...) with the node's own span, so that an error found in the
printed text can be shown at the user's construct; ``remap_spans`` applies such
a map to a parsed tree.  A printed extent includes the parentheses around a
node's operands but not those around the node itself, as the parser's spans do.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, TypeVar

from phobos.compile.span import NO_SPAN, Span, SpanMap
from phobos.compile.syntax import ast
from phobos.compile.syntax.nesting import check_nesting

_Node = TypeVar("_Node")
_INDENT = "    "
_PRECEDENCE = ast.BINARY_PRECEDENCE


def format_module(module: ast.Module) -> str:
    """The canonical text of ``module`` (ending in one newline unless empty)."""
    return format_with_span_map(module)[0]


def format_with_span_map(module: ast.Module, file: str = "<phobos>") -> tuple[str, SpanMap]:
    """The canonical text and a map from each printed node's extent (in ``file``) to its span.

    A tree nested deeper than ``MAX_NESTING`` levels (one not made by the parser or the front
    end, which refuse such programs) is a ``PhobosError`` at its construct.
    """
    check_nesting(module)
    printer = _Printer(file)
    printer.module(module)
    return printer.text(), SpanMap(tuple(printer.entries))


def remap_spans(module: ast.Module, span_map: SpanMap) -> ast.Module:
    """``module`` with every node's span replaced by ``span_map.lookup(span)``.

    Used when a program arrives as text plus a span map: parse the text, then
    point each node at the construct it came from.
    """
    # A span equal to a recorded extent maps to that entry's (the last one's, among equal
    # extents) under ``SpanMap.lookup`` too, since printed extents nest like the tree; the
    # dictionary just makes the common case fast.
    exact: dict[tuple[int, int, int, int], Span] = {}
    for text_span, source_span in span_map.entries:
        exact[_position(text_span)] = source_span

    def lookup(span: Span) -> Span:
        found = exact.get(_position(span))
        return found if found is not None else span_map.lookup(span)

    return _with_spans(module, lookup)


def _position(span: Span) -> tuple[int, int, int, int]:
    return (span.line, span.col, span.end_line, span.end_col)


def _with_spans(value: Any, lookup: Callable[[Span], Span]) -> Any:
    """A copy of ``value`` (a node, a tuple of them, or a leaf) with node spans through ``lookup``."""
    if isinstance(value, tuple):
        return tuple(_with_spans(v, lookup) for v in value)
    if not dataclasses.is_dataclass(value) or isinstance(value, Span):
        return value
    changes = {}
    for f in dataclasses.fields(value):
        old = getattr(value, f.name)
        changes[f.name] = lookup(old) if f.name == "span" else _with_spans(old, lookup)
    return type(value)(**changes)


class _Printer:
    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: list[str] = []
        self.parts: list[str] = []
        self.col = 1
        self.entries: list[tuple[Span, Span]] = []

    # ------------------------------------------------------------- plumbing

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.col += len(text)

    def end_line(self) -> None:
        self.lines.append("".join(self.parts))
        self.parts = []
        self.col = 1

    def here(self) -> tuple[int, int]:
        return len(self.lines) + 1, self.col

    def record(self, start: tuple[int, int], span: Span, at: int | None = None) -> None:
        """Pair the text from ``start`` to here with ``span`` (nodes without a span are skipped)."""
        if span == NO_SPAN:
            return
        line, col = self.here()
        entry = (Span(self.file, start[0], start[1], line, col), span)
        if at is None:
            self.entries.append(entry)
        else:
            self.entries.insert(at, entry)

    def comment_lines(self, comments: tuple[str, ...], indent: str) -> None:
        for text in comments:
            self.write(indent + _comment(text))
            self.end_line()

    def trailing(self, comment: str | None) -> None:
        if comment is not None:
            self.write(" " + _comment(comment))

    # ---------------------------------------------------------------- items

    def module(self, module: ast.Module) -> None:
        start = self.here()
        for i, item in enumerate(module.items):
            if i:
                self.end_line()
            self.item(item)
        if module.end_comments:
            if module.items:
                self.end_line()
            self.comment_lines(module.end_comments, "")
        self.record(start, module.span)

    def item(self, item: ast.Item) -> None:
        self.comment_lines(item.leading, "")
        if isinstance(item, ast.Kernel) and item.autotune:
            self.write("@autotune(")
            self.comma_separated(item.autotune, self.tune_param)
            self.write(")")
            self.end_line()
        start = self.here()
        if isinstance(item, ast.Const):
            self.write(f"const {item.name} = ")
            self.expr(item.value)
        elif isinstance(item, ast.Function):
            self.write(f"fn {item.name}")
            self.params(item.params)
            if item.result is not None:
                self.write(" -> ")
                self.scalar_type(item.result)
            self.write(" ")
            self.block(item.body, "")
        else:
            self.write(f"kernel {item.name}")
            self.params(item.params)
            self.write(" ")
            self.block(item.body, "")
        self.record(start, item.span)
        self.trailing(item.trailing)
        self.end_line()

    def tune_param(self, tune: ast.TuneParam) -> None:
        start = self.here()
        self.write(f"{tune.name} in ")
        space_start = self.here()
        space = tune.space
        if isinstance(space, ast.PowerRange):
            self.write("[")
            self.expr(space.low)
            self.write(", ")
            self.expr(space.high)
            self.write("]")
        else:
            self.write("{")
            self.comma_separated(space.values, self.expr)
            self.write("}")
        self.record(space_start, space.span)
        self.record(start, tune.span)

    def params(self, params: tuple[ast.Param, ...]) -> None:
        self.write("(")
        if any(p.leading or p.trailing is not None for p in params):
            self.end_line()
            for param in params:
                self.comment_lines(param.leading, _INDENT)
                self.write(_INDENT)
                self.param(param)
                self.write(",")
                self.trailing(param.trailing)
                self.end_line()
        else:
            self.comma_separated(params, self.param)
        self.write(")")

    def param(self, param: ast.Param) -> None:
        start = self.here()
        self.write(f"{param.name}: ")
        self.type_(param.type)
        self.record(start, param.span)

    def type_(self, type_: ast.Type) -> None:
        if isinstance(type_, ast.ScalarType):
            self.scalar_type(type_)
            return
        start = self.here()
        self.write("tensor<")
        self.scalar_type(type_.dtype)
        self.write(">[")
        self.comma_separated(type_.dims, self.expr)
        self.write("]")
        self.record(start, type_.span)

    def scalar_type(self, type_: ast.ScalarType) -> None:
        start = self.here()
        self.write(type_.name)
        self.record(start, type_.span)

    # ------------------------------------------------------------ statements

    def block(self, block: ast.Block, indent: str) -> None:
        start = self.here()
        self.write("{")
        self.end_line()
        inner = indent + _INDENT
        for stmt in block.body:
            self.statement(stmt, inner)
        self.comment_lines(block.end_comments, inner)
        self.write(indent + "}")
        self.record(start, block.span)

    def statement(self, stmt: ast.Stmt, indent: str) -> None:
        self.comment_lines(stmt.leading, indent)
        self.write(indent)
        start = self.here()
        if isinstance(stmt, (ast.Let, ast.Var)):
            self.write(f"{'let' if isinstance(stmt, ast.Let) else 'var'} {stmt.name} = ")
            self.expr(stmt.value)
        elif isinstance(stmt, ast.Assign):
            self.expr(stmt.target)
            self.write(f" {stmt.op or ''}= ")
            self.expr(stmt.value)
        elif isinstance(stmt, ast.ExprStmt):
            self.expr(stmt.value)
        elif isinstance(stmt, ast.For):
            self.write(f"for {stmt.var} in ")
            self.expr(stmt.start)
            self.write(" .. ")
            self.expr(stmt.stop)
            if stmt.step is not None:
                self.write(" step ")
                self.expr(stmt.step)
            self.write(" ")
            self.block(stmt.body, indent)
        elif isinstance(stmt, ast.If):
            self.if_chain(stmt, indent)
        elif isinstance(stmt, ast.While):
            self.write("while ")
            self.expr(stmt.cond)
            self.write(" ")
            self.block(stmt.body, indent)
        else:
            self.write("return")
            if stmt.value is not None:
                self.write(" ")
                self.expr(stmt.value)
        self.record(start, stmt.span)
        self.trailing(stmt.trailing)
        self.end_line()

    def if_chain(self, stmt: ast.If, indent: str) -> None:
        """``if``, with an ``else`` block that holds only a comment-free If printed as ``else if``."""
        self.write("if ")
        self.expr(stmt.cond)
        self.write(" ")
        self.block(stmt.then, indent)
        orelse = stmt.orelse
        if orelse is None:
            return
        self.write(" else ")
        if _is_else_if(orelse):
            nested = orelse.body[0]
            start, at = self.here(), len(self.entries)
            self.if_chain(nested, indent)
            self.record(start, nested.span)
            self.record(start, orelse.span, at=at)
        else:
            self.block(orelse, indent)

    # ----------------------------------------------------------- expressions

    def expr(self, expr: ast.Expr, parens: bool = False) -> None:
        if parens:
            self.write("(")
        start = self.here()
        kind = type(expr)
        if kind is ast.Name:
            self.write(expr.id)
        elif kind is ast.Binary:
            prec = _PRECEDENCE[expr.op]
            left, right = expr.left, expr.right
            self.expr(left, isinstance(left, ast.Binary) and _PRECEDENCE[left.op] < prec)
            self.write(f" {expr.op} ")
            self.expr(right, isinstance(right, ast.Binary) and _PRECEDENCE[right.op] <= prec)
        elif kind is ast.Subscript:
            self.expr(expr.base, isinstance(expr.base, (ast.Binary, ast.Unary)))
            self.write("[")
            self.comma_separated(expr.items, self.index_item)
            self.write("]")
        elif kind is ast.IntLit:
            self.write(f"{expr.value}{expr.suffix or ''}")
        elif kind is ast.FloatLit:
            self.write(_float_text(expr.value) + (expr.suffix or ""))
        elif kind is ast.Call:
            self.write(expr.func + "(")
            self.comma_separated(expr.args, self.expr)
            if expr.args and expr.keywords:
                self.write(", ")
            self.comma_separated(expr.keywords, self.keyword)
            self.write(")")
        elif kind is ast.Unary:
            self.write(expr.op)
            self.expr(expr.operand, isinstance(expr.operand, ast.Binary))
        elif kind is ast.Ctx:
            self.write(f"ctx.{expr.group}.{expr.axis}")
        elif kind is ast.BoolLit:
            self.write("true" if expr.value else "false")
        elif kind is ast.StrLit:
            self.write(f'"{expr.value}"')
        elif kind is ast.TileCtor:
            self.write(expr.kind + "<")
            self.scalar_type(expr.dtype)
            self.write(">[")
            self.comma_separated(expr.shape, self.expr)
            self.write("]")
        else:
            raise TypeError(f"not a Phobos expression: {expr!r}")
        self.record(start, expr.span)
        if parens:
            self.write(")")

    def keyword(self, keyword: ast.Keyword) -> None:
        start = self.here()
        self.write(keyword.name + "=")
        self.expr(keyword.value)
        self.record(start, keyword.span)

    def index_item(self, item: ast.IndexItem) -> None:
        start = self.here()
        if isinstance(item, ast.Point):
            self.expr(item.index)
        elif isinstance(item, ast.Window):
            self.expr(item.start)
            self.write(" :+ ")
            self.expr(item.length)
        elif isinstance(item, ast.FullAxis):
            self.write(":")
        else:
            self.write("newaxis")
        self.record(start, item.span)

    def comma_separated(self, nodes: tuple[_Node, ...], print_one: Callable[[_Node], None]) -> None:
        for i, node in enumerate(nodes):
            if i:
                self.write(", ")
            print_one(node)


def _is_else_if(orelse: ast.Block) -> bool:
    if len(orelse.body) != 1 or orelse.end_comments:
        return False
    nested = orelse.body[0]
    return isinstance(nested, ast.If) and not nested.leading and nested.trailing is None


def _comment(text: str) -> str:
    return "// " + text if text else "//"


def _float_text(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"a float literal must be finite, not {value!r}")
    return repr(value)
