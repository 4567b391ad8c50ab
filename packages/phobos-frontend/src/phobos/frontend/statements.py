"""Python statements of a kernel or function body → Phobos statements and blocks."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, replace

from phobos.compile.span import Span
from phobos.compile.syntax import ast as ph
from phobos.frontend.assertions import translate_assert
from phobos.frontend.comments import CommentStream, Position
from phobos.frontend.expressions import AUGMENTED_OPS, ExpressionTranslator
from phobos.frontend.rejections import rejected
from phobos.frontend.source import SourceFile


def start_of(node: ast.AST) -> Position:
    return (node.lineno, node.col_offset + 1)


def end_of(node: ast.AST) -> Position:
    return (node.end_lineno, node.end_col_offset + 1)


def is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def docstring_lines(node: ast.stmt) -> tuple[str, ...]:
    """A definition's docstring, as the comment lines that lead the item."""
    assert isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    return tuple(inspect.cleandoc(node.value.value).splitlines())


@dataclass(frozen=True)
class StatementTranslator:
    exprs: ExpressionTranslator
    comments: CommentStream

    @property
    def source(self) -> SourceFile:
        return self.exprs.source

    def block(
        self, stmts: list[ast.stmt], owner_col: int, limit: Position, span: Span | None = None
    ) -> ph.Block:
        """The statements of one body; ``limit`` is where the next code after the body starts.

        ``span`` defaults to the statements' own; a definition whose body is only a
        docstring passes the docstring's.
        """
        body: list[ph.Stmt] = []
        for index, stmt in enumerate(stmts):
            next_start = start_of(stmts[index + 1]) if index + 1 < len(stmts) else limit
            translated = self.statement(stmt, next_start)
            if translated is not None:
                body.append(translated)
        # Comments left before the last statement's end stood around a `pass`: they close the block.
        end_comments = self.comments.leading(end_of(stmts[-1])) if stmts else ()
        end_comments += self.comments.block_end(owner_col, limit)
        if span is None:
            span = self.source.span_between(stmts[0], stmts[-1])
        return ph.Block(tuple(body), end_comments, span=span)

    def statement(self, node: ast.stmt, next_start: Position) -> ph.Stmt | None:
        """One Phobos statement, or None for ``pass`` (whose comments stay for their neighbours)."""
        if isinstance(node, ast.Pass):
            return None
        if isinstance(node, ast.If | ast.For | ast.While):
            return self.compound(node, next_start)
        leading = self.comments.leading(start_of(node))
        span = self.source.span(node)
        translated = self.simple(node)
        leading += self.comments.leading(end_of(node))
        trailing = (
            None if next_start[0] == node.end_lineno else self.comments.trailing(node.end_lineno)
        )
        return replace(translated, leading=leading, trailing=trailing, span=span)

    # ------------------------------------------------------------------ simple statements

    def simple(self, node: ast.stmt) -> ph.Stmt:
        exprs = self.exprs
        if isinstance(node, ast.AnnAssign):
            return self.binding(node)
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise self.source.reject(
                    node,
                    "a chained assignment has no Phobos meaning",
                    help="assign one target at a time",
                )
            return ph.Assign(self.target(node.targets[0]), exprs.expr(node.value))
        if isinstance(node, ast.AugAssign):
            op = AUGMENTED_OPS.get(type(node.op))
            if op is None:
                raise self.source.reject(
                    node,
                    "`**=` and `@=` have no Phobos meaning",
                    help="multiply instead of **; accumulate a product with acc = ph.dot(a, b, acc)",
                )
            return ph.Assign(self.target(node.target), exprs.expr(node.value), op=op)
        if isinstance(node, ast.Return):
            return ph.Return(None if node.value is None else exprs.expr(node.value))
        if isinstance(node, ast.Assert):
            return translate_assert(exprs, node)
        if isinstance(node, ast.Expr):
            if is_docstring(node):
                raise self.source.reject(
                    node,
                    "a string has no Phobos meaning here",
                    help="a docstring stands only first in a definition; write a # comment",
                )
            return ph.ExprStmt(exprs.expr(node.value))
        raise rejected(self.source, node)

    def binding(self, node: ast.AnnAssign) -> ph.Stmt:
        """``x: ph.let = e`` and ``x: ph.var = e``."""
        kind = self.exprs.aliases.path(node.annotation)
        if kind == "const":
            raise self.source.reject(
                node.annotation,
                "ph.const stands only at module level",
                help="bind a local with x: ph.let = e",
            )
        if kind not in ("let", "var"):
            raise self.source.reject(
                node.annotation,
                f"the annotation `{ast.unparse(node.annotation)}` has no Phobos meaning",
                help="write x: ph.let = e (binds once) or x: ph.var = e (mutable)",
            )
        if not isinstance(node.target, ast.Name):
            raise self.source.reject(
                node.target, f"ph.{kind} binds a name", help="write x: ph.let = e"
            )
        if node.value is None:
            raise self.source.reject(
                node, f"ph.{kind} needs a value", help=f"write x: ph.{kind} = e"
            )
        make = ph.Let if kind == "let" else ph.Var
        name = self.exprs.identifier(node.target, node.target.id)
        return make(name, self.exprs.expr(node.value))

    def target(self, node: ast.expr) -> ph.Expr:
        if isinstance(node, ast.Name | ast.Subscript):
            return self.exprs.expr(node)
        if isinstance(node, ast.Tuple | ast.List):
            raise self.source.reject(
                node, "unpacking assignment has no Phobos meaning", help="assign one name at a time"
            )
        raise self.source.reject(
            node, f"`{ast.unparse(node)}` cannot be assigned", help="assign to a name or to t[...]"
        )

    # ------------------------------------------------------------------ compound statements

    def compound(self, node: ast.If | ast.For | ast.While, next_start: Position) -> ph.Stmt:
        start = start_of(node)
        header_end = self.comments.header_end(start)
        leading = self.comments.leading(start)
        if isinstance(node, ast.For):
            var, start_expr, stop, step = self.loop_header(node)
        else:
            cond = self.exprs.expr(node.test)
        leading += self.comments.leading(header_end)
        if isinstance(node, ast.For | ast.While) and node.orelse:
            raise self.source.reject(
                node.orelse[0], "a loop's else has no Phobos meaning", help="remove the else clause"
            )
        span = self.source.span(node)
        owner = node.col_offset + 1
        if isinstance(node, ast.For):
            body = self.block(node.body, owner, next_start)
            return ph.For(var, start_expr, stop, step, body, leading=leading, span=span)
        if isinstance(node, ast.While):
            return ph.While(
                cond, self.block(node.body, owner, next_start), leading=leading, span=span
            )
        if not node.orelse:
            then = self.block(node.body, owner, next_start)
            return ph.If(cond, then, None, leading=leading, span=span)
        first_else = node.orelse[0]
        if isinstance(first_else, ast.If) and first_else.col_offset == node.col_offset:
            else_at = start_of(first_else)  # elif
        else:
            else_at = self.comments.else_keyword(end_of(node.body[-1]))
        then = self.block(node.body, owner, else_at)
        orelse = self.block(node.orelse, owner, next_start)
        return ph.If(cond, then, orelse, leading=leading, span=span)

    def loop_header(self, node: ast.For) -> tuple[str, ph.Expr, ph.Expr, ph.Expr | None]:
        """``for k in range(a, b, s)``, ``range(a, b)`` or ``range(b)``."""
        if not isinstance(node.target, ast.Name):
            raise self.source.reject(
                node.target, "a loop binds one name", help="write for k in range(a, b, step):"
            )
        it = node.iter
        if not (
            isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
        ):
            raise self.source.reject(
                it,
                "a Phobos loop runs over a range",
                help="write for k in range(a, b, step): (or range(b), range(a, b))",
            )
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.source.reject(
                it, "range takes one to three positional arguments", help="write range(a, b, step)"
            )
        var = self.exprs.identifier(node.target, node.target.id)
        args = [self.exprs.expr(arg) for arg in it.args]
        if len(args) == 1:
            return var, ph.IntLit(0, span=self.source.span(it)), args[0], None
        return var, args[0], args[1], args[2] if len(args) == 3 else None
