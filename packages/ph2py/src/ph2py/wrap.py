"""Long lines of a converted definition, wrapped as ruff format wraps them.

Each statement, header and decorator line that is longer than the line length
is described as a document (``ph2py.breaks``) and printed again: brackets break
outermost first, their contents go on one indented line when that fits, else
one item a line with a trailing comma; an operator chain inside brackets breaks
before its operators.  The right-hand side of a statement keeps its own
brackets when it has some to break (``x = f(`` ... ``)``) and is otherwise put
in parentheses, by the rules ruff follows.  The printed text is parsed back
with libcst, so only whitespace changes: the program, and every comment, stay
where they were (a comment at the end of a line ends the last line).
"""

from __future__ import annotations

import libcst as cst

from ph2py.breaks import SOFT, SPACE, Doc, Group, IfBreak, Indent, render

_code = cst.Module([]).code_for_node
_PRAGMAS = ("noqa", "type:", "pyright:", "pylint:", "nosec", "isort:", "ruff:")
# Python's operator precedence, weakest first: the weakest operators of a chain break first.
_BOOLEAN = {cst.Or: 1, cst.And: 2}
_COMPARE = 4
_BINARY = {
    cst.BitOr: 5,
    cst.BitXor: 6,
    cst.BitAnd: 7,
    cst.LeftShift: 8,
    cst.RightShift: 8,
    cst.Add: 9,
    cst.Subtract: 9,
    cst.Multiply: 10,
    cst.Divide: 10,
    cst.FloorDivide: 10,
    cst.Modulo: 10,
    cst.MatrixMultiply: 10,
}
_Operation = cst.BinaryOperation | cst.BooleanOperation | cst.Comparison


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
        return self.line_length - 4 * self.depth

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
        comment = _reserved(updated.trailing_whitespace)
        ways = [_lay_out(*way, comment, self.width) for way in _statement_parts(updated.body[0])]
        laid_out = [text for text in ways if text is not None]
        fitting = [text for text in laid_out if _first_line(text) <= self.width]
        text = (fitting or laid_out or [None])[0]
        if text is None:
            return updated
        wrapped = cst.parse_statement(text + "\n")
        assert isinstance(wrapped, cst.SimpleStatementLine)
        return updated.with_changes(body=wrapped.body)

    def leave_Decorator(self, original: cst.Decorator, updated: cst.Decorator) -> cst.Decorator:
        comment = _reserved(updated.trailing_whitespace)
        text = _lay_out("@", updated.decorator, "", comment, self.width)
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
        text = self._header(f"for {_code(updated.target)} in ", updated.iter, updated.body)
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
            return updated  # laid out one a line already, for the comments between parameters
        params = updated.params.params
        items = [(_code(p.name), ": ", _expression(p.annotation.annotation)) for p in params]
        returns = ()
        if updated.returns is not None:
            returns = (" -> ", _expression(updated.returns.annotation))
        doc = (
            f"def {updated.name.value}",
            _bracketed("(", items, ")", comma_after_one=True),
            *returns,
            ":",
            _reserved(_header_comment(updated.body)),
        )
        text = render(doc, self.width).rstrip(" ")
        if "\n" not in text:
            return updated
        parsed = cst.parse_statement(f"{text}\n    pass\n")
        assert isinstance(parsed, cst.FunctionDef)
        return updated.with_changes(
            params=parsed.params,
            whitespace_before_params=parsed.whitespace_before_params,
            returns=parsed.returns,
        )

    def _header(self, head: str, value: cst.BaseExpression, body: cst.BaseSuite) -> str | None:
        return _lay_out(head, value, ":", _reserved(_header_comment(body)), self.width)


# ---------------------------------------------------------------------- statements


def _statement_parts(small: cst.BaseSmallStatement) -> list[tuple[Doc, cst.BaseExpression, str]]:
    """The ways to split a statement: what stands before the expression that may break,
    the expression, and what follows it; the first way whose first line fits is taken."""
    if isinstance(small, cst.AnnAssign) and small.value is not None:
        annotation = _code(small.annotation.annotation)
        return [((_expression(small.target, nested=False), f": {annotation} = "), small.value, "")]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return [((_expression(small.targets[0].target, nested=False), " = "), small.value, "")]
    if isinstance(small, cst.AugAssign):
        operator = f" {_code(small.operator).strip()} "
        return [((_expression(small.target, nested=False), operator), small.value, "")]
    if isinstance(small, cst.Return) and small.value is not None:
        return [("return ", small.value, "")]
    if isinstance(small, cst.Expr):
        return [("", small.value, "")]
    if isinstance(small, cst.Assert):
        if small.msg is None:
            return [("assert ", small.test, "")]
        test, message = _code(small.test), _code(small.msg)
        return [(f"assert {test}, ", small.msg, ""), ("assert ", small.test, f", {message}")]
    return []


def _lay_out(
    head: Doc, value: cst.BaseExpression, end: str, comment: str, width: int
) -> str | None:
    """``head value end`` in lines of ``width`` columns, room left for the ``comment`` at its
    end; None when the line is best left as it is.

    In ruff's order of preference: the value breaks its own brackets, when ruff's rule
    lets it (no operator outside them, or one weakest operator and brackets that end or
    open the value) and the first line then fits; else it is put in parentheses on lines
    of its own (a value with nothing to break only if it then fits, comment aside); else
    the brackets of the target (``out[...] = ...``) break.
    """
    flat_head = render(head, _UNLIMITED)
    line = flat_head + render(_expression(value, nested=False), _UNLIMITED) + end
    atom = not _breakable(value)
    if len(line + comment) <= width or (atom and len(line) <= width):
        return None
    if not atom and _may_keep_own_brackets(value):
        text = _render((flat_head, _expression(value, nested=False)), end + comment, width)
        if _first_line(text) <= width:
            return text
    parenthesised = Group((IfBreak("("), Indent((SOFT, _expression(value))), SOFT, IfBreak(")")))
    text = _render((flat_head, parenthesised), end + comment, width)
    if atom:
        fits = max(map(len, _render((flat_head, parenthesised), end, width).splitlines())) <= width
    else:
        fits = _first_line(text) <= width
    if fits:
        return text
    if atom:
        return None  # ruff would move the end comment inside the parentheses, off the line
    own = _may_keep_own_brackets(value)
    text = _render(
        (head, _expression(value, nested=False) if own else parenthesised), end + comment, width
    )
    return text if "\n" in text else None


_UNLIMITED = 1 << 30


def _render(doc: Doc, tail: str, width: int) -> str:
    return render((doc, tail), width).rstrip(" ")


def _first_line(text: str) -> int:
    return len(text.split("\n", 1)[0])


def _breakable(value: cst.BaseExpression) -> bool:
    """Whether the value has brackets or an operator, somewhere to break it."""
    return bool(_operators(value)) or any(
        isinstance(node, cst.Call | cst.Subscript | cst.List | cst.Set) or node.lpar
        for node in _operands(value)
    )


def _may_keep_own_brackets(value: cst.BaseExpression) -> bool:
    levels = _operators(value)
    if not levels:
        return True
    if levels.count(min(levels)) > 1:
        return False
    return _opens_brackets(_last_operand(value)) or _starts_with_brackets(value)


def _reserved(end: cst.TrailingWhitespace | None) -> str:
    """Room for the comment at the end of the line (ruff leaves none for pragma comments)."""
    if end is None or end.comment is None:
        return ""
    text = end.comment.value.removeprefix("#").lstrip()
    return "" if text.startswith(_PRAGMAS) else " " * (2 + len(end.comment.value))


def _header_comment(body: cst.BaseSuite) -> cst.TrailingWhitespace | None:
    return body.header if isinstance(body, cst.IndentedBlock) else None


# ---------------------------------------------------------------------- expressions


def _expression(node: cst.BaseExpression, nested: bool = True) -> Doc:
    """The document of an expression; ``nested``: inside brackets, where its operators may break."""
    if node.lpar:
        inner = _expression(node.with_changes(lpar=[], rpar=[]))
        return Group(("(", Indent((SOFT, inner)), SOFT, ")"))
    if isinstance(node, cst.Call):
        args = [_argument(arg) for arg in node.args]
        return (_expression(node.func, nested), _bracketed("(", args, ")"))
    if isinstance(node, cst.Subscript):
        elements = [_subscript_element(e) for e in node.slice]
        return (_expression(node.value, nested), _bracketed("[", elements, "]"))
    if isinstance(node, cst.List | cst.Set):
        elements = [_expression(e.value) for e in node.elements]
        open_, close = ("[", "]") if isinstance(node, cst.List) else ("{", "}")
        return _bracketed(open_, elements, close)
    if isinstance(node, cst.UnaryOperation):
        return (_code(node.operator), _expression(node.expression, nested))
    if isinstance(node, _Operation):
        return _chain(node, nested)
    return _code(node)


def _argument(arg: cst.Arg) -> Doc:
    if arg.keyword is None:
        return _expression(arg.value)
    return (f"{arg.keyword.value}=", _expression(arg.value))


def _subscript_element(element: cst.SubscriptElement) -> Doc:
    part = element.slice
    if isinstance(part, cst.Index):
        return _expression(part.value)
    assert isinstance(part, cst.Slice)
    lower = "" if part.lower is None else _expression(part.lower)
    upper = "" if part.upper is None else _expression(part.upper)
    return (lower, _code(part.first_colon), upper)


def _bracketed(open_: str, items: list[Doc], close: str, comma_after_one: bool = False) -> Doc:
    """Items in brackets: on the line, else on one indented line, else one a line with a
    trailing comma (a lone item gets one only in a parameter list, as ruff writes it)."""
    if not items:
        return open_ + close
    if len(items) == 1:
        comma = (IfBreak(","),) if comma_after_one else ()
        return Group((open_, Indent((SOFT, items[0], *comma)), SOFT, close))
    separated: list[Doc] = [items[0]]
    for item in items[1:]:
        separated += [",", SPACE, item]
    inner = Group((*separated, IfBreak(",")))
    return Group((open_, Indent((SOFT, inner)), SOFT, close))


def _chain(node: _Operation, nested: bool) -> Doc:
    """``a + b - c``: the operands of one precedence, breaking before each operator inside
    brackets; the stronger operations among the operands are groups of their own."""
    operands, operators = _flatten(node)
    parts: list[Doc] = [_expression(operands[0], nested)]
    for operator, operand in zip(operators, operands[1:]):
        parts += [SPACE if nested else " ", f"{operator} ", _expression(operand, nested)]
    return Group(tuple(parts)) if nested else tuple(parts)


def _flatten(node: cst.BaseExpression) -> tuple[list[cst.BaseExpression], list[str]]:
    """The operands and operators of the chain of one precedence that ``node`` heads."""
    level = _level(node)
    operands: list[cst.BaseExpression] = []
    operators: list[str] = []
    while isinstance(node, _Operation) and not node.lpar and _level(node) == level:
        if isinstance(node, cst.Comparison):
            for target in reversed(node.comparisons):
                operands.append(target.comparator)
                operators.append(_code(target.operator).strip())
            node = node.left
        else:
            operands.append(node.right)
            operators.append(_code(node.operator).strip())
            node = node.left
    operands.append(node)
    return operands[::-1], operators[::-1]


def _level(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.BooleanOperation):
        return _BOOLEAN[type(node.operator)]
    if isinstance(node, cst.Comparison):
        return _COMPARE
    if isinstance(node, cst.BinaryOperation):
        return _BINARY[type(node.operator)]
    return None


def _operators(node: cst.BaseExpression) -> list[int]:
    """The precedence of every operator outside brackets and parentheses."""
    if node.lpar:
        return []
    if isinstance(node, cst.UnaryOperation):
        return _operators(node.expression)
    if isinstance(node, cst.Comparison):
        found = _operators(node.left)
        for target in node.comparisons:
            found += [_COMPARE, *_operators(target.comparator)]
        return found
    if isinstance(node, cst.BinaryOperation | cst.BooleanOperation):
        level = _level(node)
        assert level is not None
        return [*_operators(node.left), level, *_operators(node.right)]
    return []


def _operands(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of the operators outside brackets (the node itself if it has none)."""
    if node.lpar:
        return [node]
    if isinstance(node, cst.UnaryOperation):
        return _operands(node.expression)
    if isinstance(node, cst.Comparison):
        found = _operands(node.left)
        for target in node.comparisons:
            found += _operands(target.comparator)
        return found
    if isinstance(node, cst.BinaryOperation | cst.BooleanOperation):
        return [*_operands(node.left), *_operands(node.right)]
    return [node]


def _last_operand(node: cst.BaseExpression) -> cst.BaseExpression:
    while not node.lpar:
        if isinstance(node, cst.BinaryOperation | cst.BooleanOperation):
            node = node.right
        elif isinstance(node, cst.Comparison):
            node = node.comparisons[-1].comparator
        elif isinstance(node, cst.UnaryOperation):
            node = node.expression
        else:
            break
    return node


def _starts_with_brackets(node: cst.BaseExpression) -> bool:
    """Whether the value opens with a bracket of its own: ``(a + b) // c``, ``[a, b] ...``."""
    while not node.lpar and isinstance(node, _Operation):
        node = node.left
    return bool(node.lpar) or (isinstance(node, cst.List | cst.Set) and bool(node.elements))


def _opens_brackets(node: cst.BaseExpression) -> bool:
    """Brackets ruff breaks rather than add parentheses: a call's with arguments, a list's,
    a set's, parentheses; not a subscript's, which looks odd broken outside parentheses."""
    if node.lpar:
        return True
    if isinstance(node, cst.Call):
        return bool(node.args)
    return isinstance(node, cst.List | cst.Set) and bool(node.elements)
