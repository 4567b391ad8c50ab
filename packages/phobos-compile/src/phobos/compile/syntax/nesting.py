"""How deeply a program nests, checked without recursion (docs/language.md, "Limits").

Every pass over a program recurses on its blocks and expressions, so a program
nested deeper than ``MAX_NESTING`` levels is an error at its own line, before any
pass can run out of Python's stack.  Levels count blocks and expressions
together: a kernel's or fn's body is level 1, each block inside a block (a
``for``, ``if``, ``else`` or ``while`` body; an ``else if`` is a block in the
``else``) one more; a statement's expression is one level below its block, and
each operand, argument, index item or keyword argument one below the expression
it belongs to.  ``a + b + c`` is ``(a + b) + c``: a sum of n terms nests n levels.

``check_nesting`` walks a tree with an explicit stack; the parser counts its own
recursion (parentheses included) as it goes, and the checker counts again after
fns are inlined (``phobos.compile.ir.nesting``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from phobos.compile.diagnostics import PhobosError, error
from phobos.compile.limits import MAX_NESTING, NESTING
from phobos.compile.span import Span
from phobos.compile.syntax import ast

# Nodes that are a level of their own: blocks, expressions and their parts.
_LEVELS = (
    ast.Block,
    ast.Name,
    ast.IntLit,
    ast.FloatLit,
    ast.BoolLit,
    ast.StrLit,
    ast.Ctx,
    ast.Unary,
    ast.Binary,
    ast.Call,
    ast.TileCtor,
    ast.Subscript,
    ast.Keyword,
    ast.Point,
    ast.Window,
    ast.FullAxis,
    ast.NewAxis,
)
_EXPRESSIONS = tuple(c for c in _LEVELS if c is not ast.Block)
_CHILDREN: dict[type, tuple[str, ...]] = {}


def check_nesting(module: ast.Module, limit: int = MAX_NESTING) -> None:
    """Raise ``PhobosError`` at the first construct nested deeper than ``limit`` levels."""
    for item in module.items:
        _check_item(item, module, limit)


def _check_item(item: ast.Item, module: ast.Module, limit: int) -> None:
    # (node, the level above it, the statement or item that holds it, the outermost
    # expression it is part of and that expression's level)
    stack: list[tuple[object, int, object, object, int]] = [(item, 0, item, None, 0)]
    while stack:
        node, level, owner, root, root_level = stack.pop()
        if isinstance(node, _LEVELS):
            level += 1
            if root is None and isinstance(node, _EXPRESSIONS):
                root, root_level = node, level
            if level > limit:
                raise _too_deep(level, owner, root, root_level, module, limit)
        else:
            owner = node
        for child in _children(node):
            stack.append((child, level, owner, root, root_level))


def _children(node: object) -> Iterator[object]:
    names = _CHILDREN.get(type(node))
    if names is None:
        names = _CHILDREN[type(node)] = tuple(
            f.name
            for f in dataclasses.fields(node)  # type: ignore[arg-type]
            if f.name not in ("span", "leading", "trailing", "end_comments")
        )
    for name in names:
        value = getattr(node, name)
        if isinstance(value, tuple):
            for v in value:
                if dataclasses.is_dataclass(v):
                    yield v
        elif dataclasses.is_dataclass(value) and not isinstance(value, Span):
            yield value


def _too_deep(
    level: int, owner: object, root: object, root_level: int, module: ast.Module, limit: int
) -> PhobosError:
    if root is None:  # a block
        return nesting_error(
            getattr(owner, "span", module.span),
            f"blocks nested too deeply (this one is at level {level}); the limit is {limit}",
            "nest fewer blocks: join conditions with "
            + ("`and`" if module.python_alias is not None else "`&&`")
            + ", or compute a condition into a binding before the block",
        )
    deepest = root_level + _height(root) - 1
    return nesting_error(
        root.span,  # type: ignore[attr-defined]
        f"expression nested too deeply ({deepest} levels); the limit is {limit}",
        f"bind inner parts to names first ({_let(module)}): each binding is a statement "
        "of its own, which starts again at its block's level",
    )


def _height(node: object) -> int:
    """How many levels ``node`` spans, itself included (iteratively)."""
    best = 0
    stack = [(node, 0)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, _LEVELS):
            level += 1
            best = max(best, level)
        for child in _children(current):
            stack.append((child, level))
    return best


def _let(module: ast.Module) -> str:
    alias = module.python_alias
    if alias is None:
        return "`let x = ...`"
    return f"`x: {alias + '.' if alias else ''}let = ...`"


def nesting_error(span: Span, message: str, help: str) -> PhobosError:
    """A nesting error: an error about the ``nesting`` limit."""
    return error(span, message, help=help, limit=NESTING)
