"""Lowering the debugging statements: ``trace(...)`` and ``assert(c, "message")``.

A mixin of ``StmtLowerer``: ``debug_statement`` takes a call statement and
emits ``ir.Trace`` or ``ir.DeviceAssert`` when the call is one of them.  A
string literal is a value nowhere else.
"""

from __future__ import annotations

from phobos.compile.check.messages import describe, shown
from phobos.compile.check.scope import Scope
from phobos.compile.check.types import Value
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

DEBUG_CALLS = frozenset({"trace", "assert"})


class DebugStatements:
    """``trace`` and ``assert`` call statements (mixed into ``StmtLowerer``)."""

    def debug_statement(self, call: ast.Call, scope: Scope) -> None:
        if call.func == "trace":
            self._trace(call, scope)
        else:
            self._assert(call, scope)

    def _trace(self, call: ast.Call, scope: Scope) -> None:
        sp = self.ctx.spelling
        when_first_block = f"when={sp.ctx()} == 0"
        if not call.args:
            raise error(
                call.span,
                "trace needs at least one value",
                help=f"write `{sp.call('trace', 'x', 'y')}`, or "
                f"`{sp.call('trace', 'x', when_first_block)}` for one block",
            )
        when = None
        for keyword in call.keywords:
            if keyword.name != "when":
                raise error(
                    keyword.span,
                    f"trace has no argument '{keyword.name}'",
                    help=f"choose the blocks that print with `{when_first_block}`",
                )
            when = self.condition(keyword.value, scope, "trace(when=...)")
        values = [self.typed(arg, scope) for arg in call.args]
        for arg, value in zip(call.args, values):
            self.ctx.emit(ir.Trace(value, describe(arg), when, call.span))

    def _assert(self, call: ast.Call, scope: Scope) -> None:
        example = f"write `{self.ctx.spelling.assertion('c', 'what went wrong')}`"
        if call.keywords or not 1 <= len(call.args) <= 2:
            raise error(
                call.span, "assert takes a condition and, optionally, a message", help=example
            )
        message = call.args[1] if len(call.args) == 2 else None
        if message is not None and not isinstance(message, ast.StrLit):
            raise error(message.span, "an assert's message must be a string literal", help=example)
        cond = self.typed(call.args[0], scope)
        if cond.type.dtype != "bool":
            raise error(
                call.args[0].span,
                f"an assert's condition must be bool, got {shown(cond.type)}",
                help=f"compare it, e.g. `{describe(call.args[0])} != 0`",
            )
        text = message.value if message is not None else describe(call.args[0])
        self.ctx.emit(ir.DeviceAssert(cond, text, call.span))

    def _strlit(self, expr: ast.StrLit, scope: Scope) -> Value:
        raise error(
            expr.span,
            "a string stands only as an assert's message",
            help="Phobos values are numbers, booleans and tiles of them",
        )
