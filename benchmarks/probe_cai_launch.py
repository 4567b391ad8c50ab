"""Probe: host time per launch of the 3-array vector add on CuPy and Numba arrays.

Arrays without torch's accessors are read through ``__cuda_array_interface__``;
this times ``kernel[grid](...)`` (its steady state: the native fast path) and the
generated-Python fast path beside it, each after a correctness check, as
``bench_launch_overhead`` does for torch.  Run on a GPU:
``python -m benchmarks.probe_cai_launch``.
"""

from __future__ import annotations

import numpy as np

from benchmarks.bench_01_vector_add import vector_add
from benchmarks.bench_launch_overhead import N, per_launch_us, python_fast_path
from benchmarks.common import environment, write_json


def arrays_of(library: str):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    if library == "cupy":
        import cupy

        return x + y, cupy.asarray(x), cupy.asarray(y), cupy.zeros(N, np.float32)
    from numba import cuda

    return x + y, cuda.to_device(x), cuda.to_device(y), cuda.device_array(N, np.float32)


def to_host(array) -> np.ndarray:
    return array.get() if hasattr(array, "get") else array.copy_to_host()


def measure(library: str) -> dict:
    """Check, then time, the vector add on one library's arrays."""
    import torch  # the timing bursts synchronise through torch, as bench_launch_overhead does

    expected, x, y, out = arrays_of(library)
    grid = (1,)
    vector_add[grid](x, y, out, BLOCK=1024)
    torch.cuda.synchronize()
    np.testing.assert_allclose(to_host(out), expected, rtol=1e-6)
    loaded = vector_add.dispatcher.steady.last_launch[1]
    args = (x, y, out)
    python_try = python_fast_path(loaded, args)
    assert python_try(grid, args, None) == 0
    figures = per_launch_us(
        {
            "kernel_grid": lambda: vector_add[grid](x, y, out, BLOCK=1024),
            "try_launch": lambda: loaded.try_launch(grid, args, None),
            "try_launch_python": lambda: python_try(grid, args, None),
        }
    )
    torch.cuda.synchronize()
    np.testing.assert_allclose(to_host(out), expected, rtol=1e-6)
    figures["try_launch_type"] = type(loaded.try_launch).__name__
    print(library, figures, flush=True)
    return figures


def main() -> dict:
    rows = {library: measure(library) for library in ("cupy", "numba")}
    return {"benchmark": "probe_cai_launch", "n": N, "rows": rows}


if __name__ == "__main__":
    write_json("probe_cai_launch", {**main(), "environment": environment()})
