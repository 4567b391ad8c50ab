#!/usr/bin/env python3
"""The project's tasks, from a checkout, with nothing installed beforehand.

    python3 dev.py demo     # the saxpy example: prints its Phobos, runs it, checks it
    python3 dev.py test     # every CPU test, the wheels in fresh venvs, the docs and their browser check
    python3 dev.py quick    # a quick subset of the tests (about 700, in 35 s)
    python3 dev.py lint     # ruff
    python3 dev.py docs     # build the site into site/ (and check it in headless Chromium)
    python3 dev.py nox ARGS # any nox command line, e.g. `python3 dev.py nox -s tests -- -k cache`

It makes a virtual environment in .venv with nox in it (so it works where the system Python is
"externally managed", PEP 668, as on Debian 12 and Ubuntu 24.04), then runs nox from there; nox
makes one environment per task under .nox/.  Needs Python 3.10 or newer; standard library only.

`test` runs nox's tests session (which keeps both cores busy), then its packages and docs sessions
side by side (each mostly one process waiting on pip, mkdocs or Chromium), their output printed
when both are done; it fails if any of the three failed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
NOX = "nox>=2024.4.15"

TASKS = {
    "demo": ["-s", "demo"],
    "test": ["-s", "tests", "packages", "docs"],  # packages and docs side by side: run_test
    "quick": ["-s", "quick"],
    "lint": ["-s", "lint"],
    "docs": ["-s", "docs"],
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0 if argv else 2
    task, rest = argv[0], argv[1:]
    if task == "nox":
        args = rest
    elif task in TASKS:
        args = TASKS[task] + (["--", *rest] if rest else [])
    else:
        print(
            f"dev.py: error: no task {task!r} (tasks: {', '.join([*TASKS, 'nox'])})",
            file=sys.stderr,
        )
        return 2
    if sys.version_info < (3, 10):  # noqa: UP036  (dev.py may be run by any python3)
        print("dev.py: error: Phobos needs Python 3.10 or newer", file=sys.stderr)
        return 2
    python = ensure_venv()
    if task == "test":
        return run_test(python, rest)
    return subprocess.call([str(python), "-m", "nox", *args], cwd=ROOT)


def run_test(python: Path, rest: list[str]) -> int:
    """nox -s tests, then nox -s packages and nox -s docs at once; the worst exit status."""
    nox = [str(python), "-m", "nox"]
    status = subprocess.call([*nox, "-s", "tests", *(["--", *rest] if rest else [])], cwd=ROOT)
    side = ("packages", "docs")
    print(f"dev.py: nox -s {' and nox -s '.join(side)} side by side; their output follows")
    sys.stdout.flush()

    def run(session: str) -> tuple[int, str]:
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
            code = subprocess.call([*nox, "-s", session], cwd=ROOT, stdout=log, stderr=log)
            log.seek(0)
            return code, log.read()

    with ThreadPoolExecutor(len(side)) as pool:
        results = list(pool.map(run, side))
    for _, output in results:
        sys.stdout.write(output)
    sys.stdout.flush()
    return next((code for code in (status, *(code for code, _ in results)) if code), 0)


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> Path:
    """.venv's Python, with nox installed: made on first use."""
    python = venv_python()
    if python.exists() and _has(python, "nox"):
        return python
    if not python.exists():
        print(f"dev.py: making a virtual environment in {VENV}", file=sys.stderr)
        try:
            venv.create(VENV, with_pip=True)
        except (subprocess.CalledProcessError, OSError) as exc:
            # Debian and Ubuntu ship ensurepip separately (python3-venv).  A venv without its own
            # pip can still use the system's pip, which installs into the venv.
            shutil.rmtree(VENV, ignore_errors=True)
            if not _has(Path(sys.executable), "pip"):
                print(
                    f"dev.py: error: cannot make a virtual environment ({exc}), and this Python "
                    "has no pip.\nInstall one of: python3-venv (apt install python3-venv), "
                    "python3-pip, or pipx, then run this again.",
                    file=sys.stderr,
                )
                sys.exit(1)
            venv.create(VENV, with_pip=False, system_site_packages=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", NOX]
    if subprocess.call(pip) != 0:
        print(f"dev.py: error: could not install {NOX} into {VENV}", file=sys.stderr)
        sys.exit(1)
    return python


def _has(python: Path, module: str) -> bool:
    probe = [str(python), "-c", f"import {module}"]
    return subprocess.call(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
