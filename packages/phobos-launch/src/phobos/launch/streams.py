"""Which stream a launch goes on, and ordering it after the streams its arrays were made on.

The launch stream is ``stream=`` when given, else the current stream of the array
library the arguments come from (torch or CuPy, found in ``sys.modules``, never
imported), else the legacy default stream.  An array's CAI v3 ``stream`` is where
its producer works: a launch on another stream first waits for it (an event recorded
on the producer's stream, waited on by the launch stream).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from phobos.launch.driver import Driver

LEGACY_DEFAULT_STREAM = 1  # CU_STREAM_LEGACY; the CAI spells the legacy default stream 1
DEFAULT_STREAM = 0  # what the driver API takes for the legacy default stream

CurrentStream = Callable[[int], int]


def stream_handle(stream: Any) -> int:
    """The ``CUstream`` of ``stream=``: an int, torch's ``.cuda_stream`` or CuPy's ``.ptr``."""
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    raise TypeError(
        f"stream= takes a CUstream handle (int), a torch.cuda.Stream or a cupy.cuda.Stream, "
        f"got {type(stream).__name__}"
    )


def current_stream_of(library: str | None) -> CurrentStream:
    """The function giving a device's current stream in ``library`` ("torch", "cupy" or None)."""
    module = sys.modules.get(library) if library else None
    if module is None:
        return _default_stream
    if library == "torch":
        raw = getattr(getattr(module, "_C", None), "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw
        return lambda device: module.cuda.current_stream(device).cuda_stream
    return lambda device: module.cuda.get_current_stream().ptr


def _default_stream(device: int) -> int:
    return DEFAULT_STREAM


def library_of(arrays: Iterable[Any]) -> str | None:
    """The array library of the first argument that belongs to torch or CuPy."""
    for arg in arrays:
        root = type(arg).__module__.partition(".")[0]
        if root in ("torch", "cupy"):
            return root
    return None


def same_stream(a: int, b: int) -> bool:
    """Whether two handles name one stream (0 and 1 both mean the legacy default stream)."""
    return (a or LEGACY_DEFAULT_STREAM) == (b or LEGACY_DEFAULT_STREAM)


class StreamOrdering:
    """Makes a launch stream wait for producer streams; one reusable event per thread and context.

    Re-recording an event is safe: ``cuStreamWaitEvent`` waits for the work the event
    captured when it was called, not for later records.
    """

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self._events = threading.local()

    def wait_for(self, context: int, launch_stream: int, producers: Iterable[int]) -> None:
        done: list[int] = []
        for producer in producers:
            if same_stream(producer, launch_stream) or any(same_stream(producer, d) for d in done):
                continue
            event = self._event(context)
            self._driver.record_event(event, producer)
            self._driver.stream_wait_event(launch_stream, event)
            done.append(producer)

    def _event(self, context: int) -> int:
        events: dict[int, int] | None = getattr(self._events, "by_context", None)
        if events is None:
            events = self._events.by_context = {}
        event = events.get(context)
        if event is None:
            event = events[context] = self._driver.create_event()
        return event
