"""The size bound: least-recently-used entries go first, and only when the bound is crossed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from phobos.cache import Cache


@pytest.fixture
def unit(tmp_path: Path, kernel) -> int:
    """The bytes one ``kernel(name, size=2000)`` entry takes on disk."""
    entry = Cache(tmp_path / "measure").put(*kernel("m", size=2000))
    return sum(item.stat().st_size for item in entry.path.iterdir())


def _fill(cache: Cache, kernel, names: str) -> dict[str, str]:
    keys = {}
    for name in names:
        key, record, files = kernel(name, size=2000)
        cache.put(key, record, files)
        keys[name] = key
    return keys


def test_eviction_keeps_the_most_recently_used(root: Path, kernel, unit: int) -> None:
    cache = Cache(root, max_bytes=int(unit * 3.5))
    keys = _fill(cache, kernel, "abc")
    assert cache.get(keys["a"]) is not None  # a is now the most recently used
    keys |= _fill(cache, kernel, "d")

    assert set(cache.keys()) == {keys["a"], keys["c"], keys["d"]}
    assert sum(info.size for info in cache.entries()) <= cache.max_bytes


def test_another_processs_hit_counts_as_use(root: Path, kernel, unit: int) -> None:
    cache = Cache(root, max_bytes=int(unit * 3.5))
    keys = _fill(cache, kernel, "ab")
    old = time.time() - 60
    for key in keys.values():
        os.utime(root / "v1" / key[:2] / key, (old, old))
    assert Cache(root).get(keys["a"]) is not None
    keys |= _fill(cache, kernel, "cd")
    assert set(cache.keys()) == {keys["a"], keys["c"], keys["d"]}


def test_no_scan_below_the_bound(root: Path, kernel, monkeypatch: pytest.MonkeyPatch) -> None:
    _fill(Cache(root, max_bytes=10**9), kernel, "a")  # the process's first put measures once
    scans = []
    monkeypatch.setattr(Cache, "_usages", lambda self: scans.append(1) or {})
    for name in "bcdefg":  # a Cache per put, as a compiler might make: still no scan
        _fill(Cache(root, max_bytes=10**9), kernel, name)
    assert scans == []
    Cache(root, max_bytes=1).put(*kernel("z"))  # crossing the bound scans
    assert scans == [1]


def test_prune_enforces_a_lowered_bound_and_keeps_the_newest(root: Path, kernel, unit: int) -> None:
    keys = _fill(Cache(root), kernel, "abcdef")
    small = Cache(root, max_bytes=int(unit * 2.5))
    pruned = small.prune()
    assert sorted(pruned.evicted) == sorted(keys[name] for name in "abcd")
    assert set(small.keys()) == {keys["e"], keys["f"]}


def test_an_entry_larger_than_the_bound_survives_its_own_put(root: Path, kernel) -> None:
    cache = Cache(root, max_bytes=1000)
    key, record, files = kernel("huge", size=5000)
    entry = cache.put(key, record, files)
    assert cache.get(key) is not None and entry.path.exists()
