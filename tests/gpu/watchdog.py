"""A watchdog for GPU tests: a test that has not finished after its time ends the test run.

A kernel that deadlocks (an mbarrier phase no copy completes, say) never returns to
Python, so no exception or alarm handler can fail the test: the process must end from
outside the stuck call.  ``faulthandler`` does that from its own thread: after
``seconds`` it prints every thread's Python stack (the hung test's name among the
frames) and exits with status 1, so ``benchmarks/gpu_suite.py`` records the failure and
goes on to the benchmarks instead of waiting forever.
"""

from __future__ import annotations

import faulthandler
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# Seconds a GPU test may take (the slowest measured take under a minute); 0 turns it off.
SECONDS = float(os.environ.get("PHOBOS_GPU_TEST_WATCHDOG", "300"))


@contextmanager
def armed(seconds: float = SECONDS, what: str = "") -> Iterator[None]:
    """Within the block, the process ends ``seconds`` from now with every thread's stack."""
    if seconds <= 0:
        yield
        return
    if what:
        print(f"\n[watchdog] {what}: {seconds:g} s", file=sys.stderr, flush=True)
    faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
