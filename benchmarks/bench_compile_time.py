"""Host time of compiling a small kernel and of interpreting saxpy (no GPU needed).

``python benchmarks/bench_compile_time.py`` prints the figures as JSON: seconds, the median of
``REPEATS`` runs after a warm-up run (which loads NVRTC and nvJitLink), each result checked first.

* ``compile_cuda_s``: NVRTC and nvJitLink on a small hand-written CUDA kernel (the one
  packages/phobos-compile/tests/test_toolchain.py compiles), for sm_90;
* ``compile_saxpy_s``: examples/saxpy_fp32.ph from its text to a cubin (parse, check, lower,
  generate, NVRTC) with BLOCK=1024, for sm_90;
* ``interp_saxpy_1m_s``: that saxpy on a million f32 elements in the CPU interpreter.

The tests once asserted the first and the last under 0.5 s; on a loaded machine that failed
now and then, so the figures are measured here and the tests check only the results.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from phobos.compile import compile_cuda, compile_kernel, lower, parse_file, run

REPEATS = 7
N = 1_000_000
BLOCK = 1024
SAXPY = Path(__file__).resolve().parents[1] / "examples" / "saxpy_fp32.ph"
SCALE = """\
#include <cuda_fp16.h>
extern "C" __global__ void scale(const __half* x, float* y, int n) {
    __shared__ float staged[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < n ? __half2float(x[i]) : 0.0f;
    __syncthreads();
    if (i < n) y[i] = staged[255 - threadIdx.x] * 2.0f;
}
"""


def median_s(work: Callable[[], object]) -> float:
    """The median wall time of ``work`` over ``REPEATS`` runs, after one warm-up run."""
    work()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> dict:
    build = compile_cuda(SCALE, arch="sm_90", name="scale")
    assert ".entry scale(" in build.ptx and build.cubin.startswith(b"\x7fELF")
    module = parse_file(SAXPY)
    compiled = compile_kernel(module, "saxpy", {"BLOCK": BLOCK}, arch="sm_90")
    assert compiled.cubin.startswith(b"\x7fELF")

    saxpy = lower(module, "saxpy", {"BLOCK": BLOCK})
    rng = np.random.default_rng(2)
    x, y = rng.random(N, np.float32), rng.random(N, np.float32)
    out = np.full(N, np.nan, np.float32)
    grid = (-(-N // BLOCK),)
    run(saxpy, grid, [x, y, out, 2.0])
    assert np.array_equal(out, np.float32(2.0) * x + y)

    figures = {
        "compile_cuda_s": median_s(lambda: compile_cuda(SCALE, arch="sm_90", name="scale")),
        "compile_saxpy_s": median_s(
            lambda: compile_kernel(parse_file(SAXPY), "saxpy", {"BLOCK": BLOCK}, arch="sm_90")
        ),
        "interp_saxpy_1m_s": median_s(lambda: run(saxpy, grid, [x, y, out, 2.0])),
    }
    return {"benchmark": "compile_time_s", "repeats": REPEATS, "n": N, "figures": figures}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2, sort_keys=True))
