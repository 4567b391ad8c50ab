"""Phobos expressions and types → libcst expressions, parenthesised by Python's rules.

Phobos groups like C: comparisons bind tighter than ``&``, ``^`` and ``|``, and
``!`` binds like ``-``.  Python is the reverse on both counts (``a & b == c`` is
``a & (b == c)``; ``not a == b`` is ``not (a == b)``), so every operand is
parenthesised where Python's precedence would group it differently from the
tree.  For the reader's sake (and ruff's B002 and RUF021), the operand of
``not`` is parenthesised whenever it is an operation, ``-(-a)`` is not written
``--a``, and an ``and`` inside an ``or`` is parenthesised.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ph2py.integers import is_integer
from ph2py.literals import number_text
from ph2py.names import lang, python_name
from phobos.compile.syntax import ast

# Python's binding strength (higher binds tighter).
_OR, _AND, _NOT, _COMPARE = 1, 2, 3, 4
_UNARY, _ATOM = 11, 13
_LEVEL = {
    "||": _OR,
    "&&": _AND,
    "==": _COMPARE,
    "!=": _COMPARE,
    "<": _COMPARE,
    "<=": _COMPARE,
    ">": _COMPARE,
    ">=": _COMPARE,
    "|": 5,
    "^": 6,
    "&": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
    "@": 10,
}
_ARITHMETIC = {
    "+": cst.Add,
    "-": cst.Subtract,
    "*": cst.Multiply,
    "/": cst.Divide,
    "%": cst.Modulo,
    "@": cst.MatrixMultiply,
    "<<": cst.LeftShift,
    ">>": cst.RightShift,
    "&": cst.BitAnd,
    "|": cst.BitOr,
    "^": cst.BitXor,
}
_COMPARISONS = {
    "==": cst.Equal,
    "!=": cst.NotEqual,
    "<": cst.LessThan,
    "<=": cst.LessThanEqual,
    ">": cst.GreaterThan,
    ">=": cst.GreaterThanEqual,
}
_UNARY_OPS = {"-": cst.Minus, "~": cst.BitInvert, "!": cst.Not}
_NO_SPACE = cst.SimpleWhitespace("")
_SPACE = cst.SimpleWhitespace(" ")


def level(expr: ast.Expr) -> int:
    """How tightly ``expr``'s Python spelling binds."""
    if isinstance(expr, ast.Binary):
        return _LEVEL[expr.op]
    if isinstance(expr, ast.Unary):
        return _NOT if expr.op == "!" else _UNARY
    return _ATOM


def parenthesised(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


@dataclass(frozen=True)
class ExpressionWriter:
    """Writes the expressions of one definition.

    ``functions`` are the module's ``fn``s (called by bare name, the rest are
    ``ph.`` builtins); ``declared`` are the names the program binds (an unbound
    ``inf`` is ``ph.inf``); ``integers`` are the names known to hold integers.
    """

    lines: tuple[str, ...]
    functions: frozenset[str]
    declared: frozenset[str]
    integers: frozenset[str]

    def expr(self, expr: ast.Expr) -> cst.BaseExpression:
        if isinstance(expr, ast.Name):
            if expr.id == "inf" and "inf" not in self.declared:
                return lang("inf")
            return python_name(expr.id, expr.span)
        if isinstance(expr, (ast.IntLit, ast.FloatLit)):
            return self.number(expr)
        if isinstance(expr, ast.BoolLit):
            return cst.Name("True" if expr.value else "False")
        if isinstance(expr, ast.StrLit):
            return cst.SimpleString(f'"{expr.value}"')
        if isinstance(expr, ast.Ctx):
            return lang("ctx", expr.group, expr.axis)
        if isinstance(expr, ast.Unary):
            return self.unary(expr)
        if isinstance(expr, ast.Binary):
            return self.binary(expr)
        if isinstance(expr, ast.Call):
            return self.call(expr)
        if isinstance(expr, ast.TileCtor):
            ctor = cst.Subscript(lang(expr.kind), [_element(self.scalar_type(expr.dtype))])
            return cst.Subscript(ctor, [_element(self.expr(d)) for d in expr.shape])
        return self.subscript(expr)

    def operand(self, expr: ast.Expr, parens: bool) -> cst.BaseExpression:
        node = self.expr(expr)
        return parenthesised(node) if parens else node

    def number(self, literal: ast.IntLit | ast.FloatLit) -> cst.BaseExpression:
        text = number_text(literal, self.lines)
        node = cst.Integer(text) if isinstance(literal, ast.IntLit) else cst.Float(text)
        if literal.suffix is None:
            return node
        return cst.Call(lang(literal.suffix), [cst.Arg(node)])

    def unary(self, expr: ast.Unary) -> cst.BaseExpression:
        if expr.op == "!":
            parens = isinstance(expr.operand, ast.Binary)
        else:  # -(-a), not --a, which reads as a decrement
            parens = level(expr.operand) < _UNARY or isinstance(expr.operand, ast.Unary)
        return cst.UnaryOperation(_UNARY_OPS[expr.op](), self.operand(expr.operand, parens))

    def binary(self, expr: ast.Binary) -> cst.BaseExpression:
        mine = _LEVEL[expr.op]
        left_level, right_level = level(expr.left), level(expr.right)
        chained = mine == _COMPARE and left_level == _COMPARE
        mixed = expr.op == "||"  # (a and b) or c: Python groups so, and says it is clearer
        left = self.operand(
            expr.left, left_level < mine or chained or (mixed and left_level == _AND)
        )
        right = self.operand(expr.right, right_level <= mine or (mixed and right_level == _AND))
        if expr.op in ("&&", "||"):
            op = cst.And() if expr.op == "&&" else cst.Or()
            return cst.BooleanOperation(left, op, right)
        if expr.op in _COMPARISONS:
            return cst.Comparison(left, [cst.ComparisonTarget(_COMPARISONS[expr.op](), right)])
        return cst.BinaryOperation(left, self.arithmetic(expr), right)

    def arithmetic(self, expr: ast.Binary) -> cst.BaseBinaryOp:
        if expr.op == "/" and self.divides_integers(expr.left, expr.right):
            return cst.FloorDivide()
        return _ARITHMETIC[expr.op]()

    def divides_integers(self, left: ast.Expr, right: ast.Expr) -> bool:
        """Phobos ``/`` on integers reads as Python ``//``; on anything else as ``/``."""
        return is_integer(left, self.integers) and is_integer(right, self.integers)

    def call(self, expr: ast.Call) -> cst.Call:
        name = python_name(expr.func, expr.span)
        func = name if expr.func in self.functions else lang(expr.func)
        args = [cst.Arg(self.expr(a)) for a in expr.args]
        args += [
            cst.Arg(
                self.expr(kw.value),
                keyword=python_name(kw.name, kw.span),
                equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE),
            )
            for kw in expr.keywords
        ]
        return cst.Call(func, args)

    def subscript(self, expr: ast.Subscript) -> cst.Subscript:
        base = self.operand(expr.base, level(expr.base) < _ATOM)
        return cst.Subscript(base, [self.index_item(item) for item in expr.items])

    def index_item(self, item: ast.IndexItem) -> cst.SubscriptElement:
        if isinstance(item, ast.Point):
            return _element(self.expr(item.index))
        if isinstance(item, ast.Window):
            length = self.operand(item.length, level(item.length) < _UNARY)
            upper = cst.UnaryOperation(cst.Plus(), length)
            spaced = not (self.is_simple(item.start) and self.is_simple(item.length))
            colon = cst.Colon(
                whitespace_before=_SPACE if spaced else _NO_SPACE,
                whitespace_after=_SPACE if spaced else _NO_SPACE,
            )
            slice_ = cst.Slice(lower=self.expr(item.start), upper=upper, first_colon=colon)
            return cst.SubscriptElement(slice_)
        if isinstance(item, ast.FullAxis):
            return cst.SubscriptElement(cst.Slice(lower=None, upper=None))
        return _element(cst.Name("None"))

    def is_simple(self, expr: ast.Expr) -> bool:
        """A plain name or number, negated or not: a window of simple bounds is written
        ``a:+L``, any other ``a + 1 : +L``, as PEP 8 and ruff lay out slices."""
        if isinstance(expr, ast.Name):
            return expr.id != "inf" or "inf" in self.declared
        if isinstance(expr, (ast.IntLit, ast.FloatLit)):
            return expr.suffix is None
        if isinstance(expr, ast.BoolLit):
            return True
        if isinstance(expr, ast.Unary):
            return expr.op != "!" and self.is_simple(expr.operand)
        return False

    # ------------------------------------------------------------------ types

    def scalar_type(self, type_: ast.ScalarType) -> cst.Attribute:
        return lang(type_.name)

    def type_(self, type_: ast.Type) -> cst.BaseExpression:
        if isinstance(type_, ast.ScalarType):
            return self.scalar_type(type_)
        tensor = cst.Subscript(lang("tensor"), [_element(self.scalar_type(type_.dtype))])
        return cst.Subscript(tensor, [_element(self.expr(d)) for d in type_.dims])


def _element(node: cst.BaseExpression) -> cst.SubscriptElement:
    return cst.SubscriptElement(cst.Index(node))
