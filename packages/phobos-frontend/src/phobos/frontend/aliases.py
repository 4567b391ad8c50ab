"""Which names the module binds ``phobos.lang`` to, and what ``ph.<path>`` a node spells.

The module may write ``import phobos.lang as ph``, ``from phobos import lang as ph``
or ``import phobos.lang`` (then ``phobos.lang.kernel``).  Only top-level imports count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

LANG_MODULE = ("phobos", "lang")


@dataclass(frozen=True)
class LangAliases:
    """The dotted prefixes (``("ph",)``, ``("phobos", "lang")``) that name ``phobos.lang``."""

    prefixes: tuple[tuple[str, ...], ...]

    @classmethod
    def of_module(cls, module: ast.Module) -> LangAliases:
        prefixes: list[tuple[str, ...]] = []
        for stmt in module.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if tuple(alias.name.split(".")) == LANG_MODULE:
                        prefixes.append((alias.asname,) if alias.asname else LANG_MODULE)
            elif isinstance(stmt, ast.ImportFrom) and stmt.module == "phobos" and stmt.level == 0:
                for alias in stmt.names:
                    if alias.name == "lang":
                        prefixes.append((alias.asname or "lang",))
        return cls(tuple(prefixes))

    def path(self, node: ast.AST) -> str | None:
        """``"ctx.block.x"`` for ``ph.ctx.block.x``; None when ``node`` is not a ``ph.`` name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        parts.reverse()
        for prefix in self.prefixes:
            if len(parts) > len(prefix) and tuple(parts[: len(prefix)]) == prefix:
                return ".".join(parts[len(prefix) :])
        return None

    def is_lang(self, node: ast.AST, path: str) -> bool:
        return self.path(node) == path
