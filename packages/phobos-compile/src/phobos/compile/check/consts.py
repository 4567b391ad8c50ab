"""Module constants: each ``const`` folded to a compile-time number, in order.

A const's value may use earlier consts; it must fold to a number (an untyped
literal, or a typed constant such as ``4i64``).  The result is the root scope
every kernel and fn sees.
"""

from __future__ import annotations

from phobos.compile.check import scope as names
from phobos.compile.check.context import Context
from phobos.compile.check.scope import Binding, Scope
from phobos.compile.check.spelling import Spelling
from phobos.compile.check.stmt import StmtLowerer
from phobos.compile.check.types import Literal
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast


def module_functions(module: ast.Module) -> dict[str, ast.Function]:
    functions: dict[str, ast.Function] = {}
    for item in module.items:
        if isinstance(item, ast.Function):
            if item.name in functions:
                raise error(item.span, f"fn '{item.name}' is defined twice", help="rename one")
            functions[item.name] = item
    return functions


def module_scope(module: ast.Module) -> Scope:
    """The module's constants, folded; an error at the first that is not compile-time."""
    root = Scope()
    lowerer = StmtLowerer(Context(root, module_functions(module), Spelling.of(module)))
    for item in module.items:
        if not isinstance(item, ast.Const):
            continue
        with lowerer.ctx.collect() as emitted:
            value = lowerer.value(item.value, root)
        if emitted or not isinstance(value, (Literal, ir.Const)):
            raise error(
                item.value.span,
                f"const '{item.name}' must be a compile-time number",
                help="use literals, other consts and arithmetic on them",
            )
        root.declare(item.name, Binding(names.CONST, value, item.span))
    return root
