"""The names a module binds ``phobos.lang`` and its names to; what ``ph.<path>`` a node spells.

The module may write ``import phobos.lang as ph``, ``from phobos import lang as ph``
or ``import phobos.lang`` (then ``phobos.lang.kernel``), and may import the names
themselves: ``from phobos.lang import exp`` (then ``exp(t)``), ``from phobos.lang
import exp as e``.  Only top-level imports count.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from phobos.compile.diagnostics import PhobosError
from phobos.frontend.source import SourceFile

LANG_MODULE = ("phobos", "lang")

# What ``from phobos.lang import`` may name: ``phobos.lang.__all__`` and its modules
# (tests/test_imports.py checks that the two agree).
LANG_NAMES = frozenset(
    {
        *("Kernel", "OutsideKernelError", "PhobosError"),
        *("kernel", "func", "autotune", "const", "let", "var", "tensor", "zeros", "ctx", "inf"),
        *("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"),
        *("f16", "bf16", "f32", "f64", "index"),
        *("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "maximum", "minimum", "where"),
        *("expm1", "log1p", "tanh", "sigmoid", "erf", "sin", "cos", "pow", "floor", "ceil"),
        *("round", "trunc", "sign", "clamp", "fma", "isnan", "isinf", "isfinite"),
        *("popcount", "umulhi", "rand", "randn", "randint"),
        *("sum", "prod", "max", "min", "any", "all", "xor_sum", "argmax", "argmin"),
        *("dot", "trans", "arange", "fill", "trace"),
        *("atomic_add", "atomic_max", "atomic_xchg", "atomic_cas"),
        # Its modules, which host code may import too.
        *("definition", "dispatch", "errors", "names", "source", "tuning", "variant"),
    }
)


@dataclass(frozen=True)
class LangAliases:
    """The dotted prefixes (``("ph",)``, ``("phobos", "lang")``) that name ``phobos.lang``,
    and the local names of what the module imports from it (``{"e": "exp"}``)."""

    prefixes: tuple[tuple[str, ...], ...]
    names: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def of_module(cls, source: SourceFile, module: ast.Module) -> LangAliases:
        """The module's aliases; an error at an import of a name ``phobos.lang`` does not have."""
        prefixes: list[tuple[str, ...]] = []
        names: dict[str, str] = {}
        for stmt in module.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if tuple(alias.name.split(".")) == LANG_MODULE:
                        prefixes.append((alias.asname,) if alias.asname else LANG_MODULE)
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0:
                if stmt.module == "phobos":
                    for alias in stmt.names:
                        if alias.name == "lang":
                            prefixes.append((alias.asname or "lang",))
                elif stmt.module == ".".join(LANG_MODULE):
                    for alias in stmt.names:
                        names[alias.asname or alias.name] = _lang_name(source, alias)
        return cls(tuple(prefixes), names)

    def with_imported(self, imported: LangAliases) -> LangAliases:
        """These aliases and ``imported``'s, which the text did not spell (a notebook cell's
        earlier cells imported them); the text's own come first."""
        prefixes = tuple(dict.fromkeys((*self.prefixes, *imported.prefixes)))
        return LangAliases(prefixes, {**imported.names, **self.names})

    @property
    def python_alias(self) -> str:
        """How help texts name ``phobos.lang``: the module's alias, or "" for imported names."""
        return ".".join(self.prefixes[0]) if self.prefixes else ""

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
        if parts[0] in self.names:
            return ".".join((self.names[parts[0]], *parts[1:]))
        for prefix in self.prefixes:
            if len(parts) > len(prefix) and tuple(parts[: len(prefix)]) == prefix:
                return ".".join(parts[len(prefix) :])
        return None

    def is_lang(self, node: ast.AST, path: str) -> bool:
        return self.path(node) == path


def _lang_name(source: SourceFile, alias: ast.alias) -> str:
    """The ``phobos.lang`` name an import names; an error at it when there is none."""
    if alias.name == "*":
        raise source.reject(
            alias,
            "`from phobos.lang import *` hides which names are Phobos's",
            help="import phobos.lang as ph, or name each import",
        )
    if alias.name in LANG_NAMES:
        return alias.name
    raise _unknown_name(source, alias)


def _unknown_name(source: SourceFile, alias: ast.alias) -> PhobosError:
    close = difflib.get_close_matches(alias.name, sorted(LANG_NAMES), n=3)
    if close:
        quoted = [f"'{name}'" for name in close]
        listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        help = f"did you mean {listed}?"
    else:
        help = "phobos.lang has the names of the spelling table in docs/reference.md"
    return source.reject(alias, f"phobos.lang has no name '{alias.name}'", help=help)
