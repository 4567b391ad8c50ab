"""What the builtins, atomics and fn inlining use of the lowerer that calls them.

``ExprLowerer`` (check.expr) and ``StmtLowerer`` (check.stmt) import those modules, so the
modules name the lowerer through these protocols and never import it: the imports point one way
(tests/test_import_graph.py fails on a cycle).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from phobos.compile.check.context import Context
    from phobos.compile.check.scope import Scope
    from phobos.compile.check.types import Value
    from phobos.compile.ir import nodes as ir
    from phobos.compile.span import Span
    from phobos.compile.syntax import ast


class Expressions(Protocol):
    """What a builtin uses of ``ExprLowerer``."""

    ctx: Context

    def value(self, expr: ast.Expr, scope: Scope) -> Value: ...

    def materialise(self, value: Value) -> ir.Expr: ...

    def compile_time_int(self, expr: ast.Expr, scope: Scope, what: str) -> int: ...

    def tile_extent(self, expr: ast.Expr, scope: Scope) -> int: ...

    def unify(self, exprs: list[ast.Expr], values: list[Value], span: Span) -> list[ir.Expr]: ...

    def elementwise(
        self, exprs: list[ast.Expr], values: list[Value], span: Span
    ) -> list[ir.Expr]: ...


class Statements(Expressions, Protocol):
    """What an atomic and an inlined fn use of ``StmtLowerer``."""

    in_fn: bool

    def too_deep(self, span: Span) -> Exception: ...

    def statement(self, stmt: ast.Stmt, scope: Scope) -> None: ...

    def window_update(
        self, target: ast.Subscript, value_expr: ast.Expr, span: Span, scope: Scope
    ) -> tuple[ir.TensorParam, tuple[ir.TensorIndex, ...], ir.Expr]: ...

    def element_value(self, tensor: ir.TensorParam, expr: ast.Expr, scope: Scope) -> ir.Expr: ...
