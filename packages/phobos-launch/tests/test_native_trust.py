"""The native extension is loaded only from a folder no one else can write, and only a build
with the sha256 recorded when it was built (docs/cache.md, section 1; another user's files are
in tests/test_two_users.py, which needs root)."""

from __future__ import annotations

import os
import stat
import sys
import warnings
from pathlib import Path

import pytest

from phobos.launch import LaunchWarning
from phobos.launch import native as native_module
from phobos.launch.native import DIGEST_SUFFIX, build_extension, extension_name, native_status

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX owners and modes"),
    pytest.mark.skipif(native_module.native_module() is None, reason=native_status()),
]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch):
    """No module loaded, no warning given yet in this process."""
    monkeypatch.setattr(native_module, "_module", None)
    monkeypatch.setattr(native_module, "_status", None)
    monkeypatch.setattr(native_module, "_said", set())
    monkeypatch.setitem(sys.modules, "phobos_native_launch", None)
    return monkeypatch


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _launch_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, LaunchWarning)]


def test_a_root_made_for_the_extension_is_private(fresh, tmp_path: Path) -> None:
    root = tmp_path / "new" / "cache"
    fresh.setenv("PHOBOS_CACHE_DIR", str(root))
    old = os.umask(0o002)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", LaunchWarning)
            assert native_module.native_module() is not None
    finally:
        os.umask(old)
    assert _mode(root) == 0o700 and _mode(root / "native") == 0o700
    built = root / "native" / extension_name()
    assert not _mode(built) & 0o077
    assert not _mode(built.with_name(built.name + DIGEST_SUFFIX)) & 0o077


@pytest.mark.parametrize("mode", [0o777, 0o775])
def test_a_root_others_may_write_is_not_used(fresh, tmp_path: Path, mode: int) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, mode)
    fresh.setenv("PHOBOS_CACHE_DIR", str(root))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = native_module.native_module()
        assert native_module.native_module() is module
    assert module is not None
    (said,) = _launch_warnings(caught)
    assert str(root) in said and "writable by others" in said and "private temporary" in said
    assert not (root / "native").exists()  # nothing is built or loaded there
    assert "built privately for this process" in native_status()
    assert _mode(root) == mode


def test_a_build_that_fails_its_sha256_is_built_again_with_a_warning(tmp_path: Path, fresh):
    path = build_extension(tmp_path)
    good = path.read_bytes()
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.warns(LaunchWarning, match="does not have the sha256 recorded") as caught:
        assert build_extension(tmp_path) == path
        build_extension(tmp_path)
    assert len(caught) == 1
    assert path.read_bytes() == good


def test_a_build_without_a_record_is_built_again_silently(tmp_path: Path) -> None:
    path = build_extension(tmp_path)
    path.with_name(path.name + DIGEST_SUFFIX).unlink()  # as an older Phobos left it
    path.write_bytes(b"an older build")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LaunchWarning)
        build_extension(tmp_path)
    assert path.read_bytes() != b"an older build"


def test_a_build_others_may_write_is_not_loaded(tmp_path: Path, fresh) -> None:
    path = build_extension(tmp_path)
    os.chmod(path, 0o777)
    with pytest.warns(LaunchWarning, match="writable by others"):
        build_extension(tmp_path)
    assert not _mode(path) & 0o022


def test_a_build_that_is_a_link_is_not_loaded(tmp_path: Path, fresh) -> None:
    path = build_extension(tmp_path)
    elsewhere = tmp_path / "elsewhere.so"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    with pytest.warns(LaunchWarning, match="symbolic link"):
        build_extension(tmp_path)
    assert not path.is_symlink()


def test_an_older_loose_native_folder_is_tightened(tmp_path: Path) -> None:
    folder = tmp_path / "native"
    folder.mkdir()
    os.chmod(folder, 0o775)
    build_extension(folder)
    assert _mode(folder) == 0o755
