"""Project tasks (run them with ``python3 dev.py TASK``, which brings nox; see README.md).

nox -s demo      the saxpy example (CPU interpreter unless a GPU is there): numpy alone, the sources
nox -s tests     every CPU test; compiles every example with NVRTC, so it installs the CUDA wheels
                 (and nvdisasm, for the SASS tests)
nox -s quick     a quick subset of the tests: no CUDA wheels, no compiling for a GPU
nox -s packages  sdists and wheels with `python -m build`; each wheel alone in a fresh venv
nox -s docs      the site (mkdocs, the API reference, tutorial pages), then headless Chromium opens
                 every page; mkdocs, matplotlib, numpy, libcst and the sources: no CUDA wheels
nox -s lint      ruff
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["demo", "tests"]

ROOT = Path(__file__).resolve().parent

# Each package with the extras a session needs.  Only `tests` compiles for a GPU, so only it takes
# phobos-compile[cuda] (the CUDA toolchain wheels, about 300 MB); the others take [interp] (numpy).
LIGHT = [
    "packages/phobos-compile[interp]",
    "packages/phobos-frontend",
    "packages/phobos-launch",
    "packages/phobos-cache",
    "packages/phobos-autotune",
    "packages/ph2py",
    ".",
]
WITH_CUDA = ["packages/phobos-compile[cuda,interp]", *LIGHT[1:-1], ".[progress]"]
TEST_TOOLS = [
    "pytest>=8",
    "hypothesis>=6",
    "pytest-xdist>=3.2",  # --dist worksteal
    "ml_dtypes>=0.4",
    "jsonschema>=4.18",  # tests/test_contract_schema.py
    "ruff>=0.6",  # ph2py's tests check that ruff format leaves its output as it is
    "ipython>=8",  # tests/test_kernel_source.py runs a kernel defined in an IPython cell
]
# Only `tests` reads SASS: packages/phobos-compile/tests/test_sass.py disassembles cubins with the
# wheel's nvdisasm (without it those tests skip, so the session must install it).
SASS_TOOLS = ["nvidia-cuda-nvdisasm>=13.0"]
# ml_dtypes: the docs build runs every tutorial, and tutorial 07 checks bf16 in the interpreter.
DOCS_TOOLS = [
    "mkdocs>=1.6",
    "mkdocstrings[python]>=0.26",
    "matplotlib>=3.7",
    "ruff>=0.6",
    "ml_dtypes>=0.4",
]

# The quick subset: no test that compiles for a GPU (those need the CUDA wheels).
QUICK = [
    "tests/test_packaging.py",
    "tests/test_cli_bad_input.py",
    "tests/test_bench_figures.py",
    "packages/phobos-frontend",
    "packages/ph2py",
    "packages/phobos-cache",
    "packages/phobos-compile/tests/test_parser.py",
    "packages/phobos-compile/tests/test_check_types.py",
    "packages/phobos-compile/tests/test_interp.py",
]


def _install(session: nox.Session, paths: list[str], *requirements: str) -> None:
    """Editable installs of the packages, built in one go (no isolated build per package), with
    ``requirements`` in the same pip run."""
    session.install("hatchling>=1.21", "editables>=0.5")  # hatchling builds editables with it
    args: list[str] = ["--no-build-isolation"]
    for path in paths:
        args += ["-e", path]
    session.install(*args, *requirements)


# Two workers for two cores.  worksteal: each worker starts on half of the tests and takes over
# the other's remaining ones when done, so neither idles while the other still has a queue (the
# default, load, hands tests out in collection order and can leave one worker alone at the end).
PYTEST = ["pytest", "-n", "2", "--dist", "worksteal"]


def _sources(session: nox.Session, *requirements: str) -> dict[str, str]:
    """Only third-party requirements installed; the packages come from the checkout's sources
    (PYTHONPATH), as on a machine where nothing can be installed.  The env to run with."""
    session.install(*requirements)
    paths = [str(ROOT / "src"), *(str(p) for p in sorted(ROOT.glob("packages/*/src")))]
    return {"PYTHONPATH": os.pathsep.join(paths)}


@nox.session
def demo(session: nox.Session) -> None:
    """Print saxpy's Phobos source, run it (GPU if present, else the CPU interpreter), check it.

    It installs numpy alone and runs the packages from the checkout: `nox -s packages` is what
    checks that they install."""
    env = _sources(session, "numpy>=1.24")
    session.run("python", "examples/saxpy.py", env=env)


@nox.session
def tests(session: nox.Session) -> None:
    """Every CPU test: the packages' own and the cross-package ones."""
    _install(session, WITH_CUDA, *TEST_TOOLS, *SASS_TOOLS)
    session.run(*PYTEST, *session.posargs)


@nox.session
def quick(session: nox.Session) -> None:
    """A quick subset of the tests, without the CUDA wheels."""
    _install(session, [*LIGHT[:-1], ".[progress]"], *TEST_TOOLS)
    session.run(*PYTEST, *(session.posargs or QUICK))


@nox.session
def packages(session: nox.Session) -> None:
    """Build every sdist and wheel; install each wheel alone into a fresh venv and smoke-test it."""
    session.install("build>=1", "virtualenv>=20", "hatchling>=1.21")
    dist = Path(session.create_tmp()) / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    folders = [".", *sorted(str(p.parent) for p in ROOT.glob("packages/*/pyproject.toml"))]
    for folder in folders:  # sdist, then the wheel built from that sdist
        session.run(
            "python", "-m", "build", "--no-isolation", "--quiet", "--outdir", str(dist), folder
        )
    session.run("python", "tools/check_packages.py", str(dist))


@nox.session
def docs(session: nox.Session) -> None:
    """Build the site into site/ with the API reference; check every page in headless Chromium."""
    env = _sources(session, *DOCS_TOOLS, "numpy>=1.24", "libcst>=1.1")
    session.run("mkdocs", "build", "--strict", env=env)  # its hook makes the generated pages
    shots = os.environ.get("OUT") or str(ROOT / "site" / "_screenshots")
    session.run("python", "tools/check_site.py", "site", "--screenshots", shots, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


if __name__ == "__main__":
    sys.exit("run this file with nox: python3 dev.py nox -l")
