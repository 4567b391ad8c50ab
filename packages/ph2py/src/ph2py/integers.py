"""Which names and expressions of a definition are integers, to spell Phobos ``/`` well.

Python's ``/`` and ``//`` both spell Phobos ``/``.  On integers Phobos divides
to an integer, which Python writes ``//``; on floats it divides exactly, which
Python writes ``/``.  Without running the checker, ph2py calls an expression an
integer when it is built only from integer literals, integer casts, ``ctx``
coordinates and names known to be integers: extents, autotune names, integer
parameters and constants, loop variables, and locals bound to integers.
"""

from __future__ import annotations

from collections.abc import Iterable

from phobos.compile.syntax import ast

INTEGER_TYPES = frozenset({"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index"})
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"})


def is_integer(expr: ast.Expr, names: frozenset[str]) -> bool:
    """Whether ``expr`` is an integer, judged from its spelling and the integer ``names``."""
    if isinstance(expr, ast.IntLit):
        return expr.suffix is None or expr.suffix in INTEGER_TYPES
    if isinstance(expr, ast.Name):
        return expr.id in names
    if isinstance(expr, ast.Ctx):
        return True
    if isinstance(expr, ast.Unary):
        return expr.op in ("-", "~") and is_integer(expr.operand, names)
    if isinstance(expr, ast.Binary):
        return (
            expr.op in _ARITHMETIC
            and is_integer(expr.left, names)
            and is_integer(expr.right, names)
        )
    if isinstance(expr, ast.Call):
        return expr.func in INTEGER_TYPES
    return False


def module_integers(module: ast.Module) -> frozenset[str]:
    """The module's constants whose values are integers."""
    names: set[str] = set()
    for item in module.items:
        if isinstance(item, ast.Const) and is_integer(item.value, frozenset(names)):
            names.add(item.name)
    return frozenset(names)


def definition_integers(
    item: ast.Kernel | ast.Function, constants: frozenset[str]
) -> frozenset[str]:
    """The integer names visible in a kernel or function: ``constants`` and its own."""
    names = set(constants)
    if isinstance(item, ast.Kernel):
        names.update(tune.name for tune in item.autotune)
    for param in item.params:
        if isinstance(param.type, ast.TensorType):
            names.update(d.id for d in param.type.dims if isinstance(d, ast.Name))
        elif param.type.name in INTEGER_TYPES:
            names.add(param.name)
    _collect(item.body.body, names)
    return frozenset(names)


def _collect(stmts: Iterable[ast.Stmt], names: set[str]) -> None:
    for stmt in stmts:
        if isinstance(stmt, (ast.Let, ast.Var)) and is_integer(stmt.value, frozenset(names)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.For):
            names.add(stmt.var)
            _collect(stmt.body.body, names)
        elif isinstance(stmt, ast.While):
            _collect(stmt.body.body, names)
        elif isinstance(stmt, ast.If):
            _collect(stmt.then.body, names)
            if stmt.orelse is not None:
                _collect(stmt.orelse.body, names)
