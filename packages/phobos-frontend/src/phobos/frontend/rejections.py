"""Python constructs that spell nothing in Phobos, and what to write instead.

Each entry is ``(what it is, what to write)``; the translators raise the error at
the construct's own line and column.
"""

from __future__ import annotations

import ast

from phobos.compile.diagnostics import PhobosError
from phobos.frontend.source import SourceFile

_COMPREHENSION = "build tiles with ph.zeros, ph.arange and elementwise operations instead"
_NO_COLLECTIONS = "a kernel works on tensors, tiles and scalars; Phobos has no Python containers"

REJECTED: dict[type[ast.AST], tuple[str, str]] = {
    ast.ListComp: ("a list comprehension", _COMPREHENSION),
    ast.SetComp: ("a set comprehension", _COMPREHENSION),
    ast.DictComp: ("a dict comprehension", _COMPREHENSION),
    ast.GeneratorExp: ("a generator expression", _COMPREHENSION),
    ast.Lambda: ("a lambda", "define a @ph.func at module level and call it by name"),
    ast.IfExp: ("a conditional expression", "write ph.where(c, a, b), or an if statement"),
    ast.NamedExpr: ("an assignment expression (:=)", "bind the value first: x: ph.let = e"),
    ast.Starred: ("a starred expression", "write each argument or item out"),
    ast.JoinedStr: ("an f-string", "Phobos has no strings; use a # comment for text"),
    ast.List: ("a list", _NO_COLLECTIONS),
    ast.Tuple: ("a tuple", _NO_COLLECTIONS),
    ast.Dict: ("a dict", _NO_COLLECTIONS),
    ast.Set: ("a set", _NO_COLLECTIONS),
    ast.Await: ("await", "kernels are not coroutines; remove it"),
    ast.Yield: ("yield", "kernels are not generators; store results into an output tensor"),
    ast.YieldFrom: (
        "yield from",
        "kernels are not generators; store results into an output tensor",
    ),
    ast.Try: ("try", "a kernel cannot raise or catch; remove the try statement"),
    ast.Raise: ("raise", "a kernel cannot raise; check inputs on the host before the launch"),
    ast.With: ("a with statement", "remove it; a kernel has no context managers"),
    ast.AsyncWith: ("async with", "remove it; a kernel has no context managers"),
    ast.AsyncFor: ("async for", "write for k in range(a, b, step)"),
    ast.FunctionDef: ("a nested def", "define a @ph.func at module level and call it by name"),
    ast.AsyncFunctionDef: ("a nested def", "define a @ph.func at module level and call it by name"),
    ast.ClassDef: ("a class", "Phobos has no classes; use tensors, tiles and scalars"),
    ast.Global: ("global", "use a module-level C: ph.const = value for a shared constant"),
    ast.Nonlocal: ("nonlocal", "Phobos has no closures; pass the value as a parameter"),
    ast.Delete: ("del", "a binding lives until its block ends; remove the del"),
    ast.Import: ("an import", "import phobos.lang at the top of the module, outside kernels"),
    ast.ImportFrom: ("an import", "import phobos.lang at the top of the module, outside kernels"),
    ast.Break: ("break", "break is not in the language yet; loop with while and a condition"),
    ast.Continue: ("continue", "continue is not in the language yet; guard the rest with an if"),
    ast.Match: ("a match statement", "write if/elif/else"),
}


def attribute_help(attr: str, value: str, lang: str) -> str:
    """What to write for ``value.attr``, a tensor or tile attribute (NumPy's, torch's,
    Triton's); ``lang`` is how the module names ``phobos.lang`` (``"ph."`` or ``""``)."""
    if attr == "T":
        return f"transpose a 2-D tile with {lang}trans({value})"
    if attr in ("to", "astype"):
        return f"cast with the type's name, as in {lang}f16({value})"
    if attr in ("dtype", "element_ty"):
        return "the element type is the one in the parameter's annotation"
    if attr in ("shape", "numel", "size", "ndim"):
        return f"shapes are the names in the parameter types (N in {lang}tensor[{lang}f32][N])"
    return "Phobos values have no attributes; shapes are the names in the parameter types"


def rejected(source: SourceFile, node: ast.AST) -> PhobosError:
    """The error for ``node``, a construct that has no Phobos meaning where it stands."""
    what, help = REJECTED.get(type(node), (_describe(node), None))
    return source.reject(node, f"{what} has no Phobos meaning", help=help)


def _describe(node: ast.AST) -> str:
    snippet = ast.unparse(node)
    if len(snippet) > 40:
        snippet = snippet[:37] + "..."
    return f"`{snippet}`"
