"""A put syncs an entry's files and folders to the disk before and after its rename, so a power
loss cannot leave an entry in place whose files are empty."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from phobos.cache import Cache
from phobos.cache import disk as disk_module

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="names synced descriptors via /proc"
)


def test_files_are_synced_before_the_rename_and_the_shard_after(
    root: Path, kernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, record, files = kernel()
    cache = Cache(root)
    events: list[tuple[str, str]] = []
    real_fsync, real_rename = os.fsync, disk_module._rename_if_absent

    def recording_fsync(descriptor: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        real_fsync(descriptor)

    def recording_rename(staged: Path, folder: Path) -> bool:
        events.append(("rename", str(staged)))
        return real_rename(staged, folder)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(disk_module, "_rename_if_absent", recording_rename)
    entry = cache.put(key, record, files)

    rename = next(index for index, (kind, _) in enumerate(events) if kind == "rename")
    staged = Path(events[rename][1])
    before = {Path(path) for kind, path in events[:rename] if kind == "fsync"}
    after = {Path(path) for kind, path in events[rename + 1 :] if kind == "fsync"}
    assert before >= {staged / name for name in [*files, "manifest.json"]} | {staged}
    assert entry.path.parent in after
    assert root / "v1" in before  # the new shard folder's name
