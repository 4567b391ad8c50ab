"""Every node of a kernel variant with its nesting level, found without recursion.

Levels are counted as in the syntax (``phobos.compile.syntax.nesting``): the
kernel body is level 1, each loop or branch body one more, a statement's
expression one below its block and each operand or index one below its
expression.  The IR of a variant can nest deeper than its source (a fn's result
stands where it is called; casts and broadcasts become nodes), so the checker
checks the IR too, and the passes that recurse on it (the interpreter, the IR
printer, the code generator) never meet more than ``MAX_NESTING`` levels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.limits import MAX_NESTING
from phobos.compile.span import NO_SPAN, Span
from phobos.compile.syntax.nesting import nesting_error

# Fields that hold no nodes to visit (a Read's variable, a Load's tensor, types).
_NOT_NODES = frozenset({"type", "span", "var", "tensor", "param", "result", "name", "message"})
_FIELDS: dict[type, tuple[str, ...]] = {}
_STATEMENTS = tuple(ir.Stmt.__args__)  # type: ignore[attr-defined]


def walk(body: tuple[ir.Stmt, ...]) -> Iterator[tuple[object, int]]:
    """Each statement, expression and tensor index of ``body`` (a kernel's), with its level."""
    stack: list[tuple[object, int]] = [(stmt, 1) for stmt in reversed(body)]
    while stack:
        node, level = stack.pop()
        statement = isinstance(node, _STATEMENTS)
        if not statement:
            level += 1
        yield node, level
        children: list[tuple[object, int]] = []
        for name in _fields(node):
            value = getattr(node, name)
            if isinstance(value, tuple):
                if value and isinstance(value[0], _STATEMENTS):
                    children += [(s, level + 1) for s in value]  # a block
                else:
                    children += [(v, level) for v in value if dataclasses.is_dataclass(v)]
            elif dataclasses.is_dataclass(value):
                children.append((value, level))
        stack += reversed(children)


def check_ir_nesting(kernel: ir.Kernel, limit: int = MAX_NESTING) -> None:
    """Raise ``PhobosError`` at the first node of ``kernel`` nested deeper than ``limit``."""
    error = nesting_error_of(kernel, limit)
    if error is not None:
        raise error


def nesting_error_of(kernel: ir.Kernel, limit: int = MAX_NESTING) -> PhobosError | None:
    """The error for the first node nested deeper than ``limit``, or None."""
    where: Span = kernel.span
    for node, level in walk(kernel.body):
        span = getattr(node, "span", NO_SPAN)
        if span != NO_SPAN and isinstance(node, _STATEMENTS):
            where = span
        if level > limit:
            return nesting_error(
                where,
                f"nested too deeply once fns are inlined and conversions made explicit "
                f"(level {level} in the IR); the limit is {limit}",
                "bind inner parts of long expressions to names first, and nest fewer blocks",
            )
    return None


def _fields(node: object) -> tuple[str, ...]:
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(
            f.name
            for f in dataclasses.fields(node)  # type: ignore[arg-type]
            if f.name not in _NOT_NODES
        )
    return names
