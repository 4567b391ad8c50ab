"""The kernel cache's fault figures, measured (no GPU needed): ``python benchmarks/probe_cache_faults.py``.

1. 8 processes x 10 rounds, all missing one new key per round at once: errors, and compiles beyond
   the one per round (duplicates).
2. 100 writers SIGKILLed at a random moment while putting an entry: bad entries served afterwards.
3. 100 random bit flips in an entry's files: how many the next read detects.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

from phobos.cache import Cache, CacheWarning, cache_key

PROCESSES, ROUNDS, KILLS, FLIPS = 8, 10, 100, 100
_fork = multiprocessing.get_context("fork")


def _files(tag: str, size: int = 64 * 1024) -> dict[str, bytes]:
    body = (tag.encode() * (size // len(tag) + 1))[:size]
    return {"kernel.ptx": b"// " + body, "kernel.cubin": body, "contract.json": b'{"k": 1}'}


def _compile_once(root: Path, log: Path, round_: int, start, results) -> None:
    try:
        warnings.simplefilter("error", CacheWarning)
        record = {"kernel": "one", "round": round_}
        start.wait()

        def build() -> dict[str, bytes]:
            with open(log, "a") as file:
                file.write(f"{round_}\n")
            time.sleep(0.05)  # a compile
            return _files(f"round {round_}")

        entry, _ = Cache(root).get_or_build(cache_key(record), record, build)
        assert entry.read("kernel.cubin") == _files(f"round {round_}")["kernel.cubin"]
        results.put(None)
    except BaseException as exc:
        results.put(repr(exc))


def concurrent_compiles(root: Path) -> tuple[int, int]:
    log = root.parent / "builds.log"
    errors = 0
    for round_ in range(ROUNDS):
        start, results = _fork.Barrier(PROCESSES), _fork.Queue()
        children = [
            _fork.Process(target=_compile_once, args=(root, log, round_, start, results))
            for _ in range(PROCESSES)
        ]
        for child in children:
            child.start()
        errors += sum(results.get(timeout=120) is not None for _ in children)
        for child in children:
            child.join(timeout=60)
            errors += child.exitcode != 0
    builds = log.read_text().splitlines()
    return errors, len(builds) - ROUNDS


def _put_until_killed(root: Path, index: int) -> None:
    record = {"kernel": "killed", "index": index}
    Cache(root).put(cache_key(record), record, _files(f"writer {index}", size=4 * 1024 * 1024))


def killed_writers(root: Path) -> tuple[int, int]:
    bad = whole = 0
    started = time.perf_counter()
    child = _fork.Process(target=_put_until_killed, args=(root, -1))  # how long one put takes
    child.start()
    child.join()
    span = 1.5 * (time.perf_counter() - started)  # kill anywhere in it, or just after
    for index in range(KILLS):
        child = _fork.Process(target=_put_until_killed, args=(root, index))
        child.start()
        time.sleep(random.uniform(0.0, span))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        record = {"kernel": "killed", "index": index}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheWarning)
            entry = Cache(root).get(cache_key(record))
        if entry is not None:
            whole += 1
            bad += dict(entry.files) != _files(f"writer {index}", 4 * 1024 * 1024)
    return bad, whole


def bit_flips(root: Path) -> int:
    detected = 0
    cache = Cache(root)
    for index in range(FLIPS):
        record = {"kernel": "flipped", "index": index}
        entry = cache.put(cache_key(record), record, _files(f"flip {index}"))
        target = entry.path / random.choice(sorted(entry.files))
        data = bytearray(target.read_bytes())
        data[random.randrange(len(data))] ^= 1 << random.randrange(8)
        target.write_bytes(bytes(data))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheWarning)
            detected += cache.get(entry.key) is None
    return detected


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="phobos-faults-") as scratch:
        base = Path(scratch)
        errors, duplicates = concurrent_compiles(base / "a" / "cache")
        print(f"{PROCESSES} processes x {ROUNDS} rounds: {errors} errors, {duplicates} duplicates")
        bad, whole = killed_writers(base / "b" / "cache")
        print(
            f"{KILLS} writers SIGKILLed mid-put: {bad} bad entries served "
            f"({whole} had finished, {KILLS - whole} left no entry)"
        )
        detected = bit_flips(base / "c" / "cache")
        print(f"{FLIPS} random bit flips in entry files: {detected}/{FLIPS} detected")
    return 0 if (errors, duplicates, bad, detected) == (0, 0, 0, FLIPS) else 1


if __name__ == "__main__":
    sys.exit(main())
