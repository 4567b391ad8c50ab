"""Names in scope: what each name means, where it was declared, and no shadowing.

A name is declared once in the scopes that are open: a ``let`` in a loop body may
not reuse a name from outside it, though two sibling blocks may each declare
their own ``t``.  Lookups that fail suggest the closest name in scope.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Union

from phobos.compile.check.spelling import Spelling
from phobos.compile.check.types import Literal
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span

# What a name can stand for.
TENSOR = "tensor parameter"
SCALAR = "scalar parameter"
EXTENT = "extent"
CONST = "constant"
TUNE = "compile-time value"
LET = "let binding"
VAR = "var binding"
LOOP = "loop variable"
FN_PARAM = "fn parameter"
# A name whose declaration failed to check: its uses are skipped, not reported again.
POISONED = "name with an error"

BindingValue = Union[ir.TensorParam, ir.ScalarParam, ir.Variable, ir.Const, Literal, str]


class PoisonedUse(Exception):
    """A statement used a name whose declaration already had an error; it is skipped."""


@dataclass(frozen=True)
class Binding:
    kind: str
    value: BindingValue
    span: Span


class Scope:
    """One block's names, chained to the enclosing block's."""

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self._names: dict[str, Binding] = {}

    def child(self) -> Scope:
        return Scope(self)

    def find(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope._names:
                return scope._names[name]
            scope = scope.parent
        return None

    def lookup(self, name: str, span: Span, spelling: Spelling) -> Binding:
        found = self.find(name)
        if found is None:
            host = dict(spelling.host_constants)
            close = difflib.get_close_matches(name, self.visible_names(), n=1)
            if name in host:
                help = (
                    f"'{name}' is a Python variable of the module, which a kernel does not "
                    f"see; declare it `{spelling.const(name, host[name])}`"
                )
            elif close:
                help = f"did you mean '{close[0]}'?"
            else:
                help = f"declare it with {spelling.binding_words()} first"
            raise error(span, f"undefined name '{name}'", help=help)
        if found.kind == POISONED:
            raise PoisonedUse(name)
        return found

    def declare(self, name: str, binding: Binding) -> None:
        previous = self.find(name)
        if previous is not None:
            raise error(
                binding.span,
                f"'{name}' is already declared in this scope (as a {previous.kind} at "
                f"{previous.span})",
                help=f"pick a new name; Phobos has no shadowing (`{name}_2`, say)",
            )
        self._names[name] = binding

    def poison(self, name: str, binding: Binding) -> None:
        """Declare ``name`` (if it is free) as one whose declaration failed."""
        if self.find(name) is None:
            self._names[name] = binding

    def visible_names(self) -> list[str]:
        names: list[str] = []
        scope: Scope | None = self
        while scope is not None:
            names += scope._names
            scope = scope.parent
        return names
