"""A fresh kernel cache per test, and a small fake tuning problem on numpy arrays."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from phobos.autotune import Candidate, CpuTimer, Options, Problem, Unfit


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "cache"))


FAST = Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False)

Behaviour = Callable[[np.ndarray, np.ndarray], None]


def scale_problem(
    behaviours: Mapping[int, Behaviour | str],
    *,
    n: int = 64,
    reference: Callable[..., None] | None = None,
    default: int | None = None,
    ran: list[int] | None = None,
) -> Problem:
    """Variants ``B`` of ``out = 2 * x``: each behaves as given (a function of (x, out)), or is
    "unfit" / "broken" (fails to build)."""
    x = np.arange(n, dtype=np.float32)
    out = np.full(n, 7.0, dtype=np.float32)
    variants = [{"B": b} for b in behaviours]

    def compile_variant(values: Mapping[str, int]) -> Any:
        behaviour = behaviours[values["B"]]
        if behaviour == "unfit":
            raise Unfit("needs 300000 bytes of shared memory; the device has 232448")
        if behaviour == "broken":
            raise SyntaxError("kernel.ph:3:5: error: no such thing")
        return behaviour

    def load(values: Mapping[str, int], behaviour: Any) -> Candidate:
        def run() -> None:
            if ran is not None:
                ran.append(values["B"])
            behaviour(x, out)

        return Candidate(run, written=frozenset({1}), read=frozenset({0}))

    return Problem(
        kernel="scale",
        key=f"scale-{n}-{sorted(behaviours)}-{reference is not None}",
        variants=variants,
        default={"B": default if default is not None else next(iter(behaviours))},
        args=[x, out],
        arg_names=["x", "out"],
        compile=compile_variant,
        load=load,
        timer=CpuTimer(),
        reference=reference,
        extents={"N": n},
    )


def right(x: np.ndarray, out: np.ndarray) -> None:
    out[:] = 2 * x


def slow(x: np.ndarray, out: np.ndarray) -> None:
    time.sleep(0.003)
    out[:] = 2 * x


@pytest.fixture
def fake() -> Any:
    """This module's helpers (test modules cannot import conftest under importlib mode)."""
    import sys

    return sys.modules[__name__]
