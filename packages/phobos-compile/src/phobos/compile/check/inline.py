"""Inlining a ``fn`` call: the body is checked again at each call's types and shapes.

A scalar parameter type names the element type only, so a call may pass a tile
of that type.  Each parameter becomes a fresh immutable variable; the body's
statements are emitted where the call is; ``return e`` at the end gives the value.
A fn sees module constants and other fns, not the caller's names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from phobos.compile.check import scope as names
from phobos.compile.check.messages import counted, describe, shown
from phobos.compile.check.scope import Binding, Scope
from phobos.compile.check.spelling import Spelling
from phobos.compile.check.types import Literal, Value, literal_fits, make_const
from phobos.compile.diagnostics import Diagnostic, Note, PhobosError, error
from phobos.compile.ir import nodes as ir
from phobos.compile.limits import MAX_NESTING
from phobos.compile.syntax import ast

if TYPE_CHECKING:
    from phobos.compile.check.lowering import Statements


def inline_fn(lw: Statements, fn: ast.Function, call: ast.Call, scope: Scope) -> Value | None:
    ctx = lw.ctx
    if fn.name in ctx.fn_stack:
        raise error(
            call.span,
            f"fn '{fn.name}' calls itself (through {' -> '.join([*ctx.fn_stack, fn.name])})",
            help="fns are inlined, so they cannot recurse; write a loop",
        )
    if call.keywords:
        raise error(call.keywords[0].span, f"fn '{fn.name}' takes positional arguments only")
    if len(call.args) != len(fn.params):
        raise error(
            call.span,
            f"fn '{fn.name}' takes {counted(len(fn.params), 'argument')}, got {len(call.args)}",
        )
    args = [_argument(lw, p, a, scope, fn) for p, a in zip(fn.params, call.args)]
    errors_before = len(ctx.errors)
    try:
        return lower_body(lw, fn, args)
    except PhobosError as failure:
        raise PhobosError(*_called_from(failure.diagnostics, fn, call)) from None
    finally:
        # Errors recorded in the fn's nested blocks name the call too.
        ctx.errors[errors_before:] = _called_from(ctx.errors[errors_before:], fn, call)


def lower_body(lw: Statements, fn: ast.Function, args: Sequence[ir.Expr]) -> Value | None:
    """Emit ``fn``'s body with its parameters bound to ``args``; the value it returns."""
    ctx = lw.ctx
    fn_scope = ctx.root.child()
    for param, arg in zip(fn.params, args):
        var = ctx.new_variable(param.name, arg.type, False, param.span)
        ctx.emit(ir.Define(var, arg, param.span))
        fn_scope.declare(param.name, Binding(names.FN_PARAM, var, param.span))
    body = list(fn.body.body)
    last = body.pop() if body and isinstance(body[-1], ast.Return) else None
    ctx.fn_stack.append(fn.name)
    was_in_fn, lw.in_fn = lw.in_fn, True
    ctx.level += 1  # the body is a level: a chain of calls nests
    try:
        if ctx.level > MAX_NESTING:
            raise lw.too_deep(fn.body.span)
        inner = fn_scope.child()
        for stmt in body:
            lw.statement(stmt, inner)
        return _result(lw, fn, last, inner)
    finally:
        ctx.level -= 1
        ctx.fn_stack.pop()
        lw.in_fn = was_in_fn


def param_dtype(param: ast.Param, spelling: Spelling) -> str:
    """A fn parameter's element type; an error at a parameter declared as a tensor."""
    if not isinstance(param.type, ast.ScalarType):
        raise error(
            param.span,
            f"fn parameter '{param.name}' has a tensor type",
            help=f"fn parameters are element types (`{spelling.param('a', 'f32')}`); "
            "pass loaded tiles",
        )
    return param.type.name


def _argument(
    lw: Statements, param: ast.Param, arg: ast.Expr, scope: Scope, fn: ast.Function
) -> ir.Expr:
    dtype = param_dtype(param, lw.ctx.spelling)
    got = lw.value(arg, scope)
    if isinstance(got, Literal):
        if not literal_fits(got, dtype):
            raise error(arg.span, f"a {got.describe()} cannot be passed as {dtype} '{param.name}'")
        return make_const(got, dtype, lw.ctx.spelling, arg.span)
    if got.type.dtype != dtype:
        raise error(
            arg.span,
            f"'{fn.name}' takes {dtype} for '{param.name}', got {shown(got.type)}",
            help=f"convert it: `{lw.ctx.spelling.call(dtype, describe(arg))}`",
        )
    return got


def _result(
    lw: Statements, fn: ast.Function, last: ast.Return | None, scope: Scope
) -> Value | None:
    if fn.result is None:
        if last is not None and last.value is not None:
            raise error(
                last.span,
                f"fn '{fn.name}' declares no result type but returns a value",
                help=f"declare it: `{lw.ctx.spelling.fn_header(fn.name, 'f32')}`",
            )
        return None
    if last is None or last.value is None:
        raise error(
            fn.span,
            f"fn '{fn.name}' must end with `return <value>` of type {fn.result.name}",
        )
    dtype = fn.result.name
    got = lw.value(last.value, scope)
    if isinstance(got, Literal):
        if not literal_fits(got, dtype):
            raise error(last.value.span, f"a {got.describe()} cannot be returned as {dtype}")
        return make_const(got, dtype, lw.ctx.spelling, last.value.span)
    if got.type.dtype != dtype:
        raise error(
            last.value.span,
            f"fn '{fn.name}' returns {dtype}, but this value is {got.type.dtype}",
            help=f"convert it: `{lw.ctx.spelling.call(dtype, describe(last.value))}`",
        )
    return got


def _called_from(
    diagnostics: Sequence[Diagnostic], fn: ast.Function, call: ast.Call
) -> list[Diagnostic]:
    """The same diagnostics, each with a note naming the call that inlined the fn."""
    note = Note(call.span, f"in this call of '{fn.name}'")
    return [dataclasses.replace(d, notes=(*d.notes, note)) for d in diagnostics]
