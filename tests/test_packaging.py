"""Packaging hygiene: names, one version, LICENSE and py.typed everywhere, the namespace guard."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]

# distribution name -> the folder its pyproject.toml is in, and the import package it ships
PACKAGES = {
    "phobos-lang": (ROOT, "src/phobos/lang"),
    "phobos-compile": (ROOT / "packages/phobos-compile", "src/phobos/compile"),
    "phobos-frontend": (ROOT / "packages/phobos-frontend", "src/phobos/frontend"),
    "phobos-launch": (ROOT / "packages/phobos-launch", "src/phobos/launch"),
    "phobos-cache": (ROOT / "packages/phobos-cache", "src/phobos/cache"),
    "phobos-autotune": (ROOT / "packages/phobos-autotune", "src/phobos/autotune"),
    "ph2py": (ROOT / "packages/ph2py", "src/ph2py"),
}
NAMESPACED = [name for name, (_, pkg) in PACKAGES.items() if "/phobos/" in pkg]


def _project(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_package_folder_is_listed():
    folders = {p.parent for p in (ROOT / "packages").glob("*/pyproject.toml")} | {ROOT}
    assert folders == {folder for folder, _ in PACKAGES.values()}


@pytest.mark.parametrize("name", PACKAGES)
def test_metadata(name):
    folder, package = PACKAGES[name]
    project = _project(folder)["project"]
    assert project["name"] == name
    assert name != "phobos"  # PyPI's 'phobos' is another project's
    assert project["dynamic"] == ["version"] and "version" not in project
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    assert "Typing :: Typed" in project["classifiers"]
    assert any(c.startswith("Programming Language :: Python :: 3.") for c in project["classifiers"])
    version = _project(folder)["tool"]["hatch"]["version"]
    assert (folder / version["path"]).resolve() == ROOT / "VERSION"
    assert (folder / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert (folder / package / "py.typed").is_file()


def test_one_version():
    version = (ROOT / "VERSION").read_text(encoding="utf-8").strip()
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]\d+|rc\d+)?(\.dev\d+)?", version)
    assert "Apache License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    # No file writes the version by hand.
    for folder, _ in PACKAGES.values():
        assert not re.search(r"^version\s*=", (folder / "pyproject.toml").read_text(), re.M)


def test_front_end_and_ph2py_need_neither_numpy_nor_the_back_end():
    deps = {
        name: _project(folder)["project"].get("dependencies", [])
        for name, (folder, _) in PACKAGES.items()
    }
    assert deps["phobos-compile"] == []
    for name in ("phobos-frontend", "ph2py"):
        assert not any(d.startswith("numpy") or "[" in d for d in deps[name]), deps[name]
    assert deps["phobos-launch"] == []


def test_guards_are_identical():
    copies = {
        name: (folder / package / "_conflict.py").read_text(encoding="utf-8")
        for name, (folder, package) in PACKAGES.items()
        if name in NAMESPACED
    }
    assert len(set(copies.values())) == 1, "the _conflict.py copies differ"
    for name, (folder, package) in PACKAGES.items():
        if name in NAMESPACED:
            init = (folder / package / "__init__.py").read_text(encoding="utf-8")
            assert f"from phobos.{Path(package).name} import _conflict" in init


@pytest.mark.parametrize("module", ["phobos.lang", "phobos.launch", "phobos.cache", "ph2py"])
def test_a_foreign_phobos_init_is_named(tmp_path, module):
    """Another distribution's phobos/__init__.py beside ours: a one-line ImportError naming it."""
    (tmp_path / "phobos").mkdir()
    (tmp_path / "phobos" / "__init__.py").write_text("BANNER = 'not ours'\n")
    paths = os.environ.get("PYTHONPATH", "")
    # Their regular package, whose __path__ also reaches our sources (as when both are installed
    # into one site-packages).
    ours = [str(p) for p in (ROOT / "src", *sorted((ROOT / "packages").glob("*/src")))]
    script = (
        "import sys, phobos\n"
        f"phobos.__path__[:] = [phobos.__path__[0]] + [p + '/phobos' for p in {ours!r}]\n"
        "try:\n"
        f"    import {module}\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "else:\n"
        "    print('imported')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *ours, paths])}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("NamespaceConflict phobos: error: "), out
    assert str(tmp_path / "phobos" / "__init__.py") in out
    assert "phobos-lang" in out and len(out.splitlines()) == 1
