"""``phobos-cache list | info KEY | verify | prune | clear``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phobos.cache import Cache, CacheWarning
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
    assert _run(cache.root, "clear") == 0
    assert "removed 3 entries" in capsys.readouterr().out
    assert cache.keys() == []


def test_a_bad_size_bound_is_a_message_not_a_traceback(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PHOBOS_CACHE_MAX_BYTES", "lots")
    with pytest.raises(SystemExit) as exited:
        _run(root, "list")
    assert exited.value.code == 2
    assert "PHOBOS_CACHE_MAX_BYTES='lots'" in capsys.readouterr().err


def test_the_cli_runs_in_a_fresh_process(root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "phobos.cache.cli", "--root", str(root), "list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "0 entries" in done.stdout


def test_unwritable_root_still_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    with pytest.warns(CacheWarning, match="in memory"):
        assert _run(tmp_path / "file" / "cache", "list") == 0
    assert "in memory" in capsys.readouterr().out
