"""Many processes on one cache: racing puts, readers during writes, a writer killed mid-put,
and a second process reusing what the first built."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from phobos.cache import Cache, CacheWarning, cache_key
from phobos.cache import disk as disk_module

WRITERS = 6
READERS = 2

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses fork and SIGKILL")
_fork = multiprocessing.get_context("fork")


def _shared_record() -> dict:
    return {"kernel": "shared", "arch": "sm_90", "program": "kernel shared() {}"}


def _reporting(body):
    """Run ``body`` in the child; put its result, or the error, on the queue, so the parent
    never waits for a child that failed."""

    def run(*args) -> None:
        results = args[-1]
        warnings.simplefilter("error", CacheWarning)  # a torn or corrupt entry fails the child
        try:
            results.put(body(*args[:-1]))
        except BaseException as exc:
            results.put(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            raise

    return run


@_reporting
def _writer(root: Path, index: int, start) -> bytes:
    cache = Cache(root)
    shared = _shared_record()
    own = {"kernel": f"own{index}", "arch": "sm_90"}
    files = {"kernel.cubin": f"cubin from writer {index}".encode() * 500}
    start.wait()
    entry = cache.put(cache_key(shared), shared, files)
    cache.put(cache_key(own), own, {"kernel.cubin": f"own {index}".encode()})
    return entry.read("kernel.cubin")


@_reporting
def _reader(root: Path, start) -> int:
    cache = Cache(root)
    key = cache_key(_shared_record())
    start.wait()
    seen = 0
    for _ in range(300):
        entry = cache.get(key)
        if entry is not None:
            assert entry.read("kernel.cubin").startswith(b"cubin from writer ")
            seen += 1
    return seen


def test_racing_writers_and_readers_end_with_one_good_entry_per_key(root: Path) -> None:
    Cache(root)
    start = _fork.Barrier(WRITERS + READERS)
    results = _fork.Queue()
    children = [
        _fork.Process(target=_writer, args=(root, i, start, results)) for i in range(WRITERS)
    ]
    children += [_fork.Process(target=_reader, args=(root, start, results)) for _ in range(READERS)]
    for child in children:
        child.start()
    outcomes = [results.get(timeout=30) for _ in children]
    for child in children:
        child.join(timeout=30)
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    assert [child.exitcode for child in children] == [0] * len(children)

    cache = Cache(root)
    winner = cache.get(cache_key(_shared_record()))
    assert winner is not None
    cubins = [outcome for outcome in outcomes if isinstance(outcome, bytes)]
    assert cubins == [winner.read("kernel.cubin")] * WRITERS  # every writer got the winner
    assert len(cache.keys()) == 1 + WRITERS
    assert cache.verify() == []
    for index in range(WRITERS):
        own = cache.get(cache_key({"kernel": f"own{index}", "arch": "sm_90"}))
        assert own.read("kernel.cubin") == f"own {index}".encode()
    assert os.listdir(root / "v1" / "tmp") == []  # losers cleaned up their staged folders


def _killed_before_rename(root: Path, key: str, record: dict, files: dict) -> None:
    def die(staged: Path, folder: Path) -> bool:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    disk_module._rename_if_absent = die
    Cache(root).put(key, record, files)


def test_a_writer_killed_before_its_rename_leaves_no_entry(root: Path, kernel) -> None:
    key, record, files = kernel()
    cache = Cache(root)
    child = _fork.Process(target=_killed_before_rename, args=(root, key, record, files))
    child.start()
    child.join(timeout=30)
    assert child.exitcode == -signal.SIGKILL

    leftovers = list((root / "v1" / "tmp").iterdir())
    assert len(leftovers) == 1  # the staged folder, files written, never renamed
    assert sorted(os.listdir(leftovers[0])) == sorted([*files, "manifest.json"])
    assert cache.get(key) is None
    assert cache.keys() == []

    assert cache.prune().temp_folders == 0  # too young: it may be a live writer's
    old = os.path.getmtime(leftovers[0]) - 3600
    os.utime(leftovers[0], (old, old))
    assert cache.prune().temp_folders == 1
    assert list((root / "v1" / "tmp").iterdir()) == []

    entry, built = cache.get_or_build(key, record, lambda: files)
    assert built is True and dict(entry.files) == files


_SECOND_PROCESS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from phobos.cache import Cache, cache_key

    marker = Path(sys.argv[1])
    record = {"kernel": "saxpy", "arch": "sm_90", "program": "kernel saxpy() {}"}

    def build():
        marker.write_text("built")
        return {"kernel.cubin": b"cubin bytes", "kernel.ptx": b"ptx text"}

    entry, built = Cache().get_or_build(cache_key(record), record, build)
    assert entry.read("kernel.cubin") == b"cubin bytes"
    print("built" if built else "reused")
    """
)


def test_a_second_process_reuses_what_the_first_built(root: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PHOBOS_CACHE_DIR": str(root)}
    marker = tmp_path / "build-was-called"

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", _SECOND_PROCESS, str(marker)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout.strip()

    assert run() == "built"
    assert marker.read_text() == "built"
    marker.unlink()
    assert run() == "reused"
    assert not marker.exists()
