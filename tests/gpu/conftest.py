"""GPU tests: run by benchmarks/gpu_suite.py on a machine with an NVIDIA GPU and torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gpu.watchdog import armed


def _gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Each GPU test under the watchdog: a hang ends the run with its stack, not never."""
    if item.get_closest_marker("gpu") is None:
        yield
        return
    with armed(what=item.nodeid):
        yield


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(
        reason="needs an NVIDIA GPU with torch (run benchmarks/gpu_suite.py there)"
    )
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(skip)
