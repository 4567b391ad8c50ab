"""A damaged entry is never loaded: it is found, removed with a warning, and rebuilt."""

from __future__ import annotations

import hashlib
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


def _edit_manifest(path: Path, **fields: object) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(fields)
    (path / "manifest.json").write_text(json.dumps(manifest))


def _deep_manifest(path: Path) -> None:
    """Too deep for Python's JSON parser: it raises RecursionError, not ValueError."""
    (path / "manifest.json").write_text('{"record": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _deep_record(path: Path) -> None:
    """Near the depth where parsing or hashing the key record (both recursive) gives up."""
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["record"] = "RECORD"
    deep = '{"x": ' + "[" * 950 + "]" * 950 + "}"
    (path / "manifest.json").write_text(json.dumps(manifest).replace('"RECORD"', deep))


def _rewrite(path: Path, name: str, data: bytes) -> None:
    """What a foreign writer does: new bytes for a file, and a manifest that agrees."""
    (path / name).write_bytes(data)
    manifest = json.loads((path / "manifest.json").read_text())
    for spec in manifest["files"]:
        if spec["name"] == name:
            spec.update(size=len(data), sha256=hashlib.sha256(data).hexdigest())
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
    "deep manifest": (_deep_manifest, "nested too deeply"),
    "deep record": (_deep_record, "manifest.json"),
    "manifest not an object": (
        lambda p: (p / "manifest.json").write_text("[1, 2]"),
        "not a JSON object",
    ),
    "manifest not UTF-8": (lambda p: (p / "manifest.json").write_bytes(b"\xff\xfe{"), "JSON"),
    "files not a list": (lambda p: _edit_manifest(p, files="kernel.cubin"), "malformed 'files'"),
    "size as text": (
        lambda p: _edit_manifest(
            p, files=[{"name": "kernel.cubin", "size": "20", "sha256": "0" * 64}]
        ),
        "malformed 'files'",
    ),
    "created as text": (lambda p: _edit_manifest(p, created="yesterday"), "'created'"),
    "created not finite": (lambda p: _edit_manifest(p, created=float("nan")), "'created'"),
    "created true": (lambda p: _edit_manifest(p, created=True), "'created'"),
    "contract not JSON": (
        lambda p: _rewrite(p, "contract.json", b"\x7fELF not json"),
        "'contract.json' is not valid JSON",
    ),
    "contract too deep": (
        lambda p: _rewrite(p, "contract.json", b"[" * 100_000 + b"]" * 100_000),
        "nested too deeply",
    ),
    "contract an array": (
        lambda p: _rewrite(p, "contract.json", b"[]"),
        "'contract.json' is not a JSON object",
    ),
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


RECORD_DAMAGE = {
    "not JSON": b"{not json",
    "an array": b"[1, 2]",
    "too deep": b"[" * 100_000 + b"]" * 100_000,
    "not UTF-8": b"\xff",
}


@pytest.mark.parametrize("damage", RECORD_DAMAGE, ids=list(RECORD_DAMAGE))
def test_a_record_that_is_not_a_json_object_is_a_miss(cache: Cache, damage: str) -> None:
    cache.put_record("autotune", "k", {"choice": {"B": 16}})
    (key,) = cache.keys()
    _rewrite(cache.info(key).path, "record.json", RECORD_DAMAGE[damage])
    problems = cache.verify()
    assert [p.key for p in problems] == [key] and "'record.json'" in problems[0].message
    with pytest.warns(CacheWarning, match="record.json"):
        assert cache.get_record("autotune", "k") is None
    assert cache.keys() == []
    cache.put_record("autotune", "k", {"choice": {"B": 32}})
    assert cache.get_record("autotune", "k") == {"choice": {"B": 32}}


def test_verify_and_the_cli_report_a_deep_manifest_without_a_traceback(
    cache: Cache, kernel, capsys: pytest.CaptureFixture[str]
) -> None:
    from phobos.cache.cli import main

    key, record, files = kernel()
    _deep_manifest(cache.put(key, record, files).path)
    assert main(["--root", str(cache.root), "list"]) == 0
    assert main(["--root", str(cache.root), "info", key[:10]]) == 1
    assert main(["--root", str(cache.root), "verify"]) == 1
    out = capsys.readouterr().out
    assert f"BAD {key}: manifest.json is nested too deeply to read" in out
    assert main(["--root", str(cache.root), "verify", "--remove"]) == 1
    assert main(["--root", str(cache.root), "verify"]) == 0
    entry, built = cache.get_or_build(key, record, lambda: files)
    assert built and dict(entry.files) == files
