"""``phobos-cache list | info KEY | verify | prune | clear``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phobos.cache import Cache
from phobos.cache.cli import main


def _run(root: Path, *argv: str) -> int:
    return main(["--root", str(root), *argv])


def test_list_shows_key_kernel_arch_size_and_last_use(
    cache: Cache, kernel, capsys: pytest.CaptureFixture[str]
) -> None:
    key, record, files = kernel("softmax", arch="sm_80")
    cache.put(key, record, files)
    cache.put_record("autotune", "softmax/N=4096", {"BLOCK": 128})
    assert _run(cache.root, "list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["KEY", "KERNEL", "ARCH", "SIZE", "LAST", "USED"]
    kernel_line = next(line for line in lines if line.startswith(key[:16]))
    assert "softmax" in kernel_line and "sm_80" in kernel_line and "KiB" in kernel_line
    assert any("record autotune: softmax/N=4096" in line for line in lines)
    assert lines[-1].startswith("2 entries,") and str(cache.root) in lines[-1]


def test_info_takes_a_prefix(cache: Cache, kernel, capsys: pytest.CaptureFixture[str]) -> None:
    key, record, files = kernel()
    cache.put(key, record, files)
    assert _run(cache.root, "info", key[:6].upper()) == 0
    out = capsys.readouterr().out
    assert f"key:       {key}" in out
    assert "state:     ok" in out
    assert '"arch": "sm_90"' in out


def test_info_with_an_unknown_or_ambiguous_prefix(
    cache: Cache, kernel, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = [cache.put(*kernel(f"k{i}")).key for i in range(17)]  # two share a first digit
    assert _run(cache.root, "info", "x") == 1
    shared = next(key[0] for key in keys if sum(k[0] == key[0] for k in keys) > 1)
    assert _run(cache.root, "info", shared) == 2
    assert "entries:" in capsys.readouterr().err


def test_verify_exits_nonzero_on_a_bad_entry(
    cache: Cache, kernel, capsys: pytest.CaptureFixture[str]
) -> None:
    key, record, files = kernel()
    entry = cache.put(key, record, files)
    assert _run(cache.root, "verify") == 0
    (entry.path / "kernel.cubin").write_bytes(b"torn")
    assert _run(cache.root, "verify") == 1
    assert f"BAD {key}" in capsys.readouterr().out
    assert _run(cache.root, "info", key[:8]) == 1
    assert "CORRUPT" in capsys.readouterr().out
    assert _run(cache.root, "verify", "--remove") == 1
    assert _run(cache.root, "verify") == 0
    assert cache.keys() == []


def test_prune_and_clear(cache: Cache, kernel, capsys: pytest.CaptureFixture[str]) -> None:
    for name in "abc":
        cache.put(*kernel(name))
    stale = cache.root / "v1" / "tmp" / "stage-left-by-a-killed-process"
    stale.mkdir()
    os.utime(stale, (0, 0))
    assert _run(cache.root, "prune") == 0
    assert "deleted 1 stale temporary folders" in capsys.readouterr().out
    assert _run(cache.root, "clear", "--dry-run") == 0
    assert "would remove 3 entries" in capsys.readouterr().out
    assert len(cache.keys()) == 3
    assert _run(cache.root, "clear") == 1  # not a terminal: needs --yes
    assert "add --yes" in capsys.readouterr().err
    assert len(cache.keys()) == 3
    assert _run(cache.root, "clear", "--yes") == 0
    assert "removed 3 entries" in capsys.readouterr().out
    assert cache.keys() == []


def test_clear_asks_on_a_terminal(
    cache: Cache, kernel, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.put(*kernel("a"))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    assert _run(cache.root, "clear") == 1
    assert "nothing removed" in capsys.readouterr().out and len(cache.keys()) == 1
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert _run(cache.root, "clear") == 0
    assert cache.keys() == []


def test_a_root_that_is_not_there_is_not_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    typo = tmp_path / "cahce"
    assert _run(typo, "list") == 1
    assert capsys.readouterr().err.startswith("phobos-cache: error: --root ")
    assert not typo.exists()
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(typo))
    assert main(["list"]) == 0  # the default root, not made yet: nothing to list
    assert "no kernel cache at" in capsys.readouterr().out
    assert not typo.exists()


def test_info_lists_the_files(cache: Cache, kernel, capsys: pytest.CaptureFixture[str]) -> None:
    key, record, files = kernel()
    cache.put(key, record, files)
    assert _run(cache.root, "info", key[:8]) == 0
    out = capsys.readouterr().out
    listed = out.split("files:\n", 1)[1].split("record:", 1)[0]
    for name in files:
        assert f"  {name}  " in listed


def test_a_bad_size_bound_is_a_message_not_a_traceback(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PHOBOS_CACHE_MAX_BYTES", "lots")
    with pytest.raises(SystemExit) as exited:
        _run(root, "list")
    assert exited.value.code == 2
    assert "PHOBOS_CACHE_MAX_BYTES='lots'" in capsys.readouterr().err


def test_the_cli_runs_in_a_fresh_process(root: Path) -> None:
    root.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "phobos.cache.cli", "--root", str(root), "list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "0 entries" in done.stdout


def test_an_unusable_root_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A root that cannot be a folder is one error line and status 1, not an empty 'in memory'
    listing with status 0."""
    (tmp_path / "file").write_text("")
    assert _run(tmp_path / "file" / "cache", "list") == 1
    assert _run(tmp_path / "file", "list") == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    first, second = captured.err.splitlines()
    assert first.startswith("phobos-cache: error: --root ") and "no such folder" in first
    assert "is not a folder" in second


def test_an_unwritable_root_still_lists_but_is_not_cleared(
    cache: Cache, kernel, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.put(*kernel("a"))
    monkeypatch.setattr(Cache, "in_memory", property(lambda self: True))
    assert _run(cache.root, "list") == 0
    assert capsys.readouterr().out.startswith("KEY")
    assert _run(cache.root, "clear", "--yes") == 1
    assert "cannot be written here: clear needs to" in capsys.readouterr().err
    assert len(cache.keys()) == 1
