"""Converting into an existing .py: replace the Phobos definitions, keep everything else.

The .ph file owns the module's Phobos program: its ``ph.const``s, ``@ph.func``s
and ``@ph.kernel``s.  Each one the .py already has is replaced where it stands
(with the comments just above it, which the front end reads as its own); new
ones go beside their neighbours in the .ph order; ones the .ph no longer
defines are removed, so the .py spells exactly the .ph program.  Imports, host
functions, ``if __name__ == "__main__":`` blocks and their comments stay as
they are.  If the .py has the definitions in another order than the .ph, they
all move to where the first of them stood, in the .ph order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from ph2py.names import LANG_ALIAS

_PHOBOS_DECORATORS = frozenset({"kernel", "func", "autotune"})


def future_import() -> cst.SimpleStatementLine:
    """``from __future__ import annotations``: the parameter types are never evaluated."""
    return cst.SimpleStatementLine(
        [cst.ImportFrom(cst.Name("__future__"), [cst.ImportAlias(cst.Name("annotations"))])]
    )


def lang_import() -> cst.SimpleStatementLine:
    """``import phobos.lang as ph``."""
    module = cst.Attribute(cst.Name("phobos"), cst.Name("lang"))
    alias = cst.ImportAlias(module, asname=cst.AsName(cst.Name(LANG_ALIAS)))
    return cst.SimpleStatementLine([cst.Import([alias])], leading_lines=[cst.EmptyLine()])


def merge(
    existing: cst.Module,
    definitions: Sequence[tuple[str, cst.BaseStatement]],
    footer: Sequence[cst.EmptyLine],
) -> tuple[cst.Module, bool]:
    """``existing`` with its Phobos definitions replaced by ``definitions`` (name, statement).

    Returns the module and whether ``footer`` (the .ph closing comments) was
    written: it is only where the last statement is a definition (or, for a
    program without definitions, an import), since the front end reads comments
    after host code as that code's own.
    """
    body = _with_imports(list(existing.body))
    prefixes = _lang_prefixes(body)
    owned = [_definition_name(stmt, prefixes) for stmt in body]
    new_names = [name for name, _ in definitions]
    kept = [name for name in owned if name is not None and name in new_names]
    in_order = kept == [name for name in new_names if name in kept]
    merged: list[cst.BaseStatement] = []
    if not any(name is not None for name in owned):
        at = _after_imports(body)
        merged = body[:at] + [stmt for _, stmt in definitions] + body[at:]
    elif in_order and kept:
        merged = _in_place(body, owned, definitions)
    else:
        first = next(i for i, name in enumerate(owned) if name is not None)
        merged = [stmt for i, stmt in enumerate(body) if owned[i] is None]
        merged[first:first] = [stmt for _, stmt in definitions]
    if definitions:
        owns_the_end = merged[-1] is definitions[-1][1]
    else:  # a program of comments only: they end a file of imports
        owns_the_end = _after_imports(merged) == len(merged)
    module = existing.with_changes(body=merged)
    if owns_the_end:
        return module.with_changes(footer=list(footer)), True
    return module, not footer


def _in_place(
    body: list[cst.BaseStatement],
    owned: list[str | None],
    definitions: Sequence[tuple[str, cst.BaseStatement]],
) -> list[cst.BaseStatement]:
    """Replace each kept definition where it stands; new ones go before the next kept one."""
    present = {name for name in owned if name is not None}
    pending: list[cst.BaseStatement] = []
    replacement: dict[str, list[cst.BaseStatement]] = {}
    for name, stmt in definitions:
        pending.append(stmt)
        if name in present:
            replacement[name] = pending
            pending = []
    merged: list[cst.BaseStatement] = []
    for stmt, name in zip(body, owned):
        if name is None:
            merged.append(stmt)
        elif name in replacement:
            merged.extend(replacement.pop(name))
            if not replacement:
                merged.extend(pending)
    return merged


def _with_imports(body: list[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """``body`` with the future import and ``import phobos.lang as ph`` added where missing."""
    if not any(_is_import(stmt, _is_future_annotations) for stmt in body):
        at = 1 if body and _is_docstring(body[0]) else 0
        body.insert(at, future_import())
    if not any(_is_import(stmt, _is_lang_as_ph) for stmt in body):
        body.insert(_after_imports(body), lang_import())
    return body


def _is_future_annotations(node: cst.BaseSmallStatement) -> bool:
    return (
        isinstance(node, cst.ImportFrom)
        and isinstance(node.module, cst.Name)
        and node.module.value == "__future__"
        and not isinstance(node.names, cst.ImportStar)
        and any(alias.evaluated_name == "annotations" for alias in node.names)
    )


def _is_lang_as_ph(node: cst.BaseSmallStatement) -> bool:
    return isinstance(node, cst.Import) and any(
        alias.evaluated_name == "phobos.lang" and alias.evaluated_alias == LANG_ALIAS
        for alias in node.names
    )


def _is_import(stmt: cst.BaseStatement, test: Callable[[cst.BaseSmallStatement], bool]) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(test(s) for s in stmt.body)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _after_imports(body: list[cst.BaseStatement]) -> int:
    """The index after the module's opening docstring and imports."""
    at = 0
    for index, stmt in enumerate(body):
        if _is_docstring(stmt) and index == 0:
            at = 1
        elif isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        ):
            at = index + 1
        else:
            break
    return at


def _lang_prefixes(body: list[cst.BaseStatement]) -> frozenset[tuple[str, ...]]:
    """The dotted names the module binds phobos.lang to (``("ph",)``, ``("phobos", "lang")``)."""
    prefixes: set[tuple[str, ...]] = set()
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for node in stmt.body:
            if isinstance(node, cst.Import):
                for alias in node.names:
                    if alias.evaluated_name == "phobos.lang":
                        asname = alias.evaluated_alias
                        prefixes.add((asname,) if asname else ("phobos", "lang"))
            elif (
                isinstance(node, cst.ImportFrom)
                and isinstance(node.module, cst.Name)
                and node.module.value == "phobos"
                and not node.relative
                and not isinstance(node.names, cst.ImportStar)
            ):
                for alias in node.names:
                    if alias.evaluated_name == "lang":
                        prefixes.add((alias.evaluated_alias or "lang",))
    return frozenset(prefixes)


def _definition_name(stmt: cst.BaseStatement, prefixes: frozenset[tuple[str, ...]]) -> str | None:
    """The name of a top-level ``ph.const``, ``@ph.func`` or ``@ph.kernel``; else None."""
    if isinstance(stmt, cst.FunctionDef):
        for decorator in stmt.decorators:
            target = decorator.decorator
            if isinstance(target, cst.Call):
                target = target.func
            path = _lang_path(target, prefixes)
            if path in _PHOBOS_DECORATORS:
                return stmt.name.value
        return None
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        node = stmt.body[0]
        if (
            isinstance(node, cst.AnnAssign)
            and isinstance(node.target, cst.Name)
            and _lang_path(node.annotation.annotation, prefixes) == "const"
        ):
            return node.target.value
    return None


def _lang_path(node: cst.BaseExpression, prefixes: frozenset[tuple[str, ...]]) -> str | None:
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    parts.reverse()
    for prefix in prefixes:
        if len(parts) > len(prefix) and tuple(parts[: len(prefix)]) == prefix:
            return ".".join(parts[len(prefix) :])
    return None
