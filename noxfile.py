"""Project tasks: ``nox -s demo`` (the saxpy example), ``tests``, ``lint``, ``docs``."""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True

PACKAGES = [
    "packages/phobos-compile[cuda]",
    "packages/phobos-frontend",
    "packages/phobos-launch",
    "packages/phobos-cache[platformdirs]",
    "packages/phobos-autotune",
    "packages/ph2py",
    ".[progress]",
]


def install_phobos(session: nox.Session) -> None:
    args: list[str] = []
    for path in PACKAGES:
        args += ["-e", path]
    session.install(*args)


@nox.session
def demo(session: nox.Session) -> None:
    """Print saxpy's Phobos source, run it (GPU if present, else the CPU interpreter), check it."""
    install_phobos(session)
    session.run("python", "examples/saxpy.py")


@nox.session
def tests(session: nox.Session) -> None:
    """Every CPU test: the packages' own and the cross-package ones."""
    install_phobos(session)
    session.install(
        "pytest>=8",
        "hypothesis>=6",
        "pytest-xdist>=3",
        "ml_dtypes>=0.4",
        "nvidia-cuda-nvdisasm>=13.0",
    )
    session.run("pytest", "-n", "2", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def docs(session: nox.Session) -> None:
    install_phobos(session)
    session.install("mkdocs>=1.6")
    session.run("mkdocs", "build", "--strict")
