"""Phobos statements and blocks → libcst statements, with their comments and blank lines.

The comments go where the front end takes them back from: ``leading`` on lines
above the statement, ``trailing`` at the end of its line, a block's end comments
after its last statement (or above the ``pass`` of an empty block), and a
comment that followed ``{`` on the Python header line (``for ...:  # note``).
A comment after a closing ``}`` (``} // done``) is already the block's last end
comment in the parsed tree, since Python has no line that ends a block.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ph2py.expressions import ExpressionWriter
from ph2py.layout import SourceLayout, place_comments
from ph2py.names import lang, python_name
from ph2py.trivia import gap_lines, split_blanks, trailing
from phobos.compile.syntax import ast

MAX_BLANK_IN_BODY = 1
_AUGMENTED = {
    "+": cst.AddAssign,
    "-": cst.SubtractAssign,
    "*": cst.MultiplyAssign,
    "/": cst.DivideAssign,
    "%": cst.ModuloAssign,
    "&": cst.BitAndAssign,
    "|": cst.BitOrAssign,
    "^": cst.BitXorAssign,
    "<<": cst.LeftShiftAssign,
    ">>": cst.RightShiftAssign,
}


@dataclass
class BodyWriter:
    """Writes the body of one kernel or function."""

    exprs: ExpressionWriter
    layout: SourceLayout

    # ------------------------------------------------------------------ blocks

    def block(self, block: ast.Block) -> cst.IndentedBlock:
        """An indented block, its comments and blank lines."""
        header = self.layout.comment_after(block.span.line, block.span.col)
        first_comments = block.body[0].leading if block.body else block.end_comments
        if header is not None and (not first_comments or first_comments[0] != header):
            header = None
        skip = 1 if header is not None else 0
        body: list[cst.BaseStatement] = []
        previous_end = block.span.line
        for index, stmt in enumerate(block.body):
            leading = stmt.leading[skip:] if index == 0 else stmt.leading
            gap = self.layout.gap_before(stmt.span.line, previous_end)
            blanks, lines = split_blanks(place_comments(leading, gap))
            if index == 0:
                blanks = 0
            leading_lines = [cst.EmptyLine(indent=False)] * min(blanks, MAX_BLANK_IN_BODY)
            leading_lines += gap_lines(lines, MAX_BLANK_IN_BODY)
            body.append(self.statement(stmt, leading_lines))
            previous_end = stmt.span.end_line
        end_comments = block.end_comments[skip:] if not block.body else block.end_comments
        gap = self.layout.gap_before(block.span.end_line, previous_end)
        end_lines = gap_lines(place_comments(end_comments, gap), MAX_BLANK_IN_BODY)
        if not block.body:
            while end_lines and end_lines[0].comment is None:
                end_lines.pop(0)
            body.append(cst.SimpleStatementLine([cst.Pass()], leading_lines=end_lines))
            end_lines = []
        return cst.IndentedBlock(
            body, header=trailing(header), footer=_without_trailing_blanks(end_lines)
        )

    # ------------------------------------------------------------------ statements

    def statement(self, stmt: ast.Stmt, leading_lines: list[cst.EmptyLine]) -> cst.BaseStatement:
        if isinstance(stmt, ast.For):
            return self.for_loop(stmt, leading_lines)
        if isinstance(stmt, ast.If):
            return self.if_chain(stmt).with_changes(leading_lines=leading_lines)
        if isinstance(stmt, ast.While):
            body = self.block(stmt.body)
            return cst.While(self.exprs.expr(stmt.cond), body, leading_lines=leading_lines)
        return cst.SimpleStatementLine(
            [self.simple(stmt)],
            leading_lines=leading_lines,
            trailing_whitespace=trailing(stmt.trailing),
        )

    def simple(self, stmt: ast.Stmt) -> cst.BaseSmallStatement:
        exprs = self.exprs
        if isinstance(stmt, (ast.Let, ast.Var)):
            marker = lang("let" if isinstance(stmt, ast.Let) else "var")
            name = python_name(stmt.name, stmt.span)
            return cst.AnnAssign(name, cst.Annotation(marker), exprs.expr(stmt.value))
        if isinstance(stmt, ast.Assign):
            target, value = exprs.expr(stmt.target), exprs.expr(stmt.value)
            if stmt.op is None:
                return cst.Assign([cst.AssignTarget(target)], value)
            if stmt.op == "/" and exprs.divides_integers(stmt.target, stmt.value):
                return cst.AugAssign(target, cst.FloorDivideAssign(), value)
            return cst.AugAssign(target, _AUGMENTED[stmt.op](), value)
        if isinstance(stmt, ast.ExprStmt):
            value = stmt.value
            if isinstance(value, ast.Call) and value.func == "assert":
                # A device assert is Python's own assert statement (the front end reads it back).
                message = exprs.expr(value.args[1]) if len(value.args) > 1 else None
                return cst.Assert(exprs.expr(value.args[0]), message)
            return cst.Expr(exprs.expr(value))
        assert isinstance(stmt, ast.Return)
        return cst.Return(None if stmt.value is None else exprs.expr(stmt.value))

    def for_loop(self, stmt: ast.For, leading_lines: list[cst.EmptyLine]) -> cst.For:
        """``for k in range(a, b, s):``; a loop from a literal 0 with no step is ``range(b)``."""
        starts_at_zero = (
            isinstance(stmt.start, ast.IntLit)
            and stmt.start.value == 0
            and stmt.start.suffix is None
        )
        bounds = [stmt.stop] if starts_at_zero and stmt.step is None else [stmt.start, stmt.stop]
        if stmt.step is not None:
            bounds.append(stmt.step)
        loop_range = cst.Call(cst.Name("range"), [cst.Arg(self.exprs.expr(b)) for b in bounds])
        return cst.For(
            python_name(stmt.var, stmt.span),
            loop_range,
            self.block(stmt.body),
            leading_lines=leading_lines,
        )

    def if_chain(self, stmt: ast.If) -> cst.If:
        """``if``/``elif``/``else``."""
        orelse = stmt.orelse
        then = self.block(stmt.then)
        test = self.exprs.expr(stmt.cond)
        if orelse is None:
            return cst.If(test, then)
        if _is_else_if(orelse):
            nested = orelse.body[0]
            assert isinstance(nested, ast.If)
            return cst.If(test, then, orelse=self.if_chain(nested))
        return cst.If(test, then, orelse=cst.Else(self.block(orelse)))


def _is_else_if(orelse: ast.Block) -> bool:
    """An else block that holds only an if, with no comments of its own: Python's ``elif``."""
    if len(orelse.body) != 1 or orelse.end_comments:
        return False
    nested = orelse.body[0]
    return isinstance(nested, ast.If) and not nested.leading and nested.trailing is None


def _without_trailing_blanks(lines: list[cst.EmptyLine]) -> list[cst.EmptyLine]:
    while lines and lines[-1].comment is None:
        lines = lines[:-1]
    return lines
