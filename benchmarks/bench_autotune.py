"""Autotuning: Phobos's tuner against Triton's ``@triton.autotune`` over the same space.

Measures, for the vector add of tutorial 01 with ``BLOCK in [256, 16384]`` (until
the matmul tutorial exists):

* tuning wall time of the first launch: Phobos (compile every variant in parallel,
  check each against the reference, time those that pass) and Triton (compile and
  ``do_bench`` every config); for the first size both start with empty kernel caches
  (``cold`` is true in that row only), then each tunes again with its compiled
  kernels cached but no tuning result (``*_retune_s``, ``triton_again_s``);
* the chosen variant's time against the fastest variant timed alone (each BLOCK
  fixed by keyword, timed with ``do_bench``): the ratio should be at most 1.05;
* compiling the space on 1 thread against the tuner's thread pool (NVRTC and
  NVRTC releases the GIL).

``main() -> dict``; run on a GPU: ``PYTHONPATH=... python benchmarks/bench_autotune.py``.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import torch
import triton

import phobos.lang as ph
from benchmarks.bench_01_vector_add import triton_add, vector_add
from benchmarks.common import empty_kernel_caches, environment, median_ms, write_json
from phobos.autotune import Options

BLOCKS = [256 << i for i in range(7)]  # 256 ... 16384, the space of the Phobos kernel
SIZES = [1 << 20, 1 << 24, 1 << 27]


def grid(meta):
    return (triton.cdiv(meta["N"], meta["BLOCK"]),)


def fresh_phobos_kernel():
    """A new Kernel object for the same function: no tuning result held in this process."""
    return ph.kernel(vector_add.__wrapped__)


def fresh_triton_autotuner():
    """A new autotuner over the same configs: its in-memory results start empty."""
    configs = [triton.Config({"BLOCK_SIZE": b}) for b in BLOCKS]
    return triton.autotune(configs=configs, key=["n"])(triton_add)


def phobos_tuning_s(x, y, out, *, retune: bool) -> tuple[float, dict]:
    kernel = fresh_phobos_kernel()
    torch.cuda.synchronize()
    start = time.perf_counter()
    if retune:
        kernel.autotune(x, y, out, grid=grid, options=Options(retune=True, progress=False))
    kernel[grid](x, y, out)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    report = kernel.tuning_report()
    return seconds, {"choice": report.choice, "table": str(report)}


def triton_tuning_s(x, y, out) -> tuple[float, int]:
    tuner = fresh_triton_autotuner()
    n = out.numel()
    torch.cuda.synchronize()
    start = time.perf_counter()
    tuner[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return seconds, tuner.best_config.kwargs["BLOCK_SIZE"]


def each_variant_alone_ms(x, y, out) -> dict[int, float]:
    times = {}
    for block in BLOCKS:
        out.fill_(float("nan"))
        vector_add[grid](x, y, out, BLOCK=block)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
        times[block] = median_ms(lambda b=block: vector_add[grid](x, y, out, BLOCK=b))
    return times


def compile_parallelism() -> dict:
    """Seconds to compile the space for this GPU on one thread, then on the tuner's pool."""
    from phobos.autotune.search import MAX_WORKERS
    from phobos.compile.pipeline import compile_kernel

    major, minor = torch.cuda.get_device_capability()
    module, name = vector_add.program.module, vector_add.name

    def build(block: int) -> None:
        compile_kernel(module, name, {"BLOCK": block}, arch=f"sm_{major}{minor}")

    build(BLOCKS[0])  # load NVRTC and the headers once
    start = time.perf_counter()
    for block in BLOCKS:
        build(block)
    serial = time.perf_counter() - start
    workers = min(MAX_WORKERS, os.cpu_count() or 1)
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(build, BLOCKS))
    threaded = time.perf_counter() - start
    return {"serial_s": serial, "threads": workers, "threaded_s": threaded}


def measure(n: int) -> dict:
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    row: dict = {"n": n, "cold": n == SIZES[0]}
    row["phobos_first_launch_s"], tuned = phobos_tuning_s(x, y, out, retune=False)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    row["phobos_retune_s"], _ = phobos_tuning_s(x, y, out, retune=True)
    row["phobos_choice"] = tuned["choice"]["BLOCK"]
    row["phobos_report"] = tuned["table"]
    row["triton_first_launch_s"], row["triton_choice"] = triton_tuning_s(x, y, out)
    row["triton_again_s"], _ = triton_tuning_s(x, y, out)
    alone = each_variant_alone_ms(x, y, out)
    best = min(alone, key=alone.__getitem__)
    row["alone_ms"] = {str(b): t for b, t in alone.items()}
    row["fastest_alone"] = best
    row["chosen_over_fastest"] = alone[row["phobos_choice"]] / alone[best]
    return row


def main() -> dict:
    with empty_kernel_caches():  # cold: nothing compiled, nothing tuned
        rows = []
        for n in SIZES:
            row = measure(n)
            rows.append(row)
            print(
                f"n={n:>10}  tuning (first launch / again): phobos "
                f"{row['phobos_first_launch_s']:.2f} / {row['phobos_retune_s']:.2f} s, triton "
                f"{row['triton_first_launch_s']:.2f} / {row['triton_again_s']:.2f} s; "
                f"chose BLOCK={row['phobos_choice']} "
                f"({row['chosen_over_fastest']:.3f}x the fastest alone, "
                f"BLOCK={row['fastest_alone']})",
                flush=True,
            )
        compiles = compile_parallelism()
    print(
        f"compiling {len(BLOCKS)} variants: {compiles['serial_s']:.2f} s on 1 thread, "
        f"{compiles['threaded_s']:.2f} s on {compiles['threads']}",
        flush=True,
    )
    return {"benchmark": "autotune", "space": BLOCKS, "rows": rows, "compile": compiles}


if __name__ == "__main__":
    write_json("autotune", {**main(), "environment": environment()})
