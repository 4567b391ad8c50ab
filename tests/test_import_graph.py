"""The import graph of the project's sources, from an AST scan of every import (at module level,
under ``TYPE_CHECKING`` and inside functions alike).

- No cycle between the modules of any package (``phobos.lang``, ``phobos.compile`` and the
  others), and ``phobos.lang`` imports at module level only (no import inside a function to
  dodge a cycle).
- No package imports another it does not depend on: a package may import only the packages its
  ``pyproject.toml`` lists, directly or through them (``phobos-launch`` nothing, ``phobos-autotune``
  launch and cache, ``phobos.lang`` everything), so nothing lower imports anything higher.
- ``phobos.lang`` and ``phobos.autotune`` use other packages through their public names only: a
  name imported from another package is in its ``__all__``, and so is every attribute read off a
  package imported whole (``import phobos.compile as compiler``; ``compiler.lower``).
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]

# Imports a package makes that its pyproject.toml does not declare, each with its reason.
OPTIONAL = {
    # cached.py: the kernel cache is an optional companion, imported only when asked for.
    "phobos-compile": {"phobos-cache"},
}


def _distributions() -> dict[str, tuple[Path, set[str]]]:
    """Each distribution's source folder and the phobos distributions it declares."""
    found = {}
    for project in [ROOT, *sorted((ROOT / "packages").iterdir())]:
        path = project / "pyproject.toml"
        if not path.exists():
            continue
        meta = tomllib.loads(path.read_text())["project"]
        names = {re.split(r"[<>=;\[ ]", d, maxsplit=1)[0] for d in meta.get("dependencies", ())}
        found[meta["name"]] = (
            project / "src",
            {n for n in names if n.startswith(("phobos", "ph2py"))},
        )
    return found


DISTRIBUTIONS = _distributions()


def _modules() -> dict[str, tuple[str, Path]]:
    """Every module of the project's sources: its dotted name → (distribution, file)."""
    modules = {}
    for dist, (src, _) in DISTRIBUTIONS.items():
        for path in sorted(src.rglob("*.py")):
            parts = path.relative_to(src).with_suffix("").parts
            if dist == "phobos" and parts[:2] != ("phobos", "lang"):
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = (dist, path)
    return modules


MODULES = _modules()


def _depends(dist: str) -> set[str]:
    """The distributions ``dist`` may import: itself and what it declares, transitively."""
    seen = {dist, *OPTIONAL.get(dist, ())}
    todo = [dist]
    while todo:
        for other in DISTRIBUTIONS[todo.pop()][1] - seen:
            seen.add(other)
            todo.append(other)
    return seen


class Import:
    """One imported module (resolved to a project module where it is one) and the names taken."""

    def __init__(self, node: ast.AST, target: str, names: tuple[str, ...], in_function: bool):
        self.line = node.lineno
        self.target = target
        self.names = names
        self.in_function = in_function


def _imports(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST, in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(child, alias.name, (), in_function)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    whole = f"{base}.{alias.name}"
                    if whole in MODULES:  # ``from phobos.lang import tuning``: the submodule
                        yield Import(child, whole, (), in_function)
                    else:
                        yield Import(child, base, (alias.name,), in_function)
            yield from visit(child, inside)

    yield from visit(tree, False)


def _owner(target: str) -> str | None:
    """The project module ``target`` is, or lies in (``phobos.compile.syntax.ast``)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


GRAPH = {m: list(_imports(m, path)) for m, (_, path) in MODULES.items()}


def _cycle(nodes: set[str]) -> list[str] | None:
    """A cycle among ``nodes`` (as the list of modules around it), or None."""
    edges = {
        m: sorted({o for i in GRAPH[m] if (o := _owner(i.target)) in nodes and o != m})
        for m in nodes
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for o in edges[m]:
            if state.get(o) == 1:
                return [*stack[stack.index(o) :], o]
            if o not in state and (found := visit(o)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(nodes):
        if m not in state and (found := visit(m)):
            return found
    return None


PACKAGES = [
    "phobos.lang",
    "phobos.compile",
    "phobos.frontend",
    "phobos.launch",
    "phobos.cache",
    "phobos.autotune",
    "ph2py",
]


def test_the_scan_sees_the_packages():
    assert set(PACKAGES) <= set(MODULES)
    assert DISTRIBUTIONS["phobos-launch"][1] == set()
    assert DISTRIBUTIONS["phobos-autotune"][1] == {"phobos-launch", "phobos-cache"}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_cycle_between_the_modules_of(package):
    cycle = _cycle({m for m in MODULES if m.startswith(package + ".")})
    assert cycle is None, f"{package} imports in a circle: " + " -> ".join(cycle or ())


def test_phobos_lang_imports_at_module_level_only():
    inside = [
        f"{m}:{i.line} imports {i.target}"
        for m in MODULES
        if m.startswith("phobos.lang")
        for i in GRAPH[m]
        if i.in_function
    ]
    assert inside == []


def test_no_package_imports_one_it_does_not_depend_on():
    wrong = []
    for module, imports in GRAPH.items():
        dist = MODULES[module][0]
        allowed = _depends(dist)
        for i in imports:
            owner = _owner(i.target)
            if owner is not None and MODULES[owner][0] not in allowed:
                wrong.append(f"{module}:{i.line} ({dist}) imports {i.target} ({MODULES[owner][0]})")
    assert wrong == []


def _public(package: str) -> set[str]:
    return set(importlib.import_module(package).__all__)


@pytest.mark.parametrize("consumer", ["phobos.lang", "phobos.autotune"])
def test_other_packages_are_used_through_their_public_names(consumer):
    tops = {m for m in MODULES if m == "ph2py" or m.count(".") == 1}
    wrong = []
    for module in (m for m in MODULES if m == consumer or m.startswith(consumer + ".")):
        path = MODULES[module][1]
        aliases = {}
        for i in GRAPH[module]:
            owner = _owner(i.target)
            if owner is None or owner == consumer or owner.startswith(consumer + "."):
                continue
            if owner not in tops:
                wrong.append(f"{module}:{i.line} imports {i.target}, not a package's public names")
                continue
            missing = [n for n in i.names if n not in _public(owner)]
            wrong += [
                f"{module}:{i.line} imports {n} from {owner}, not in its __all__" for n in missing
            ]
            if not i.names:
                aliases.update({a.asname or a.name: owner for a in _aliases(path, i.line)})
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr not in _public(aliases[node.value.id])
            ):
                wrong.append(f"{module}:{node.lineno} uses {node.value.id}.{node.attr}, not public")
    assert wrong == []


def _aliases(path: Path, line: int) -> list[ast.alias]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and node.lineno == line:
            return list(node.names)
    return []
