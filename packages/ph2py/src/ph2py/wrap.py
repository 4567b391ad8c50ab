"""Long lines of a converted definition, wrapped as ruff format wraps them.

Each statement, header and decorator line that is longer than the line length
is described as a document (``ph2py.expression_docs``) and printed again in
the layout ruff would choose (``ph2py.ruff_rules``): brackets break outermost
first, their contents on one indented line when that fits, else one item a line
with a trailing comma; a value that cannot keep its own brackets goes in
parentheses, broken before its operators.  The printed text is parsed back
with libcst, so only whitespace changes: the program, and every comment, stay
where they were (a comment at the end of a line ends the last line).
"""

from __future__ import annotations

import textwrap

import libcst as cst

from ph2py.breaks import INDENT_WIDTH, Doc, render
from ph2py.expression_docs import bracketed, code, expression
from ph2py.ruff_rules import lay_out, test_before_message

_PRAGMAS = ("noqa", "type:", "pyright:", "pylint:", "nosec", "isort:", "ruff:")


def wrap_long_lines(statement: cst.BaseStatement, line_length: int) -> cst.BaseStatement:
    """``statement`` (a top-level definition) with each line longer than ``line_length`` wrapped."""
    return statement.visit(_Wrapper(line_length))


class _Wrapper(cst.CSTTransformer):
    """Wraps the long lines of one definition; ``depth`` is the block depth of the node visited."""

    def __init__(self, line_length: int) -> None:
        super().__init__()
        self.line_length = line_length
        self.depth = 0
        self.elifs: set[int] = set()  # the ifs written as an `elif`

    @property
    def width(self) -> int:
        return self.line_length - INDENT_WIDTH * self.depth

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        self.depth += 1
        return True

    def leave_IndentedBlock(
        self, original: cst.IndentedBlock, updated: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        self.depth -= 1
        return updated

    def visit_If(self, node: cst.If) -> bool:
        if isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))
        return True

    # ------------------------------------------------------------------ lines

    def leave_SimpleStatementLine(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if len(updated.body) != 1:
            return updated
        parts = _statement_parts(updated.body[0])
        if parts is None:
            return updated
        comment = _reserved(updated.trailing_whitespace)
        text = lay_out(*parts, comment, self.width)
        if text is None:
            return updated
        wrapped = cst.parse_statement(text + "\n")
        assert isinstance(wrapped, cst.SimpleStatementLine)
        return updated.with_changes(body=wrapped.body)

    def leave_Decorator(self, original: cst.Decorator, updated: cst.Decorator) -> cst.Decorator:
        comment = _reserved(updated.trailing_whitespace)
        text = lay_out("@", updated.decorator, "", comment, self.width)
        if text is None:
            return updated
        parsed = cst.parse_statement(f"{text}\ndef _():\n    pass\n")
        assert isinstance(parsed, cst.FunctionDef)
        return updated.with_changes(decorator=parsed.decorators[0].decorator)

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.If:
        keyword = "elif" if id(original) in self.elifs else "if"
        text = self._header(f"{keyword} ", updated.test, updated.body)
        if text is None:
            return updated
        if keyword == "elif":
            parsed = cst.parse_statement(f"if _:\n    pass\n{text}\n    pass\n")
            assert isinstance(parsed, cst.If) and isinstance(parsed.orelse, cst.If)
            parsed = parsed.orelse
        else:
            parsed = cst.parse_statement(f"{text}\n    pass\n")
        assert isinstance(parsed, cst.If)
        return updated.with_changes(
            test=parsed.test, whitespace_before_test=parsed.whitespace_before_test
        )

    def leave_While(self, original: cst.While, updated: cst.While) -> cst.While:
        text = self._header("while ", updated.test, updated.body)
        if text is None:
            return updated
        parsed = cst.parse_statement(f"{text}\n    pass\n")
        assert isinstance(parsed, cst.While)
        return updated.with_changes(
            test=parsed.test, whitespace_after_while=parsed.whitespace_after_while
        )

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        text = self._header(f"for {code(updated.target)} in ", updated.iter, updated.body)
        if text is None:
            return updated
        parsed = cst.parse_statement(f"{text}\n    pass\n")
        assert isinstance(parsed, cst.For)
        return updated.with_changes(
            iter=parsed.iter, whitespace_after_in=parsed.whitespace_after_in
        )

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        if isinstance(updated.whitespace_before_params, cst.ParenthesizedWhitespace):
            # One a line already, for the comments between them: only a long one breaks.
            params = [self._parameter_line(p) for p in updated.params.params]
            laid_out = updated.with_changes(params=updated.params.with_changes(params=params))
            return self._return_line(laid_out)
        params = updated.params.params
        items = [(code(p.name), ": ", expression(p.annotation.annotation)) for p in params]
        returns = ()
        if updated.returns is not None:
            returns = (" -> ", expression(updated.returns.annotation))
        doc = (
            f"def {updated.name.value}",
            bracketed("(", items, ")", comma_after_one=True),
            *returns,
            ":",
            _reserved(_header_comment(updated.body)),
        )
        text = render(doc, self.width).rstrip(" ")
        if "\n" not in text:
            return updated
        parsed = cst.parse_statement(f"{text}\n    pass\n")
        assert isinstance(parsed, cst.FunctionDef)
        laid_out = updated.with_changes(
            params=parsed.params,
            whitespace_before_params=parsed.whitespace_before_params,
            returns=parsed.returns,
        )
        one_a_line = isinstance(parsed.params.params[-1].comma, cst.Comma)
        return self._return_line(laid_out) if one_a_line else laid_out

    def _return_line(self, node: cst.FunctionDef) -> cst.FunctionDef:
        """``) -> ph.f32:`` below parameters one a line (with a trailing comma); ruff puts
        the type in parentheses on a line of its own when that line is too long (for its
        comment, mostly)."""
        if node.returns is None:
            return node
        returns = code(node.returns.annotation)
        comment = _reserved(_header_comment(node.body))
        if len(f") -> {returns}:{comment}") <= self.width or len(f"):{comment}") > self.width:
            return node  # it fits, or the comment is too long either way
        parsed = cst.parse_statement(f"def _() -> (\n    {returns}\n):\n    pass\n")
        assert isinstance(parsed, cst.FunctionDef)
        return node.with_changes(returns=parsed.returns)

    def _parameter_line(self, param: cst.Param) -> cst.Param:
        """A parameter on a line of its own, its annotation broken if the line is too long."""
        end = param.comma.whitespace_after if isinstance(param.comma, cst.Comma) else None
        comment = _reserved(
            end.first_line if isinstance(end, cst.ParenthesizedWhitespace) else None
        )
        annotation = param.annotation.annotation
        doc = (f"{code(param.name)}: ", expression(annotation), ",", comment)
        text = render(doc, self.width - INDENT_WIDTH).rstrip(" ")
        if "\n" not in text:
            return param
        parsed = cst.parse_statement(
            f"def _(\n{textwrap.indent(text, ' ' * INDENT_WIDTH)}\n):\n    pass\n"
        )
        assert isinstance(parsed, cst.FunctionDef)
        return param.with_changes(annotation=parsed.params.params[0].annotation)

    def _header(self, head: str, value: cst.BaseExpression, body: cst.BaseSuite) -> str | None:
        return lay_out(head, value, ":", _reserved(_header_comment(body)), self.width)


# ---------------------------------------------------------------------- statements


def _statement_parts(
    small: cst.BaseSmallStatement,
) -> tuple[Doc, cst.BaseExpression, str] | None:
    """What stands before the statement's last expression (a target may break too), the
    expression, and what follows it."""
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        annotation = code(small.annotation.annotation)
        return (expression(small.target, nested=False), f": {annotation} = "), small.value, ""
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return (expression(small.targets[0].target, nested=False), " = "), small.value, ""
    if isinstance(small, cst.AugAssign):
        operator = f" {code(small.operator).strip()} "
        return (expression(small.target, nested=False), operator), small.value, ""
    if isinstance(small, cst.Return) and small.value is not None:
        return "return ", small.value, ""
    if isinstance(small, cst.Expr):
        return "", small.value, ""
    if isinstance(small, cst.Assert):
        if small.msg is None:
            return "assert ", small.test, ""
        return ("assert ", test_before_message(small.test), ", "), small.msg, ""
    return None


def _reserved(end: cst.TrailingWhitespace | None) -> str:
    """Room for the comment at the end of the line (ruff leaves none for pragma comments)."""
    if end is None or end.comment is None:
        return ""
    text = end.comment.value.removeprefix("#").lstrip()
    return "" if text.startswith(_PRAGMAS) else " " * (2 + len(end.comment.value))


def _header_comment(body: cst.BaseSuite) -> cst.TrailingWhitespace | None:
    return body.header if isinstance(body, cst.IndentedBlock) else None
