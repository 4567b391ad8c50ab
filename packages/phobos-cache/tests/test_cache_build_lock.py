"""The build lock: callers that miss one key at once build it once; a dead or stuck builder, a
lock file left behind, or a folder that cannot be locked never keeps anyone from their entry."""

from __future__ import annotations

import errno
import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from phobos.cache import Cache, CacheWarning, cache_key
from phobos.cache import lock as lock_module

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="uses fork and SIGKILL")
_fork = multiprocessing.get_context("fork")
PROCESSES = 6


def _record() -> dict:
    return {"kernel": "shared", "arch": "sm_90", "program": "kernel shared() {}"}


def _lock_path(root: Path, key: str) -> Path:
    return root / "v1" / "locks" / f"{key}.lock"


def _counting_build(log: Path, seconds: float = 0.0):
    """A build that appends one line to ``log`` per call, so a test can count the builds."""

    def build() -> dict[str, bytes]:
        with open(log, "a") as file:
            file.write(f"{os.getpid()}\n")
        time.sleep(seconds)
        return {"kernel.cubin": f"cubin built by {os.getpid()}".encode()}

    return build


def _builds(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _miss_at_once(root: Path, log: Path, start, results) -> None:
    try:
        warnings.simplefilter("error", CacheWarning)
        cache = Cache(root)
        record = _record()
        start.wait()
        entry, built = cache.get_or_build(cache_key(record), record, _counting_build(log, 0.2))
        results.put((built, entry.read("kernel.cubin")))
    except BaseException as exc:
        results.put(RuntimeError(repr(exc)))
        raise


def test_processes_that_miss_one_key_at_once_build_it_once(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "builds.log"
    Cache(root)
    start = _fork.Barrier(PROCESSES)
    results = _fork.Queue()
    children = [
        _fork.Process(target=_miss_at_once, args=(root, log, start, results))
        for _ in range(PROCESSES)
    ]
    for child in children:
        child.start()
    outcomes = [results.get(timeout=30) for _ in children]
    for child in children:
        child.join(timeout=30)
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    assert _builds(log) == 1
    assert sorted(built for built, _ in outcomes) == [False] * (PROCESSES - 1) + [True]
    builder = log.read_text().strip()
    assert {cubin for _, cubin in outcomes} == {f"cubin built by {builder}".encode()}
    assert os.listdir(root / "v1" / "locks") == []  # the builder deleted its lock file
    assert os.listdir(root / "v1" / "tmp") == []


def test_threads_that_miss_one_key_at_once_build_it_once(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "builds.log"
    cache = Cache(root)
    record = _record()
    start = threading.Barrier(4)
    outcomes: list[bool] = []

    def miss() -> None:
        start.wait()
        _, built = cache.get_or_build(cache_key(record), record, _counting_build(log, 0.1))
        outcomes.append(built)

    threads = [threading.Thread(target=miss) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert _builds(log) == 1
    assert sorted(outcomes) == [False, False, False, True]


def _build_forever(root: Path, holding: Path) -> None:
    def build() -> dict[str, bytes]:
        holding.write_text("holding the lock")
        time.sleep(60)
        raise AssertionError("the test kills this process first")

    record = _record()
    Cache(root).get_or_build(cache_key(record), record, build)


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_builder_killed_while_holding_the_lock_hands_over_to_a_waiter(
    root: Path, tmp_path: Path
) -> None:
    holding, log = tmp_path / "holding", tmp_path / "builds.log"
    key, record = cache_key(_record()), _record()
    builder = _fork.Process(target=_build_forever, args=(root, holding))
    builder.start()
    _wait_for(holding)
    with open(_lock_path(root, key), "rb") as lock_file, pytest.raises(BlockingIOError):
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a C++ runtime would see it

    outcome: list[bool] = []
    waiter = threading.Thread(
        target=lambda: outcome.append(
            Cache(root).get_or_build(key, record, _counting_build(log))[1]
        )
    )
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive() and _builds(log) == 0  # waiting for the builder

    os.kill(builder.pid, signal.SIGKILL)
    builder.join(timeout=30)
    killed = time.monotonic()
    waiter.join(timeout=30)
    assert time.monotonic() - killed < 5
    assert outcome == [True] and _builds(log) == 1
    assert Cache(root).get(key).read("kernel.cubin") == f"cubin built by {os.getpid()}".encode()
    assert not _lock_path(root, key).exists()


def test_a_lock_file_left_behind_blocks_no_one(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "builds.log"
    key, record = cache_key(_record()), _record()
    cache = Cache(root, build_wait=30)
    _lock_path(root, key).write_text("left by a killed builder")
    started = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        entry, built = cache.get_or_build(key, record, _counting_build(log))
    assert time.monotonic() - started < 1
    assert built and _builds(log) == 1 and entry.read("kernel.cubin")
    assert not _lock_path(root, key).exists()


def test_prune_deletes_the_lock_files_no_one_holds(root: Path) -> None:
    cache = Cache(root)
    free, held = _lock_path(root, "a" * 64), _lock_path(root, "b" * 64)
    free.write_text("")
    held.write_text("")
    with open(held, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        cache.prune()
        assert not free.exists() and held.exists()
    cache.clear()
    assert os.listdir(root / "v1" / "locks") == []


def test_a_waiter_that_times_out_builds_with_a_warning(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "builds.log"
    key, record = cache_key(_record()), _record()
    cache = Cache(root, build_wait=0.2)
    with open(_lock_path(root, key), "wb") as stuck_builder:
        fcntl.flock(stuck_builder, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.warns(CacheWarning, match=rf"waited 0.2 s .* build entry {key}"):
            entry, built = cache.get_or_build(key, record, _counting_build(log))
        assert time.monotonic() - started >= 0.2
    assert built and _builds(log) == 1
    assert cache.get(key) == entry


def test_a_filesystem_without_locks_just_builds(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_locks(*_args: object, **_options: object) -> bool:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(lock_module, "lock_descriptor", no_locks)
    log = tmp_path / "builds.log"
    key, record = cache_key(_record()), _record()
    cache = Cache(root)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        _, built = cache.get_or_build(key, record, _counting_build(log))
        _, built_again = cache.get_or_build(key, record, _counting_build(log))
    assert (built, built_again) == (True, False) and _builds(log) == 1


def test_without_filelock_a_process_builds_without_a_lock(root: Path, tmp_path: Path) -> None:
    """The sources on PYTHONPATH, filelock not installed: the cache works, it only cannot lock."""
    script = (
        "import sys, warnings\n"
        "sys.modules['filelock'] = None\n"
        "from phobos.cache import Cache, CacheWarning, cache_key, lock\n"
        "warnings.simplefilter('error', CacheWarning)\n"
        "record = {'kernel': 'shared', 'arch': 'sm_90', 'program': 'kernel shared() {}'}\n"
        f"cache = Cache({str(root)!r})\n"
        "with lock.build_lock(cache.root / 'v1' / 'locks' / 'x.lock', wait=0) as held:\n"
        "    print(held.name)\n"
        "build = lambda: {'kernel.cubin': b'cubin'}\n"
        "print([cache.get_or_build(cache_key(record), record, build)[1] for _ in range(2)])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["UNAVAILABLE", "[True,", "False]"]
    assert os.listdir(root / "v1" / "locks") == []


def test_a_memory_only_cache_builds_without_a_lock(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    log = tmp_path / "builds.log"
    key, record = cache_key(_record()), _record()
    with pytest.warns(CacheWarning, match="in memory"):
        cache = Cache(tmp_path / "a-file" / "cache", build_wait=0)
    assert cache.in_memory
    _, built = cache.get_or_build(key, record, _counting_build(log))
    entry, built_again = cache.get_or_build(key, record, _counting_build(log))
    assert (built, built_again) == (True, False) and _builds(log) == 1
    assert entry.path is None


@pytest.mark.parametrize("seconds", [-1, float("nan"), "10", True])
def test_build_wait_must_be_seconds(root: Path, seconds: object) -> None:
    with pytest.raises(ValueError, match="build_wait"):
        Cache(root, build_wait=seconds)


def test_a_waiter_woken_by_a_deleted_lock_file_locks_the_one_at_the_path(root: Path) -> None:
    """The holder deletes the file before letting go, so the waiter it wakes holds a deleted
    file; it must start over on the file now at the path, or a newcomer would hold that one too
    and both would build."""
    Cache(root)
    path = _lock_path(root, "c" * 64)
    waiter_holds, newcomer_done = threading.Event(), threading.Event()
    seen: list[lock_module.Lock] = []

    def waiter() -> None:
        with lock_module.build_lock(path, wait=30) as lock:
            seen.append(lock)
            waiter_holds.set()
            newcomer_done.wait(timeout=30)

    with lock_module.build_lock(path, wait=0) as first:
        thread = threading.Thread(target=waiter)
        thread.start()
        time.sleep(0.1)  # the waiter has opened the file and polls its lock
    assert first is lock_module.Lock.HELD
    assert waiter_holds.wait(timeout=30)
    with lock_module.build_lock(path, wait=0) as newcomer:
        assert newcomer is lock_module.Lock.TIMED_OUT
    newcomer_done.set()
    thread.join(timeout=30)
    assert seen == [lock_module.Lock.HELD]
    assert not path.exists()
