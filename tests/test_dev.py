"""dev.py: the README's commands, with nothing installed but Python."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _dev(tmp_path: Path, monkeypatch):
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    monkeypatch.setattr(dev, "VENV", tmp_path / ".venv")
    return dev


def test_without_ensurepip_the_venv_uses_the_systems_pip(tmp_path, monkeypatch):
    """Debian without python3-venv: `venv` cannot bootstrap pip; the venv borrows the system's."""
    dev = _dev(tmp_path, monkeypatch)
    made = []

    def create(path, with_pip=False, system_site_packages=False):
        made.append((with_pip, system_site_packages))
        if with_pip:
            raise subprocess.CalledProcessError(1, ["python", "-m", "ensurepip"])
        python = dev.venv_python()
        python.parent.mkdir(parents=True)
        python.symlink_to(sys.executable)

    monkeypatch.setattr(venv, "create", create)
    calls = []
    monkeypatch.setattr(dev, "_has", lambda python, module: module == "pip")
    monkeypatch.setattr(subprocess, "call", lambda argv, **kw: calls.append(argv) or 0)
    assert dev.ensure_venv() == dev.venv_python()
    assert made == [(True, False), (False, True)]
    assert calls[-1][1:5] == ["-m", "pip", "install", "--quiet"] and dev.NOX in calls[-1]


def test_the_tasks(tmp_path, monkeypatch, capsys):
    dev = _dev(tmp_path, monkeypatch)
    ran = []
    monkeypatch.setattr(dev, "ensure_venv", lambda: Path("python"))
    monkeypatch.setattr(subprocess, "call", lambda argv, **kw: ran.append(argv) or 0)
    assert dev.main(["test"]) == 0  # tests, then packages and docs side by side
    assert ran[0][1:] == ["-m", "nox", "-s", "tests"]
    assert sorted(argv[1:] for argv in ran[1:]) == [
        ["-m", "nox", "-s", "docs"],
        ["-m", "nox", "-s", "packages"],
    ]
    ran.clear()
    assert dev.main(["test", "-k", "cache"]) == 0  # the arguments go to pytest
    assert ran[0][1:] == ["-m", "nox", "-s", "tests", "--", "-k", "cache"]
    assert len(ran) == 3
    assert dev.main(["nox", "-s", "tests", "--", "-k", "cache"]) == 0
    assert ran[-1][1:] == ["-m", "nox", "-s", "tests", "--", "-k", "cache"]
    assert dev.main(["frobnicate"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("dev.py: error: no task 'frobnicate'")
    failing = {"docs": 1}  # a failed session fails the task
    monkeypatch.setattr(subprocess, "call", lambda argv, **kw: failing.get(argv[-1], 0))
    assert dev.main(["test"]) == 1
