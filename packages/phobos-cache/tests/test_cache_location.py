"""The root and size bound come from the environment, the same with or without platformdirs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from phobos.cache import Cache, default_max_bytes, default_root
from phobos.cache.location import parse_size


def test_root_comes_from_phobos_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "here"))
    assert default_root() == tmp_path / "here"
    assert Cache().root == tmp_path / "here"


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG rule is the Linux one")
@pytest.mark.parametrize("platformdirs_installed", [True, False])
def test_root_follows_xdg_with_or_without_platformdirs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, platformdirs_installed: bool
) -> None:
    monkeypatch.delenv("PHOBOS_CACHE_DIR")
    if not platformdirs_installed:
        monkeypatch.setitem(sys.modules, "platformdirs", None)  # import now fails
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_root() == tmp_path / "xdg" / "phobos"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_root() == tmp_path / "home" / ".cache" / "phobos"


def test_root_is_created_private(root: Path) -> None:
    Cache(root)
    assert root.stat().st_mode & 0o777 == 0o700


def test_max_bytes_default_env_and_argument(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    assert default_max_bytes() == 2 * 1024**3
    monkeypatch.setenv("PHOBOS_CACHE_MAX_BYTES", "512M")
    assert Cache(root).max_bytes == 512 * 1024**2
    assert Cache(root, max_bytes=1000).max_bytes == 1000
    assert Cache(root, max_bytes="2GiB").max_bytes == 2 * 1024**3


@pytest.mark.parametrize(("text", "size"), [("123", 123), ("4k", 4096), ("1.5 GB", 3 * 2**29)])
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["0", "-5", "lots", "3X", "1e3"])
def test_bad_sizes_say_what_to_write(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("PHOBOS_CACHE_MAX_BYTES", text)
    with pytest.raises(ValueError, match="PHOBOS_CACHE_MAX_BYTES"):
        default_max_bytes()
