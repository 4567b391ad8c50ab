"""The state of lowering one kernel variant: fresh names, where statements go, fns, spelling.

Expressions may emit statements (an inlined ``fn`` body defines its parameters
and locals before the value is used), so the lowering keeps a stack of
statement lists and each block collects what it emits.

A ``var`` tile that is later assigned a partial tile (one that may have absent
lanes) must be partial from its definition on; the kernel is lowered again with
such variables in ``forced_partial`` until nothing changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

from phobos.compile.check.scope import Scope
from phobos.compile.check.spelling import Spelling
from phobos.compile.diagnostics import Diagnostic
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span
from phobos.compile.syntax import ast


class Context:
    def __init__(
        self,
        root: Scope,
        functions: dict[str, ast.Function],
        spelling: Spelling,
        forced_partial: frozenset[str] = frozenset(),
        reserved: frozenset[str] = frozenset(),
    ) -> None:
        self.root = root
        self.functions = functions
        # How help texts write code: the module's own spelling.
        self.spelling = spelling
        self.forced_partial = forced_partial
        self.wants_partial: set[str] = set()
        # Diagnostics of statements that failed; lowering goes on with the next one.
        self.errors: list[Diagnostic] = []
        self.fn_stack: list[str] = []
        # Blocks, expressions and inlined fn bodies open now: the lowering recurses on
        # each, so past MAX_NESTING it stops with an error (``ExprLowerer.value``).
        self.level = 0
        # Parameter and extent names: a variable never takes one, so back ends can
        # use all of them as identifiers side by side.
        self._used_names: set[str] = set(reserved)
        self._sinks: list[list[ir.Stmt]] = []

    def new_variable(self, name: str, type: ir.IRType, mutable: bool, span: Span) -> ir.Variable:
        """A variable with a name unique in the kernel (``x``, then ``x_1``, ``x_2``...)."""
        unique, n = name, 0
        while unique in self._used_names:
            n += 1
            unique = f"{name}_{n}"
        self._used_names.add(unique)
        if isinstance(type, ir.TileT) and unique in self.forced_partial:
            type = dataclasses.replace(type, partial=True)
        return ir.Variable(unique, type, mutable, span)

    def emit(self, stmt: ir.Stmt) -> None:
        self._sinks[-1].append(stmt)

    @contextmanager
    def collect(self) -> Iterator[list[ir.Stmt]]:
        """Gather the statements emitted inside the ``with`` block."""
        out: list[ir.Stmt] = []
        self._sinks.append(out)
        try:
            yield out
        finally:
            self._sinks.pop()
