"""Timing a variant: device events on the GPU, ``perf_counter`` in the CPU interpreter.

``Timer.time(run, prepare, repeats)`` calls ``prepare()`` (restore in-place
arguments) before each repeat, outside the measured interval, and returns one
time in milliseconds per repeat.  On the GPU every repeat is preceded by a write
to a buffer twice the size of the L2 cache, so no repeat reads what the previous
one left in L2; all repeats are queued before the host waits, so the GPU never
idles between them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Protocol

from phobos.launch import CudaDriver, shared_driver

MIN_FLUSH_BYTES = 64 << 20


class Timer(Protocol):
    """How a tuning problem's variants are timed (``kind`` goes in the report)."""

    kind: str

    def synchronize(self) -> None: ...
    def time(
        self, run: Callable[[], None], prepare: Callable[[], None], repeats: int
    ) -> list[float]: ...
    def close(self) -> None: ...


class CpuTimer:
    """Wall-clock times of the CPU interpreter: what a variant costs there, not on a GPU."""

    kind = "CPU interpreter (perf_counter), not GPU times"

    def synchronize(self) -> None:
        return None

    def time(
        self, run: Callable[[], None], prepare: Callable[[], None], repeats: int
    ) -> list[float]:
        times = []
        for _ in range(repeats):
            prepare()
            start = time.perf_counter()
            run()
            times.append((time.perf_counter() - start) * 1e3)
        return times

    def close(self) -> None:
        return None


class DeviceTimer:
    """CUDA events on ``stream`` (the stream the variants launch on), L2 flushed per repeat.

    Create it with the device's context current (inside a launch it is: the array
    library made it current).  The driver calls go through phobos-launch's binding
    (``driver``: its ``CudaDriver``, by default the process's one).
    """

    kind = "GPU (CUDA events, L2 flushed)"

    def __init__(self, stream: int, driver: CudaDriver | None = None) -> None:
        self._cuda = driver or shared_driver()
        self._stream = stream
        l2 = self._cuda.l2_cache_bytes(self._cuda.current_device())
        self._flush_bytes = max(2 * l2, MIN_FLUSH_BYTES)
        self._flush = self._cuda.allocate(self._flush_bytes)

    def synchronize(self) -> None:
        self._cuda.synchronize_stream(self._stream)

    def time(
        self, run: Callable[[], None], prepare: Callable[[], None], repeats: int
    ) -> list[float]:
        cuda, stream = self._cuda, self._stream
        events = [(cuda.create_event(True), cuda.create_event(True)) for _ in range(repeats)]
        try:
            for start, end in events:
                prepare()
                cuda.memset_async(self._flush, self._flush_bytes, stream)
                cuda.record_event(start, stream)
                run()
                cuda.record_event(end, stream)
            return [cuda.elapsed_ms(start, end) for start, end in events]
        finally:
            self.synchronize()
            for pair in events:
                for event in pair:
                    cuda.destroy_event(event)

    def close(self) -> None:
        if self._flush:
            self._cuda.free(self._flush)
            self._flush = 0


def median(times: list[float]) -> float:
    return statistics.median(times)
