"""Which of ruff's layouts a long line takes: ``head value end`` printed in lines of a width.

ruff does not simply break the outermost brackets of a statement: a value that
is a single term (a name, a call, a subscript) tries its own brackets, then
parentheses around it, then the brackets of the assignment's target, taking
the first whose first line fits; an operation keeps its own brackets only by
ruff's rule for them (one weakest operator, brackets that end or open it), and
otherwise goes in parentheses.  These functions make the same choices, so that
``ruff format`` leaves what ph2py writes as it is.
"""

from __future__ import annotations

import libcst as cst

from ph2py.breaks import SOFT, Doc, Group, IfBreak, Indent, has_group, render
from ph2py.expression_docs import (
    expression,
    has_brackets,
    has_operators,
    is_single_term,
    may_keep_own_brackets,
)


def lay_out(head: Doc, value: cst.BaseExpression, end: str, comment: str, width: int) -> str | None:
    """``head value end`` in lines of ``width`` columns, room left for the ``comment`` at its
    end; None when the line is best left as it is.

    An operation keeps its own brackets when ruff's rule lets it (``acc * s + f(`` ...
    ``)``) and the lines around them fit; otherwise it goes in parentheses on lines of its
    own, and the target's brackets break only if ``target = (`` does not fit.  A single
    term (a name, a call, a subscript) takes the first of ruff's layouts that fits.
    """
    flat_head = render(head, _UNLIMITED)
    own = expression(value, nested=False)
    line = flat_head + render(own, _UNLIMITED) + end
    if len(line + comment) <= width:
        return None
    if is_single_term(value):
        return _single_term(head, value, end, comment, width, line_fits=len(line) <= width)
    tail = end + comment
    if not has_operators(value):  # `not f(x)`, `-t[i]`: brackets break, else parentheses
        text = _render((head, own), tail, width)
        return text if "\n" in text else _render((head, parenthesised(value)), tail, width)
    keeps_brackets = may_keep_own_brackets(value)
    if keeps_brackets and _ends_fit(_render((flat_head, own), tail, width), width):
        return _render((flat_head, own), tail, width)
    text = _render((head, parenthesised(value)), tail, width)
    if keeps_brackets and not text.startswith(flat_head):  # the target broke: no parentheses
        return _render((head, own), tail, width)
    return text


def _single_term(
    head: Doc, value: cst.BaseExpression, end: str, comment: str, width: int, line_fits: bool
) -> str | None:
    """ruff's layouts for a single term, the first whose first line fits: its own brackets
    broken; the term in parentheses on lines of its own (a name or number only if it then
    fits); the target's brackets broken.  A name or number whose line is too long only for
    its end comment stays as it is: ruff would move the comment into the parentheses, where
    it is no longer the statement's."""
    flat_head = render(head, _UNLIMITED)
    own = expression(value, nested=False)
    brackets = has_brackets(value)
    if not brackets and line_fits:
        return None
    if brackets:
        text = _render((flat_head, own), end + comment, width)
        if _ends_fit(text, width):
            return text
    in_parentheses = _render((flat_head, parenthesised(value)), end + comment, width)
    if brackets and first_line(in_parentheses) <= width:
        return in_parentheses
    lines = _render((flat_head, parenthesised(value)), end, width).split("\n")
    if not brackets and max(map(len, lines)) <= width:
        return in_parentheses
    value_doc = own if brackets or comment else parenthesised(value)
    text = _render((head, value_doc), end + comment, width)
    return text if "\n" in text else None


def _ends_fit(text: str, width: int) -> bool:
    """Whether the first and the last line of ``text`` fit (a comment may overhang)."""
    lines = text.split("\n")
    return len(lines[0]) <= width and len(lines[-1]) <= width


_UNLIMITED = 1 << 30


def test_before_message(test: cst.BaseExpression) -> Doc:
    """An assert's test, followed by its message: its own brackets break where ruff's rule
    lets them, else it goes in parentheses."""
    own = expression(test, nested=False)
    if not has_operators(test):
        return own if has_group(own) else parenthesised(test)
    return own if may_keep_own_brackets(test) else parenthesised(test)


def parenthesised(value: cst.BaseExpression) -> Doc:
    """The value in parentheses on lines of its own, if it does not fit on the line."""
    return Group((IfBreak("("), Indent((SOFT, expression(value))), SOFT, IfBreak(")")))


def _render(doc: Doc, tail: str, width: int) -> str:
    return render((doc, tail), width).rstrip(" ")


def first_line(text: str) -> int:
    return len(text.split("\n", 1)[0])
