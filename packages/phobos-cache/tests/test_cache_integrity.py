"""A damaged entry is never loaded: it is found, removed with a warning, and rebuilt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from phobos.cache import Cache, CacheWarning


def _truncate(path: Path) -> None:
    ptx = path / "kernel.ptx"
    ptx.write_bytes(ptx.read_bytes()[:10])


def _flip_a_bit(path: Path) -> None:
    cubin = path / "kernel.cubin"
    data = bytearray(cubin.read_bytes())
    data[100] ^= 0x04
    cubin.write_bytes(bytes(data))


def _delete_contract(path: Path) -> None:
    (path / "contract.json").unlink()


def _garble_manifest(path: Path) -> None:
    (path / "manifest.json").write_bytes(b'{"layout_version": 1, "key": ')


def _delete_manifest(path: Path) -> None:
    (path / "manifest.json").unlink()


def _change_record(path: Path) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["record"]["arch"] = "sm_80"
    (path / "manifest.json").write_text(json.dumps(manifest))


def _lie_about_sha(path: Path) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["files"][0]["sha256"] = "0" * 64
    (path / "manifest.json").write_text(json.dumps(manifest))


def _future_layout(path: Path) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["layout_version"] = 2
    (path / "manifest.json").write_text(json.dumps(manifest))


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (_truncate, "'kernel.ptx' has 10 bytes"),
    "bit flip": (_flip_a_bit, "'kernel.cubin' does not match its sha256"),
    "missing file": (_delete_contract, "'contract.json' is missing"),
    "garbled manifest": (_garble_manifest, "not valid JSON"),
    "missing manifest": (_delete_manifest, "cannot read manifest.json"),
    "changed record": (_change_record, "does not hash to the key"),
    "wrong sha": (_lie_about_sha, "does not match its sha256"),
    "other layout": (_future_layout, "layout_version 2"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_damage_is_found_removed_with_a_warning_and_rebuilt(
    cache: Cache, kernel, damage: str
) -> None:
    spoil, problem = DAMAGE[damage]
    key, record, files = kernel()
    entry = cache.put(key, record, files)
    spoil(entry.path)

    assert problem in cache.check(key).message
    with pytest.warns(CacheWarning) as caught:
        assert cache.get(key) is None
    assert len(caught) == 1
    message = str(caught[0].message)
    assert key in message and problem in message
    assert not entry.path.exists()

    rebuilt, built = cache.get_or_build(key, record, lambda: files)
    assert built is True
    assert dict(rebuilt.files) == files
    assert cache.check(key) is None


def test_get_or_build_rebuilds_a_bit_flipped_cubin_in_one_call(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    _flip_a_bit(cache.put(key, record, files).path)
    with pytest.warns(CacheWarning, match="kernel.cubin"):
        entry, built = cache.get_or_build(key, record, lambda: files)
    assert built is True
    assert entry.read("kernel.cubin") == files["kernel.cubin"]
    assert (entry.path / "kernel.cubin").read_bytes() == files["kernel.cubin"]


def test_verify_reports_without_removing_then_removes(cache: Cache, kernel) -> None:
    good_key, good_record, good_files = kernel("good")
    bad_key, bad_record, bad_files = kernel("bad")
    cache.put(good_key, good_record, good_files)
    _truncate(cache.put(bad_key, bad_record, bad_files).path)

    problems = cache.verify()
    assert [(p.key, "has 10 bytes" in p.message) for p in problems] == [(bad_key, True)]
    assert str(problems[0]).startswith(bad_key)
    assert sorted(cache.keys()) == sorted([good_key, bad_key])

    assert len(cache.verify(remove=True)) == 1
    assert cache.keys() == [good_key]
    assert cache.verify() == []


def test_a_put_over_a_corrupt_entry_replaces_it(cache: Cache, kernel) -> None:
    key, record, files = kernel()
    _flip_a_bit(cache.put(key, record, files).path)
    with pytest.warns(CacheWarning, match="does not match"):
        entry = cache.put(key, record, files)
    assert entry.read("kernel.cubin") == files["kernel.cubin"]
    assert cache.check(key) is None
