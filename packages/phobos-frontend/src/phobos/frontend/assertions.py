"""Python's ``assert c, "message"`` → Phobos ``assert(c, "message")``, a device assert."""

from __future__ import annotations

import ast

from phobos.compile.syntax import ast as ph
from phobos.frontend.expressions import ExpressionTranslator


def translate_assert(exprs: ExpressionTranslator, node: ast.Assert) -> ph.ExprStmt:
    """The assert as a Phobos call statement; the message must be a plain one-line string."""
    source = exprs.source
    args: list[ph.Expr] = [exprs.expr(node.test)]
    message = node.msg
    if message is not None:
        text = message.value if isinstance(message, ast.Constant) else None
        if not isinstance(text, str):
            raise source.reject(
                message,
                "an assert's message must be a string literal",
                help='write assert c, "what went wrong" (the kernel cannot format values)',
            )
        if '"' in text or "\n" in text:
            raise source.reject(
                message,
                "an assert's message must be one line without double quotes",
                help="use single quotes inside the message",
            )
        args.append(ph.StrLit(text, span=source.span(message)))
    return ph.ExprStmt(ph.Call("assert", tuple(args), span=source.span(node)))
