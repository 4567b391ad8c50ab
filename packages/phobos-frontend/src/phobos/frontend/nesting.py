"""How deeply a kernel, fn or const nests in Python, checked before it is translated.

The translators recurse on Python's tree, so a definition nested deeper than
``MAX_NESTING`` levels is an error at its own line (docs/language.md, "Limits"),
found with an explicit stack.  Levels are counted as in ``.ph``
(``phobos.compile.syntax.nesting``): a def's body is level 1, each block inside a
block (an ``if``, ``elif``, ``else``, ``for`` or ``while`` body) one more, and each
expression one below the expression or block it stands in.  CPython parses deeper
programs (a sum of 495 terms, 490 unary minuses), which Phobos refuses here rather
than running out of stack later.  Host code is never translated and never counted.
"""

from __future__ import annotations

import ast

from phobos.compile.limits import MAX_NESTING
from phobos.compile.syntax.nesting import nesting_error
from phobos.frontend.source import SourceFile


def check_nesting_of(
    source: SourceFile, node: ast.AST, lang: str, limit: int = MAX_NESTING
) -> None:
    """Raise ``PhobosError`` at the first construct of ``node`` nested deeper than ``limit``.

    ``lang`` is the module's name for ``phobos.lang`` in help texts ("ph", or "" when it
    imports the names).
    """
    # (node, the level above it, the outermost expression it is part of, and its level)
    stack: list[tuple[ast.AST, int, ast.AST | None, int]] = [(node, 0, None, 0)]
    while stack:
        current, level, root, root_level = stack.pop()
        if isinstance(current, (ast.expr, ast.keyword)):
            level += 1
            if root is None:
                root, root_level = current, level
            if level > limit:
                deepest = root_level + _height(root) - 1
                let = f"x: {lang + '.' if lang else ''}let = ..."
                raise nesting_error(
                    source.span(root),
                    f"expression nested too deeply ({deepest} levels); the limit is {limit}",
                    f"bind inner parts to names first (`{let}`): each binding is a statement "
                    "of its own, which starts again at its block's level",
                )
            for child in ast.iter_child_nodes(current):
                stack.append((child, level, root, root_level))
            continue
        if isinstance(current, ast.stmt):
            for _, value in ast.iter_fields(current):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    if level + 1 > limit:
                        raise nesting_error(
                            source.span(current),
                            f"blocks nested too deeply (this one is at level {level + 1}); "
                            f"the limit is {limit}",
                            "nest fewer blocks: join conditions with `and`, or compute a "
                            "condition into a binding before the block",
                        )
                    stack += [(stmt, level + 1, None, 0) for stmt in value]
                else:
                    for child in value if isinstance(value, list) else (value,):
                        if isinstance(child, ast.AST):
                            stack.append((child, level, None, 0))
            continue
        for child in ast.iter_child_nodes(current):
            stack.append((child, level, root, root_level))


def _height(node: ast.AST) -> int:
    """How many expression levels ``node`` spans, itself included (iteratively)."""
    best = 0
    stack = [(node, 0)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, (ast.expr, ast.keyword)):
            level += 1
            best = max(best, level)
        stack += [(child, level) for child in ast.iter_child_nodes(current)]
    return best
