"""Python expressions as documents for ``ph2py.breaks``, and what ruff's rules ask of them.

Brackets (a call's, a subscript's, a list's, parentheses) are groups: they stay
on the line, else their items go on one indented line (not a list's or a set's),
else one a line with a trailing comma.  An operator chain is a group that,
inside brackets, breaks before each of its weakest operators; its stronger
operations are groups of their own.  Outside brackets operators never break: a
statement's value is put in parentheses first (``ph2py.ruff_rules`` decides when).
"""

from __future__ import annotations

import libcst as cst

from ph2py.breaks import SOFT, SPACE, Doc, Group, IfBreak, Indent

code = cst.Module([]).code_for_node
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


def expression(node: cst.BaseExpression, nested: bool = True) -> Doc:
    """The document of an expression; ``nested``: inside brackets, where its operators may break."""
    if node.lpar:
        inner = expression(node.with_changes(lpar=[], rpar=[]))
        return Group(("(", Indent((SOFT, inner)), SOFT, ")"))
    if isinstance(node, cst.Call):
        args = [_argument(arg) for arg in node.args]
        return (expression(node.func, nested), bracketed("(", args, ")"))
    if isinstance(node, cst.Subscript):
        elements = [_subscript_element(e) for e in node.slice]
        return (expression(node.value, nested), bracketed("[", elements, "]"))
    if isinstance(node, cst.List | cst.Set):
        elements = [expression(e.value) for e in node.elements]
        open_, close = ("[", "]") if isinstance(node, cst.List) else ("{", "}")
        return bracketed(open_, elements, close, hug=False)
    if isinstance(node, cst.UnaryOperation):
        return (code(node.operator), expression(node.expression, nested))
    if isinstance(node, _Operation):
        return _chain(node, nested)
    return code(node)


def _argument(arg: cst.Arg) -> Doc:
    if arg.keyword is None:
        return expression(arg.value)
    return (f"{arg.keyword.value}=", expression(arg.value))


def _subscript_element(element: cst.SubscriptElement) -> Doc:
    part = element.slice
    if isinstance(part, cst.Index):
        return expression(part.value)
    assert isinstance(part, cst.Slice)
    lower = "" if part.lower is None else expression(part.lower)
    upper = "" if part.upper is None else expression(part.upper)
    return (lower, code(part.first_colon), upper)


def bracketed(
    open_: str, items: list[Doc], close: str, hug: bool = True, comma_after_one: bool = False
) -> Doc:
    """Items in brackets: on the line, else (``hug``) on one indented line, else one a line
    with a trailing comma.  ruff hugs the items of calls, subscripts and parameter lists, not
    of list and set displays; a lone item gets a comma only in a parameter list."""
    if not items:
        return open_ + close
    if len(items) == 1:
        comma = (IfBreak(","),) if comma_after_one else ()
        return Group((open_, Indent((SOFT, items[0], *comma)), SOFT, close))
    separated: list[Doc] = [items[0]]
    for item in items[1:]:
        separated += [",", SPACE, item]
    inner: Doc = (*separated, IfBreak(","))
    return Group((open_, Indent((SOFT, Group(inner) if hug else inner)), SOFT, close))


def _chain(node: _Operation, nested: bool) -> Doc:
    """``a + b - c``: the operands of one precedence, breaking before each operator inside
    brackets; the stronger operations among the operands are groups of their own."""
    operands, operators = _flatten(node)
    parts: list[Doc] = [expression(operands[0], nested)]
    for operator, operand in zip(operators, operands[1:]):
        parts += [SPACE if nested else " ", f"{operator} ", expression(operand, nested)]
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
                operators.append(code(target.operator).strip())
            node = node.left
        else:
            operands.append(node.right)
            operators.append(code(node.operator).strip())
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


def is_single_term(value: cst.BaseExpression) -> bool:
    """A name, number, string, attribute, call or subscript, not in parentheses: a value
    ruff lays out by trying its layouts in turn rather than by its operators."""
    terms = cst.Name | cst.Integer | cst.Float | cst.SimpleString | cst.Attribute
    return not value.lpar and isinstance(value, terms | cst.Call | cst.Subscript)


def has_operators(value: cst.BaseExpression) -> bool:
    """Whether the value has a binary, boolean or comparison operator outside brackets."""
    return bool(_operators(value))


def has_brackets(value: cst.BaseExpression) -> bool:
    """A call with arguments, or a subscript: a term that can break its own brackets."""
    return (isinstance(value, cst.Call) and bool(value.args)) or isinstance(value, cst.Subscript)


def may_keep_own_brackets(value: cst.BaseExpression) -> bool:
    """ruff's rule for a statement's value: it breaks its own brackets, without parentheses
    around it, if it has no operator outside them, or one weakest operator and brackets
    that end it (a call's, not a subscript's) or open it (``(a + b) // c``)."""
    levels = _operators(value)
    if not levels:
        return True
    if levels.count(min(levels)) > 1:
        return False
    return _opens_brackets(_last_operand(value)) or _starts_with_brackets(value)
