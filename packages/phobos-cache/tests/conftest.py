"""Shared fixtures: a fresh cache folder per test and kernel-like entries to put in it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from phobos.cache import (
    CONTRACT_FILE,
    CUBIN_FILE,
    PTX_FILE,
    Cache,
    cache_key,
    fallback,
    kernel_record,
)
from phobos.cache import cache as cache_module
from phobos.cache import warn as warn_module

KernelMaker = Callable[..., tuple[str, dict, dict[str, bytes]]]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test touches the real user cache or inherits another test's fallback state."""
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "default-root"))
    monkeypatch.delenv("PHOBOS_CACHE_MAX_BYTES", raising=False)
    monkeypatch.setattr(fallback, "_warned_unwritable", False)
    monkeypatch.setattr(fallback, "_memory_stores", {})
    monkeypatch.setattr(cache_module, "_running_totals", {})
    monkeypatch.setattr(warn_module, "_said", set())
    monkeypatch.delenv("PHOBOS_CACHE_TRUSTED_OWNER", raising=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def cache(root: Path) -> Cache:
    return Cache(root)


@pytest.fixture
def kernel() -> KernelMaker:
    """Make the key, key record and files of a compiled kernel named ``name``."""

    def make(name: str = "saxpy", arch: str = "sm_90", size: int = 256):
        record = kernel_record(
            program=f"kernel {name}(x: tensor<f32>[N]) {{ }}",
            kernel=name,
            arch=arch,
            compiler="phobos-compile 0.1.0",
            values={"BLOCK": 1024},
            specialisation={"x": {"align": 16, "unit_stride": True}},
            toolchain={"nvrtc": "13.5"},
        )
        files = {
            PTX_FILE: f"// ptx for {name}\n".encode() + b"." * size,
            CUBIN_FILE: bytes(range(256)) * (size // 256 + 1),
            CONTRACT_FILE: f'{{"kernel": "{name}"}}'.encode(),
        }
        return cache_key(record), record, files

    return make
