"""Every GPU test and benchmark in one call; JSON and plots under $OUT.

    bash benchmarks/run_gpu_suite.sh            # on the GPU machine, from the repo root

Writes ``$OUT/results.json`` (environment, test outcome, every benchmark's figures),
``$OUT/gpu_tests.log`` and one PNG per plotted benchmark, then prints a summary.
A benchmark that fails is recorded with its error; the others still run.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
import traceback

from benchmarks.common import ROOT, environment, out_dir

TEST_PATHS = ["tests/gpu", "packages/phobos-launch/tests"]
BENCHMARKS = [
    "bench_02_softmax",
    "bench_05_layer_norm",
    "bench_07_rms_norm",
    "bench_08_cross_entropy",
    "bench_corpus",
    "bench_03_matmul",
    "bench_06_attention",
    "bench_autotune",
    "bench_autotune_matmul",
    "bench_launch_overhead",
    "probe_launch_api",
    "bench_01_vector_add",
]


def run_gpu_tests() -> dict:
    log = out_dir() / "gpu_tests.log"
    start = time.time()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-m",
            "gpu",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rfExX",  # failures, errors, and which expected failures failed or passed
            *[p for p in TEST_PATHS if (ROOT / p).exists()],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    log.write_text(proc.stdout + proc.stderr)
    tail = [line for line in proc.stdout.splitlines() if line.strip()][-15:]
    return {
        "returncode": proc.returncode,
        "seconds": round(time.time() - start, 1),
        "summary": tail,
    }


def save(results: dict) -> None:
    """Written after each step, so a run cut short keeps what it measured."""
    (out_dir() / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True))


def main(selected: list[str]) -> int:
    results: dict = {"environment": environment(), "benchmarks": {}}
    if not selected or "tests" in selected:
        results["gpu_tests"] = run_gpu_tests()
        print("\n".join(results["gpu_tests"]["summary"]), flush=True)
        save(results)
    for name in BENCHMARKS:
        if selected and name not in selected:
            continue
        start = time.time()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            results["benchmarks"][name] = {
                **module.main(),
                "seconds": round(time.time() - start, 1),
            }
        except Exception:
            results["benchmarks"][name] = {"error": traceback.format_exc()}
            print(f"{name} FAILED:\n{traceback.format_exc()}", flush=True)
        save(results)
    ok = results.get("gpu_tests", {}).get("returncode", 0) == 0 and all(
        "error" not in b for b in results["benchmarks"].values()
    )
    print("GPU suite:", "all passed" if ok else "FAILURES (see results.json)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
