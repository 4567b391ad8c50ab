"""The manifest of an entry: what a reader checks before it trusts a single byte.

An entry's folder holds the caller's files and ``manifest.json``; the manifest names every file
with its size and sha256, and the key record whose canonical hash is the key.  ``verify_files``
is the whole integrity rule: a reader loads an entry only when it passes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from phobos.cache.kernel import CONTRACT_FILE
from phobos.cache.key import cache_key

LAYOUT_VERSION = 1
MANIFEST_NAME = "manifest.json"
MAX_MANIFEST_BYTES = 64 * 1024**2  # a larger manifest is refused unread
RECORD_FILE = "record.json"
JSON_OBJECT_FILES = (RECORD_FILE, CONTRACT_FILE)  # an entry's file by these names is a JSON object
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


class CorruptEntry(Exception):
    """An entry that fails its check; the message says what is wrong, for the warning."""


def check_file_name(name: str) -> str:
    """Return ``name`` if an entry may hold a file by that name, else raise ``ValueError``."""
    if not isinstance(name, str) or not _FILE_NAME.fullmatch(name) or name == MANIFEST_NAME:
        raise ValueError(
            f"an entry cannot hold a file named {name!r}: use letters, digits, '_', '.', '-' "
            f"(not leading '.' or '-', at most 128 characters) and not {MANIFEST_NAME!r}"
        )
    return name


def build_manifest(
    key: str, record: Mapping, files: Mapping[str, bytes], created: float
) -> dict[str, Any]:
    return {
        "layout_version": LAYOUT_VERSION,
        "key": key,
        "record": dict(record),
        "files": [
            {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, data in sorted(files.items())
        ],
        "created": created,
    }


def encode_manifest(manifest: Mapping[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def parse_manifest(data: bytes, key: str) -> dict[str, Any]:
    """The manifest in ``data`` for the entry ``key``; ``CorruptEntry`` if it is not one."""
    manifest = parse_json_object(data, MANIFEST_NAME)
    if manifest.get("layout_version") != LAYOUT_VERSION:
        raise CorruptEntry(
            f"{MANIFEST_NAME} has layout_version {manifest.get('layout_version')!r}, "
            f"expected {LAYOUT_VERSION}"
        )
    if manifest.get("key") != key:
        raise CorruptEntry(f"{MANIFEST_NAME} names key {manifest.get('key')!r}")
    record = manifest.get("record")
    try:
        record_key = cache_key(record) if isinstance(record, dict) else None
    except (TypeError, ValueError, RecursionError):
        record_key = None
    if record_key != key:
        raise CorruptEntry(f"{MANIFEST_NAME} holds a key record that does not hash to the key")
    created = manifest.get("created")
    if (
        not isinstance(created, (int, float))
        or isinstance(created, bool)
        or not math.isfinite(created)
        or not 0 <= created < 2**40
    ):
        raise CorruptEntry(f"{MANIFEST_NAME} has no 'created' time")
    files = manifest.get("files")
    if not isinstance(files, list) or not all(_is_file_spec(spec) for spec in files):
        raise CorruptEntry(f"{MANIFEST_NAME} has a malformed 'files' list")
    names = [spec["name"] for spec in files]
    if len(set(names)) != len(names):
        raise CorruptEntry(f"{MANIFEST_NAME} lists a file twice")
    return manifest


def parse_json_object(data: bytes, name: str) -> dict[str, Any]:
    """The JSON object in ``data`` (the file ``name``); ``CorruptEntry`` for anything else:
    not UTF-8, not JSON, nested too deeply to parse, or not an object."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptEntry(f"{name} is not valid JSON ({exc})") from None
    except RecursionError:
        raise CorruptEntry(f"{name} is nested too deeply to read") from None
    if not isinstance(value, dict):
        raise CorruptEntry(f"{name} is not a JSON object")
    return value


def check_contents(files: Mapping[str, bytes]) -> None:
    """Raise ``CorruptEntry`` unless each ``record.json`` and ``contract.json`` is a JSON object."""
    for name in JSON_OBJECT_FILES:
        if name in files:
            parse_json_object(files[name], repr(name))


def verify_files(manifest: Mapping[str, Any], files: Mapping[str, bytes]) -> None:
    """Raise ``CorruptEntry`` unless ``files`` are exactly the manifest's, byte for byte."""
    for spec in manifest["files"]:
        data = files.get(spec["name"])
        if data is None:
            raise CorruptEntry(f"file {spec['name']!r} is missing")
        if len(data) != spec["size"]:
            raise CorruptEntry(
                f"file {spec['name']!r} has {len(data)} bytes, the manifest says {spec['size']}"
            )
        if hashlib.sha256(data).hexdigest() != spec["sha256"]:
            raise CorruptEntry(f"file {spec['name']!r} does not match its sha256")


def _is_file_spec(spec: object) -> bool:
    if not isinstance(spec, dict):
        return False
    name, size, digest = spec.get("name"), spec.get("size"), spec.get("sha256")
    return (
        isinstance(name, str)
        and bool(_FILE_NAME.fullmatch(name))
        and name != MANIFEST_NAME
        and isinstance(size, int)
        and not isinstance(size, bool)
        and size >= 0
        and isinstance(digest, str)
        and bool(re.fullmatch(r"[0-9a-f]{64}", digest))
    )
