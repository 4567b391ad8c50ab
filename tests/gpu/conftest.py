"""GPU tests: run by benchmarks/gpu_suite.py on a machine with an NVIDIA GPU and torch."""

from __future__ import annotations

from pathlib import Path

import pytest


def _gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


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
