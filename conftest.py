"""Test-wide setup: compiled kernels and tuning records go to a per-run cache, not the user's."""

from __future__ import annotations

import os
import tempfile


def pytest_configure(config):
    if "PHOBOS_CACHE_DIR" not in os.environ:
        os.environ["PHOBOS_CACHE_DIR"] = tempfile.mkdtemp(prefix="phobos-test-cache-")
