"""The trust model (docs/cache.md, section 1), as one user can test it: a root others may write
to is refused as a whole, with one warning; what the cache makes is private; what it reads is
opened without following links and checked on the descriptor.  Another user's files are in
tests/test_two_users.py (they need root)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from phobos.cache import Cache, CacheWarning
from phobos.cache.cli import main

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes")


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _cache_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777], ids=["world", "group", "sticky"])
def test_a_root_others_may_write_is_refused_with_one_warning(root: Path, kernel, mode) -> None:
    key, record, files = kernel()
    Cache(root).put(key, record, files)  # a good entry, put while the root was private
    os.chmod(root, mode)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = Cache(root)
        assert cache.get(key) is None  # nothing in the folder is read, good or not
        entry, built = cache.get_or_build(key, record, lambda: files)
        again = Cache(root)
        assert again.get_or_build(key, record, lambda: {})[1] is False  # the process's memory
    said = _cache_warnings(caught)
    assert len(said) == 1
    assert str(root) in said[0] and "writable" in said[0] and "in memory only" in said[0]
    assert built is True and entry.path is None
    assert cache.in_memory and cache.refused is not None and not cache.shared
    assert cache.keys() == [key] and cache.verify() == []  # the memory's entry, not the disk's
    assert _mode(root) == mode  # the user's folder is left as it is


def test_a_root_inside_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # not sticky: anyone could rename the root away and put theirs
    with pytest.warns(CacheWarning, match="which others can write to"):
        cache = Cache(shared / "cache")
    assert cache.refused is not None and "inside" in cache.refused


def test_a_root_in_a_sticky_folder_is_fine(tmp_path: Path, kernel) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        cache = Cache(shared / "cache")
        assert not cache.in_memory
        entry = cache.put(*kernel())
    assert entry.path is not None


def test_what_the_cache_makes_is_private_whatever_the_umask(root: Path, kernel) -> None:
    old = os.umask(0o002)  # a user-private-group umask: the group may write by default
    try:
        cache = Cache(root)
        entry = cache.put(*kernel())
        cache.put_record("autotune", "k", {"a": 1})
    finally:
        os.umask(old)
    assert _mode(root) == 0o700
    for folder in (root / "v1", root / "v1" / "tmp", root / "v1" / "locks", entry.path.parent):
        assert _mode(folder) == 0o700, folder
    assert _mode(entry.path) == 0o700
    assert {_mode(path) for path in entry.path.iterdir()} == {0o600}


def test_an_older_cache_s_loose_folders_are_tightened(root: Path, kernel) -> None:
    key, record, files = kernel()
    entry = Cache(root).put(key, record, files)
    for folder in (root / "v1", root / "v1" / "tmp", root / "v1" / "locks"):
        os.chmod(folder, 0o775)
    os.chmod(entry.path.parent, 0o777)
    cache = Cache(root)
    assert not cache.in_memory
    assert {_mode(f) for f in (root / "v1", root / "v1" / "tmp", root / "v1" / "locks")} == {0o755}
    assert cache.get(key) is not None  # entries are checked one by one, not their shard
    other_key, other_record, other_files = kernel("other")
    if other_key[:2] == key[:2]:
        cache.put(other_key, other_record, other_files)
        assert _mode(entry.path.parent) == 0o755


def _spoil_with_a_link(entry: Path, target: Path) -> None:
    cubin = entry / "kernel.cubin"
    target.write_bytes(cubin.read_bytes())  # the same bytes: only the link is wrong
    cubin.unlink()
    cubin.symlink_to(target)


def test_files_are_not_read_through_symbolic_links(cache: Cache, kernel, tmp_path: Path) -> None:
    key, record, files = kernel()
    entry = cache.put(key, record, files)
    _spoil_with_a_link(entry.path, tmp_path / "elsewhere.cubin")
    assert "symbolic link" in cache.check(key).message
    with pytest.warns(CacheWarning, match="symbolic link"):
        assert cache.get(key) is None
    assert cache.get_or_build(key, record, lambda: files)[1] is True


def test_an_entry_folder_that_is_a_link_is_refused(cache: Cache, kernel, tmp_path: Path) -> None:
    key, record, files = kernel()
    entry = cache.put(key, record, files)
    moved = tmp_path / "moved"
    entry.path.rename(moved)
    entry.path.symlink_to(moved)
    with pytest.warns(CacheWarning, match="symbolic link"):
        assert cache.get(key) is None


def test_a_fifo_in_place_of_a_file_does_not_block(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    entry = cache.put(key, record, files)
    (entry.path / "kernel.ptx").unlink()
    os.mkfifo(entry.path / "kernel.ptx")
    assert "not a regular file" in cache.check(key).message
    with pytest.warns(CacheWarning):
        assert cache.get(key) is None


def test_entry_files_others_may_write_are_refused(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    entry = cache.put(key, record, files)
    os.chmod(entry.path / "contract.json", 0o666)
    assert "writable" in cache.check(key).message
    assert [p.key for p in cache.verify()] == [key]


def test_a_lock_file_that_is_a_link_is_not_followed(root: Path, kernel, tmp_path: Path) -> None:
    cache = Cache(root)
    key, record, files = kernel()
    target = tmp_path / "not-a-lock"
    (root / "v1" / "locks" / f"{key}.lock").symlink_to(target)
    entry, built = cache.get_or_build(key, record, lambda: files)
    assert built is True and dict(entry.files) == files
    assert not target.exists()


def test_the_cli_on_a_refused_root_says_so_in_one_line(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Cache(root)
    os.chmod(root, 0o777)
    for command in (["list"], ["verify"], ["info", "ab"], ["prune"], ["clear"], ["pin"]):
        assert main(["--root", str(root), *command]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("phobos-cache: error: not using")
        assert str(root) in lines[0]


def test_the_warning_is_one_clean_line(root: Path) -> None:
    """Python prints a warning with the line of source that raised it; this one has none."""
    root.mkdir(mode=0o700)
    os.chmod(root, 0o777)
    script = "from phobos.cache import Cache; Cache(); Cache(); print('done')"
    env = {**os.environ, "PHOBOS_CACHE_DIR": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout == "done\n"
    (line,) = done.stderr.splitlines()
    assert "CacheWarning: phobos cache: not using the cache folder" in line
    assert str(root) in line and "PHOBOS_CACHE_DIR" in line


def test_a_new_default_root_is_made_private(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("PHOBOS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home" / ".cache"))  # neither exists
    old = os.umask(0o002)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", CacheWarning)
            cache = Cache()
    finally:
        os.umask(old)
    assert cache.root == tmp_path / "home" / ".cache" / "phobos" and not cache.in_memory
    assert _mode(cache.root) == 0o700
    assert _mode(tmp_path / "home") == _mode(tmp_path / "home" / ".cache") == 0o755


def test_an_unknown_trusted_owner_is_an_error(root: Path) -> None:
    with pytest.raises(ValueError, match="no account"):
        Cache(root, trusted_owner="no-such-account-here")
    with pytest.raises(SystemExit) as exited:
        main(["--root", str(root), "--trusted-owner", "no-such-account-here", "list"])
    assert exited.value.code == 2


def test_pinning_your_own_cache_opens_it_for_reading_only(root: Path, kernel) -> None:
    cache = Cache(root)
    good = cache.put(*kernel("good"))
    bad = cache.put(*kernel("bad"))
    (bad.path / "kernel.ptx").write_bytes(b"torn")
    pins = cache.pin()
    assert pins.keys == [good.key] and [p.key for p in pins.bad] == [bad.key]
    assert pins.path == root / "v1" / "pins.json"
    for path in (root, root / "v1", good.path.parent, good.path):
        assert _mode(path) == 0o755, path
    assert {_mode(p) for p in good.path.iterdir()} == {0o644}
    assert _mode(pins.path) == 0o644
    assert _mode(bad.path) == 0o700  # not pinned, not shared
    again = Cache(root)  # its owner goes on using it as an ordinary cache
    assert not again.in_memory and again.get(good.key) is not None
