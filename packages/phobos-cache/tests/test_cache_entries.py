"""Putting and getting entries and records; what an entry folder holds."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from phobos.cache import LAYOUT_VERSION, Cache, cache_key, record_key


def test_put_then_get_returns_the_same_bytes(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    put = cache.put(key, record, files)
    got = cache.get(key)
    assert got is not None
    assert dict(got.files) == files == dict(put.files)
    assert got.read("kernel.cubin") == files["kernel.cubin"]
    assert got.record == record
    assert got.path == cache.root / f"v{LAYOUT_VERSION}" / key[:2] / key


def test_entry_folder_holds_the_files_and_a_manifest(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    before = time.time()
    entry = cache.put(key, record, files)
    assert sorted(os.listdir(entry.path)) == [
        "contract.json",
        "kernel.cubin",
        "kernel.ptx",
        "manifest.json",
    ]
    manifest = json.loads((entry.path / "manifest.json").read_text())
    assert manifest["layout_version"] == LAYOUT_VERSION
    assert manifest["key"] == key
    assert manifest["record"] == record
    assert before <= manifest["created"] <= time.time()
    assert manifest["files"] == [
        {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        for name, data in sorted(files.items())
    ]


def test_a_hit_marks_last_use_on_the_folder_without_rewriting_the_manifest(
    cache: Cache, kernel
) -> None:
    key, record, files = kernel()
    entry = cache.put(key, record, files)
    old = time.time() - 3600
    os.utime(entry.path, (old, old))
    manifest_before = (entry.path / "manifest.json").stat()
    assert cache.get(key) is not None
    assert entry.path.stat().st_mtime > old + 3000
    assert cache.info(key).last_used == entry.path.stat().st_mtime
    manifest_after = (entry.path / "manifest.json").stat()
    assert manifest_after.st_mtime_ns == manifest_before.st_mtime_ns
    assert manifest_after.st_ino == manifest_before.st_ino


def test_get_or_build_builds_once(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    calls = []

    def build() -> dict[str, bytes]:
        calls.append(1)
        return files

    _, built_first = cache.get_or_build(key, record, build)
    second, built_second = Cache(cache.root).get_or_build(key, record, build)
    assert (built_first, built_second) == (True, False)
    assert calls == [1]
    assert dict(second.files) == files


def test_a_miss_is_none(cache: Cache, kernel) -> None:
    assert cache.get(kernel()[0]) is None


def test_key_must_be_the_records_key(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    with pytest.raises(ValueError, match="not cache_key"):
        cache.put(key, {**record, "arch": "sm_80"}, files)
    with pytest.raises(ValueError, match="64 lowercase hex"):
        cache.get(key.upper())
    with pytest.raises(ValueError, match="not cache_key"):
        cache.get_or_build(key, {}, lambda: files)


@pytest.mark.parametrize("name", ["manifest.json", "../x", ".hidden", "a/b", "", "-rf"])
def test_file_names_are_checked(cache: Cache, kernel, name: str) -> None:
    key, record, _ = kernel()
    with pytest.raises(ValueError, match="cannot hold a file"):
        cache.put(key, record, {name: b"x"})


def test_files_must_be_bytes_and_at_least_one(cache: Cache, kernel) -> None:
    key, record, _ = kernel()
    with pytest.raises(TypeError, match="must be bytes"):
        cache.put(key, record, {"kernel.ptx": "text"})
    with pytest.raises(ValueError, match="at least one file"):
        cache.put(key, record, {})


def test_tuning_records_round_trip_and_are_entries(cache: Cache) -> None:
    best = {"config": {"BLOCK": 256, "WARPS": 4}, "time_ms": 0.0123}
    assert cache.get_record("autotune", "saxpy/sm_90/N=4096") is None
    cache.put_record("autotune", "saxpy/sm_90/N=4096", best)
    assert cache.get_record("autotune", "saxpy/sm_90/N=4096") == best
    assert Cache(cache.root).get_record("autotune", "saxpy/sm_90/N=4096") == best
    assert cache.get_record("other", "saxpy/sm_90/N=4096") is None
    key = record_key("autotune", "saxpy/sm_90/N=4096")
    assert cache.info(key).record == {
        "record_namespace": "autotune",
        "record_key": "saxpy/sm_90/N=4096",
    }
    assert key == cache_key(cache.info(key).record)


def test_records_must_be_json(cache: Cache) -> None:
    with pytest.raises(ValueError):
        cache.put_record("autotune", "k", {"time": float("nan")})
    with pytest.raises(ValueError, match="namespace"):
        cache.put_record("", "k", {})


def test_entries_lists_most_recent_first(cache: Cache, kernel) -> None:
    keys = []
    for name in ("a", "b", "c"):
        key, record, files = kernel(name)
        cache.put(key, record, files)
        keys.append(key)
    cache.get(keys[0])
    listed = cache.entries()
    assert [info.key for info in listed] == [keys[0], keys[2], keys[1]]
    assert [info.record["kernel"] for info in listed] == ["a", "c", "b"]
    entry_path: Path = cache.get(keys[1]).path
    assert listed[2].size == sum(item.stat().st_size for item in entry_path.iterdir())


def test_remove_and_clear(cache: Cache, kernel) -> None:
    key_a, record_a, files_a = kernel("a")
    key_b, record_b, files_b = kernel("b")
    cache.put(key_a, record_a, files_a)
    cache.put(key_b, record_b, files_b)
    assert cache.remove(key_a) is True
    assert cache.remove(key_a) is False
    assert cache.keys() == [key_b]
    assert cache.clear() == 1
    assert cache.keys() == []
    assert os.listdir(cache.root / "v1" / "tmp") == []
