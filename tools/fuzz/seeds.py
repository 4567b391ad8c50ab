"""The seeds: every Phobos program the repository spells, in ``.ph`` and in Python.

``.ph`` files (examples, docs, test data), Python files that import ``phobos.lang``
(examples, tutorials, docs, tests), and the string constants of test modules that
hold a program in either spelling (tests write many kernels as ``SOURCE = \"\"\"...\"\"\"``).
Seeds are read in a fixed order, so a fuzzer seed names the same inputs as long as
the repository's programs do not change.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PH_GLOBS = ("examples/*.ph", "docs/examples/*.ph", "packages/*/tests/data/**/*.ph")
PY_GLOBS = (
    "examples/*.py",
    "docs/examples/*.py",
    "docs/tutorials/*.py",
    "tests/**/*.py",
    "packages/*/tests/**/*.py",
)
# Larger seeds make slower inputs without reaching more of the compiler.
MAX_SEED_BYTES = 40_000


@dataclass(frozen=True)
class Seed:
    kind: str  # "ph" or "py"
    name: str  # where it came from
    text: str


def load_seeds(root: Path = ROOT) -> list[Seed]:
    """Every seed, deduplicated by text, in a fixed order."""
    found: list[Seed] = []
    for pattern in PH_GLOBS:
        for path in sorted(root.glob(pattern)):
            found.append(Seed("ph", _rel(path, root), path.read_text(encoding="utf-8")))
    for pattern in PY_GLOBS:
        for path in sorted(root.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            if "phobos.lang" in text or "import phobos" in text:
                found.append(Seed("py", _rel(path, root), text))
            found += _string_seeds(path, root, text)
    unique: dict[str, Seed] = {}
    for seed in found:
        if len(seed.text.encode("utf-8")) <= MAX_SEED_BYTES:
            unique.setdefault(seed.kind + seed.text, seed)
    return list(unique.values())


def seeds_digest(seeds: list[Seed]) -> str:
    """A short digest of the seed set (printed with the figures, so runs can be compared)."""
    h = hashlib.sha256()
    for seed in seeds:
        h.update(seed.kind.encode() + b"\0" + seed.text.encode("utf-8") + b"\0")
    return h.hexdigest()[:12]


def _string_seeds(path: Path, root: Path, text: str) -> list[Seed]:
    """Programs written as string constants in a test module."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out: list[Seed] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        value = node.value
        where = f"{_rel(path, root)}:{node.lineno}"
        if "phobos.lang" in value and "def " in value:
            out.append(Seed("py", where, value))
        elif ("kernel " in value or "fn " in value) and "{" in value and "def " not in value:
            out.append(Seed("ph", where, value))
    return out


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()
