"""Every command line, fed bad files, bad flags, bad environment variables and unusable folders:
one ``NAME: error: ...`` line on stderr, a non-zero exit, never a traceback.

Each case runs the command in a fresh process (``python -m``), as a user would run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAXPY = ROOT / "examples" / "saxpy_fp32.ph"

COMPILE = ("phobos-compile", ["-m", "phobos.compile"])
CACHE = ("phobos-cache", ["-m", "phobos.cache"])
PH2PY = ("ph2py", ["-m", "ph2py"])
LAUNCH = ("python -m phobos.launch", ["-m", "phobos.launch"])


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    """Bad inputs, made fresh for each case: name -> path."""
    made = {
        "latin1": tmp_path / "latin1.ph",
        "random": tmp_path / "random.ph",
        "python": tmp_path / "kernel.py",
        "empty": tmp_path / "empty.ph",
        "folder": tmp_path / "folder",
        "afile": tmp_path / "afile",
        "cache": tmp_path / "cache",
        "broken": tmp_path / "broken" / "k.ph",
    }
    made["latin1"].write_bytes("kernel caf\xe9() {}\n".encode("latin-1"))
    made["random"].write_bytes(bytes(range(128, 256)) * 3)
    made["python"].write_text('import phobos.lang as ph\nx = "a"\n')
    made["empty"].write_text("")
    made["folder"].mkdir()
    made["afile"].write_text("not a folder\n")
    made["cache"].mkdir()
    made["broken"].parent.mkdir()
    made["broken"].write_text(SAXPY.read_text())
    (made["broken"].parent / "pyproject.toml").write_text("[tool.ruff\n")
    paths = {name: str(path) for name, path in made.items()}
    paths["missing"] = str(tmp_path / "missing.ph")
    paths["saxpy"] = str(SAXPY)
    paths["under_a_file"] = str(made["afile"] / "sub")
    return paths


# (command, argv with {placeholders} from `files`, extra environment, expected status or None
# for any non-zero, a word the error line must contain)
CASES = [
    # phobos-compile: flags
    (COMPILE, ["--bogus", "{saxpy}"], {}, 2, "'--bogus'"),
    (COMPILE, ["{saxpy}"], {}, 2, "-o DIR"),
    (COMPILE, ["{saxpy}", "--emit", "cuda"], {}, 2, "--arch"),
    (COMPILE, ["{saxpy}", "--emit", "phobos", "-o", "{folder}"], {}, 2, "give one"),
    (COMPILE, ["{saxpy}", "--arch", "hopper", "-o", "{folder}"], {}, 2, "hopper"),
    (COMPILE, ["{saxpy}", "--emit", "ir", "-D", "BLOCK"], {}, 2, "NAME=INTEGER"),
    (COMPILE, ["{saxpy}", "--emit", "ir", "--index-width", "16"], {}, 2, "16"),
    (COMPILE, ["{saxpy}", "--emit", "ir", "--kernel", "nope"], {}, 2, "'nope'"),
    (COMPILE, ["{saxpy}", "--emit", "cuda", "--arch", "sm_90", "--cache"], {}, 2, "--cache"),
    # phobos-compile: files
    (COMPILE, ["{missing}", "--emit", "phobos"], {}, 1, "missing.ph"),
    (COMPILE, ["{folder}", "--emit", "phobos"], {}, 1, "folder"),
    (COMPILE, ["{python}", "--emit", "phobos"], {}, 2, "is Python"),
    (COMPILE, ["{empty}", "--emit", "ir"], {}, 1, "no kernel"),
    # phobos-compile: environment and folders
    (
        COMPILE,
        ["{saxpy}", "--arch", "sm_90", "-o", "{folder}", "--cache"],
        {"PHOBOS_CACHE_MAX_BYTES": "abc"},
        1,
        "PHOBOS_CACHE_MAX_BYTES",
    ),
    # phobos-cache
    (CACHE, ["--bogus", "list"], {}, 2, "'--bogus'"),
    (CACHE, ["list", "--bogus"], {}, 2, "'--bogus'"),
    (CACHE, [], {}, 2, "required"),
    (CACHE, ["frobnicate"], {}, 2, "frobnicate"),
    (CACHE, ["--root", "{missing}", "list"], {}, 1, "no such folder"),
    (CACHE, ["--root", "{afile}", "list"], {}, 1, "not a folder"),
    (CACHE, ["--root", "{under_a_file}", "verify"], {}, 1, "no such folder"),
    (CACHE, ["list"], {"PHOBOS_CACHE_DIR": "{afile}"}, 1, "not a folder"),
    (CACHE, ["--root", "{cache}", "list"], {"PHOBOS_CACHE_MAX_BYTES": "abc"}, 2, "abc"),
    (CACHE, ["--root", "{cache}", "list"], {"PHOBOS_CACHE_MAX_BYTES": "-5"}, 2, "-5"),
    (
        CACHE,
        ["--root", "{cache}", "--trusted-owner", "no-such-account-x", "list"],
        {},
        2,
        "no-such-account-x",
    ),
    (CACHE, ["--root", "{cache}", "info", "abc"], {}, 1, "'abc'"),
    (CACHE, ["--root", "{cache}", "info", "not hex!"], {}, 1, "not hex!"),
    # ph2py
    (PH2PY, ["--bogus"], {}, 2, "'--bogus'"),
    (PH2PY, ["--bogus", "{saxpy}"], {}, 2, "'--bogus'"),
    (PH2PY, [], {}, 2, "PATH"),
    (PH2PY, ["{missing}"], {}, 1, "missing.ph"),
    (PH2PY, ["{python}"], {}, 1, "not a .ph file"),
    (PH2PY, ["{latin1}", "--stdout"], {}, 1, "not UTF-8"),
    (PH2PY, ["{random}", "--stdout"], {}, 1, "not UTF-8"),
    (PH2PY, ["--line-length", "0", "{saxpy}"], {}, 2, "positive"),
    (PH2PY, ["--stdout", "{saxpy}", "{saxpy}"], {}, 1, "--stdout"),
    (PH2PY, ["{folder}", "-o", "{python}"], {}, 1, "-o"),
    (PH2PY, ["{saxpy}", "-o", "{under_a_file}"], {}, 1, "afile"),
    (PH2PY, ["{broken}"], {}, 1, "pyproject.toml"),
    # python -m phobos.launch
    (LAUNCH, ["--bogus"], {}, 2, "'--bogus'"),
    (LAUNCH, ["extra"], {}, 2, "extra"),
]


def _run(command, argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("PHOBOS_DEBUG", "FORCE_COLOR")}
    full.update(env)
    return subprocess.run(
        [sys.executable, *command[1], *argv],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("command", "argv", "env", "status", "word"),
    CASES,
    ids=[
        f"{c[0][0]} {' '.join(c[1])} {' '.join(f'{k}={v}' for k, v in c[2].items())}".strip()
        for c in CASES
    ],
)
def test_one_error_line_and_a_non_zero_exit(files, tmp_path, command, argv, env, status, word):
    argv = [a.format(**files) for a in argv]
    env = {k: v.format(**files) for k, v in env.items()}
    done = _run(command, argv, env, tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode != 0
    if status is not None:
        assert done.returncode == status, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{command[0]}: error: "), lines[0]
    assert word.format(**files) in lines[0], lines[0]


@pytest.mark.parametrize(
    ("name", "argv", "where"),
    [("latin1", ["--emit", "phobos"], "1:11"), ("random", ["--emit", "ir"], "1:1")],
)
def test_a_ph_file_that_is_not_utf8_is_an_error_at_its_first_bad_byte(
    files, tmp_path, name, argv, where
):
    """phobos-compile reports a .ph file's bytes as it reports any mistake in the program: at
    the line and column of the first byte that does not decode, the line shown, a help line
    (docs/compiling.md, Errors); exit status 1 and no traceback, as for every bad input."""
    path = files[name]
    done = _run(COMPILE, [path, *argv], {}, tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"{path}:{where}: error: the file is not valid UTF-8: "), lines[0]
    assert lines[-1].startswith("help: a .ph file is UTF-8 text"), done.stderr


@pytest.mark.parametrize("command", [COMPILE, CACHE, PH2PY, LAUNCH], ids=lambda c: c[0])
def test_version_and_help(command, tmp_path):
    version = (ROOT / "VERSION").read_text().strip()
    done = _run(command, ["--version"], {}, tmp_path)
    assert done.returncode == 0 and version in done.stdout, done
    done = _run(command, ["--help"], {}, tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("usage: "), done


@pytest.mark.parametrize(
    ("env", "coloured"),
    [({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False), ({}, False)],
)
def test_colour_only_when_asked_and_never_with_no_color(tmp_path, env, coloured):
    """Not a terminal here: colour only with FORCE_COLOR, and NO_COLOR wins over it."""
    for command in (COMPILE, CACHE, PH2PY):
        done = subprocess.run(
            [sys.executable, *command[1], "--bogus"],
            capture_output=True,
            text=True,
            env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, **env},
            cwd=tmp_path,
        )
        assert ("\033[" in done.stderr) == coloured, done.stderr
        assert (
            done.stderr.replace("\033[1;31m", "")
            .replace("\033[0m", "")
            .startswith(f"{command[0]}: error: ")
        )


def test_a_cache_warning_is_one_line_in_our_format(tmp_path):
    """A damaged cache entry warns as 'phobos-cache: warning: ...', not in Python's format."""
    root = tmp_path / "cache"
    root.mkdir()
    stray = root / "v1" / "ab" / ("ab" + "0" * 62)
    stray.mkdir(parents=True)
    (stray / "manifest.json").write_text("{not json")
    done = _run(CACHE, ["--root", str(root), "verify"], {}, tmp_path)
    assert "Traceback" not in done.stderr
    for line in done.stderr.splitlines():
        assert line.startswith("phobos-cache: "), done.stderr
        assert "warnings.warn" not in line and ".py:" not in line
