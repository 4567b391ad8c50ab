"""A cache folder that cannot be written degrades to memory, with one warning per process.

The tests run as root, where a chmod'ed folder is still writable, so they make the folder
unwritable in ways that hold for root too: a root path under a regular file (creating it fails,
for real), and, to stand for a read-only filesystem, ``DiskStore.open`` or ``DiskStore.publish``
monkeypatched to raise EROFS as such a filesystem does.
"""

from __future__ import annotations

import errno
import warnings
from pathlib import Path

import pytest

from phobos.cache import Cache, CacheWarning
from phobos.cache.disk import DiskStore


def test_a_root_that_cannot_be_created_degrades_to_memory_with_one_warning(
    tmp_path: Path, kernel
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    root = tmp_path / "a-file" / "cache"
    key, record, files = kernel()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = Cache(root)
        _, built = first.get_or_build(key, record, lambda: files)
        second = Cache(root)
        entry, built_again = second.get_or_build(key, record, lambda: files)
        Cache(tmp_path / "a-file" / "other").put(key, record, files)
    assert [str(w.message) for w in caught if w.category is CacheWarning] == [
        str(caught[0].message)
    ]
    assert str(root) in str(caught[0].message) and "in memory" in str(caught[0].message)
    assert first.in_memory and second.in_memory
    assert (built, built_again) == (True, False)  # one memory store per root in a process
    assert entry.path is None and dict(entry.files) == files
    assert [info.key for info in second.entries()] == [key]
    assert second.verify() == []


def _read_only(*_args: object) -> None:
    raise OSError(errno.EROFS, "Read-only file system")


def test_a_put_that_fails_on_disk_degrades_to_memory(
    root: Path, kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Cache(root)
    on_disk = cache.put(*kernel("on-disk"))
    assert not cache.in_memory
    monkeypatch.setattr(DiskStore, "publish", _read_only)
    key, record, files = kernel()
    with pytest.warns(CacheWarning, match="Read-only file system") as caught:
        entry = cache.put(key, record, files)
        other_key, other_record, other_files = kernel("other")
        cache.put(other_key, other_record, other_files)
    assert len(caught) == 1
    assert cache.in_memory
    assert cache.get(key) is entry
    assert cache.get(on_disk.key).path == on_disk.path  # still read from disk
    assert sorted(cache.keys()) == sorted([key, other_key, on_disk.key])


def test_a_read_only_cache_still_serves_its_entries(
    root: Path, kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    baked_key, baked_record, baked_files = kernel("baked")
    Cache(root).put(baked_key, baked_record, baked_files)
    monkeypatch.setattr(DiskStore, "open", _read_only)
    monkeypatch.setattr(DiskStore, "publish", _read_only)
    with pytest.warns(CacheWarning, match="cached in memory only"):
        cache = Cache(root)
    assert cache.in_memory

    entry, built = cache.get_or_build(baked_key, baked_record, lambda: {})
    assert built is False and dict(entry.files) == baked_files
    new_key, new_record, new_files = kernel("new")
    _, built = cache.get_or_build(new_key, new_record, lambda: new_files)
    assert built is True
    _, built_again = Cache(root).get_or_build(new_key, new_record, lambda: new_files)
    assert built_again is False
    assert not (root / "v1" / new_key[:2] / new_key).exists()
    assert cache.verify() == []


def test_memory_entries_are_bounded_too(tmp_path: Path, kernel) -> None:
    (tmp_path / "a-file").write_text("")
    with pytest.warns(CacheWarning):
        cache = Cache(tmp_path / "a-file" / "cache", max_bytes=5000)
    keys = []
    for name in "abcdef":
        key, record, files = kernel(name, size=1000)
        cache.put(key, record, files)
        keys.append(key)
    kept = set(cache.keys())
    assert keys[-1] in kept and keys[0] not in kept
    assert sum(info.size for info in cache.entries()) <= 5000
