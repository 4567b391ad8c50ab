"""Checking the fns that no kernel calls, so that their mistakes show before a call does.

A fn is checked where it is inlined, at the call's argument types.  Its scalar
parameter types fix only the element type: a call may pass a scalar or a tile of
any shape.  A fn that no kernel reaches (directly or through other fns) is checked
on its own three times, every parameter a scalar, then a [1] tile, then a [1, 1]
tile of its element type, and an error is reported only where all three meet it, at
the same place with the same message.  That keeps what is independent of the
caller's shapes (names, element types, results, recursion, the fn's own shapes) and
leaves what depends on them (a reduction of a parameter, say) to the call.
"""

from __future__ import annotations

from collections.abc import Mapping

from phobos.compile.check.consts import module_functions
from phobos.compile.check.context import Context
from phobos.compile.check.inline import lower_body, param_dtype
from phobos.compile.check.scope import PoisonedUse, Scope
from phobos.compile.check.spelling import Spelling
from phobos.compile.check.stmt import StmtLowerer
from phobos.compile.diagnostics import Diagnostic, PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span
from phobos.compile.syntax import ast

# The shapes every parameter takes in turn: a scalar, a vector, a matrix.  Extent 1
# broadcasts with any extent, so the fn's own tiles never clash with them.
SHAPES: tuple[tuple[int, ...], ...] = ((), (1,), (1, 1))


def check_uncalled(module: ast.Module, root: Scope) -> list[Diagnostic]:
    """The errors of the fns no kernel reaches that no caller's shapes could avoid."""
    functions = module_functions(module)
    spelling = Spelling.of(module)
    found: dict[tuple[Span, str], Diagnostic] = {}
    for fn in uncalled(module, functions):
        for diagnostic in _errors_for_every_shape(fn, root, functions, spelling):
            # A fn that calls another reports that one's errors with a note naming the call;
            # the one checked on its own reports them plainly, which is the clearer of the two.
            key = (diagnostic.span, diagnostic.message)
            if key not in found or len(diagnostic.notes) < len(found[key].notes):
                found[key] = diagnostic
    return sorted(found.values(), key=lambda d: (d.span.file, d.span.line, d.span.col))


def uncalled(module: ast.Module, functions: Mapping[str, ast.Function]) -> list[ast.Function]:
    """The module's fns that no kernel calls, directly or through other fns, in source order."""
    if not functions:
        return []
    reached: set[str] = set()
    pending = list(_calls(module.kernels))
    while pending:
        name = pending.pop()
        if name in functions and name not in reached:
            reached.add(name)
            pending += _calls(functions[name].body)
    return [fn for fn in functions.values() if fn.name not in reached]


def _calls(root: object) -> set[str]:
    """The names called anywhere under ``root`` (a syntax node or a tuple of them)."""
    found: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack += node
        elif hasattr(node, "__dataclass_fields__") and not isinstance(node, Span):
            if isinstance(node, ast.Call):
                found.add(node.func)
            stack += vars(node).values()
    return found


def _errors_for_every_shape(
    fn: ast.Function, root: Scope, functions: dict[str, ast.Function], spelling: Spelling
) -> list[Diagnostic]:
    first, *others = (_errors_at(fn, shape, root, functions, spelling) for shape in SHAPES)
    return [d for d in first if all(d in other for other in others)]


def _errors_at(
    fn: ast.Function,
    shape: tuple[int, ...],
    root: Scope,
    functions: dict[str, ast.Function],
    spelling: Spelling,
) -> list[Diagnostic]:
    """The errors of ``fn``'s body with every parameter of ``shape``."""
    ctx = Context(root, functions, spelling)
    lowerer = StmtLowerer(ctx)
    raised: tuple[Diagnostic, ...] = ()
    with ctx.collect():
        try:
            args = [_argument(ctx, param, shape) for param in fn.params]
            lower_body(lowerer, fn, args)
        except PhobosError as failure:
            raised = failure.diagnostics
        except PoisonedUse:
            pass
    return [*ctx.errors, *raised]


def _argument(ctx: Context, param: ast.Param, shape: tuple[int, ...]) -> ir.Expr:
    """A value of the parameter's element type and ``shape``, standing for any caller's."""
    dtype = param_dtype(param, ctx.spelling)
    type: ir.IRType = ir.TileT(dtype, shape) if shape else ir.ScalarT(dtype)
    return ir.Read(ctx.new_variable(param.name, type, False, param.span), type, param.span)
