"""Shared benchmark plumbing: the environment record, timing, result files and plots.

Timing follows the project's method: a correctness check first, random inputs,
median of repeats measured with device events (``triton.testing.do_bench``, which
also flushes L2 between repeats), every system in the same process and run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


_TUTORIALS: dict[str, Any] = {}


def load_tutorial(stem: str) -> Any:
    """The tutorial script ``docs/tutorials/<stem>.py`` as a module (loaded once per process)."""
    if stem not in _TUTORIALS:
        path = ROOT / "docs" / "tutorials" / f"{stem}.py"
        spec = importlib.util.spec_from_file_location(f"tutorial_{stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _TUTORIALS[stem] = module
    return _TUTORIALS[stem]


_CORPUS: dict[str, Any] = {}


def load_corpus(stem: str) -> Any:
    """The corpus script ``docs/examples/corpus/<stem>.py`` as a module (loaded once)."""
    if stem not in _CORPUS:
        path = ROOT / "docs" / "examples" / "corpus" / f"{stem}.py"
        spec = importlib.util.spec_from_file_location(f"corpus_{stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _CORPUS[stem] = module
    return _CORPUS[stem]


@contextlib.contextmanager
def empty_kernel_caches():
    """Phobos's and Triton's kernel caches in new empty folders for the block (a cold start)."""
    from phobos.compile import cached

    saved = {k: os.environ.get(k) for k in ("PHOBOS_CACHE_DIR", "TRITON_CACHE_DIR")}
    with tempfile.TemporaryDirectory() as phobos_cache, tempfile.TemporaryDirectory() as tcache:
        os.environ["PHOBOS_CACHE_DIR"] = phobos_cache
        os.environ["TRITON_CACHE_DIR"] = tcache
        cached._default_cache.cache_clear()  # the compiler's cache follows PHOBOS_CACHE_DIR again
        try:
            yield
        finally:
            cached._default_cache.cache_clear()
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def out_dir() -> Path:
    """``$OUT`` on the device machine, else benchmarks/results/local."""
    path = Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results" / "local")
    path.mkdir(parents=True, exist_ok=True)
    return path


def environment() -> dict[str, Any]:
    """GPU, driver and library versions, recorded beside every result."""
    import torch

    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = props.name
        env["sm_count"] = props.multi_processor_count
        env["compute_capability"] = f"{props.major}.{props.minor}"
    for name in ("triton", "cupy", "numba", "numpy"):
        try:
            env[name] = __import__(name).__version__
        except Exception as exc:  # a missing library is recorded, not fatal
            env[name] = f"unavailable: {exc.__class__.__name__}"
    try:
        from phobos.compile.toolchain import toolchain_versions

        env["phobos_toolchain"] = toolchain_versions()
    except Exception as exc:
        env["phobos_toolchain"] = f"unavailable: {exc}"
    try:
        smi = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,clocks.sm,clocks.mem",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=20,
        )
        env["nvidia_smi"] = smi.stdout.strip()
    except Exception as exc:
        env["nvidia_smi"] = f"unavailable: {exc}"
    return env


def median_ms(fn, *, warmup: int = 25, rep: int = 100) -> float:
    """Median time of ``fn`` in ms from device events, L2 flushed between repeats."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))


def write_json(name: str, payload: dict[str, Any]) -> Path:
    path = out_dir() / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, sort_keys=True))
    return path


def plot(
    name: str,
    title: str,
    xlabel: str,
    ylabel: str,
    series: dict[str, list[tuple[float, float]]],
    logx: bool = True,
) -> Path | None:
    """A PNG line plot of ``series`` (label → [(x, y)]), for the docs."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for label, points in series.items():
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker="o", label=label)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = out_dir() / f"{name}.png"
    fig.savefig(path)
    plt.close(fig)
    return path
