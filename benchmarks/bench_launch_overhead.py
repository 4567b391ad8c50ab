"""Host time per launch of a tiny 3-tensor kernel: Phobos, Triton, torch and a bare cuLaunchKernel.

The bare launch is the floor: ctypes ``cuLaunchKernel`` on the same cubin with a
parameter block packed once.  Each figure is the wall time of a loop of launches
divided by their count (the GPU work is one block on 1024 elements, far shorter
than the host time), the median of several loops.
"""

from __future__ import annotations

import ctypes
import statistics
import time

import torch
import triton

from benchmarks.bench_01_vector_add import triton_add, vector_add
from benchmarks.common import environment, write_json

N = 1024
LOOPS = 7
LAUNCHES = 5000


def per_launch_us(launch) -> float:
    for _ in range(200):
        launch()
    torch.cuda.synchronize()
    samples = []
    for _ in range(LOOPS):
        start = time.perf_counter()
        for _ in range(LAUNCHES):
            launch()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) / LAUNCHES * 1e6)
    return statistics.median(samples)


_CTYPES = {
    "u64": ctypes.c_uint64,
    "i64": ctypes.c_int64,
    "i32": ctypes.c_int32,
    "f32": ctypes.c_float,
    "u32": ctypes.c_uint32,
}


def bare_launcher(compiled, x, y, out):
    """cuLaunchKernel through ctypes with a parameter block packed once."""
    cuda = ctypes.CDLL("libcuda.so.1")
    module = ctypes.c_void_p()
    assert cuda.cuModuleLoadData(ctypes.byref(module), compiled.cubin) == 0
    function = ctypes.c_void_p()
    entry = compiled.contract.entry.encode()
    assert cuda.cuModuleGetFunction(ctypes.byref(function), module, entry) == 0
    tensors = {"x": x, "y": y, "out": out}
    values = []
    for slot in compiled.contract.slots:
        if slot.kind == "pointer":
            values.append(_CTYPES["u64"](tensors[slot.param].data_ptr()))
        elif slot.kind == "extent":
            values.append(_CTYPES[slot.type](N))
        elif slot.kind == "stride":
            values.append(_CTYPES[slot.type](tensors[slot.param].stride(slot.axis)))
        else:
            raise AssertionError(f"unexpected slot {slot}")
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    bx, by, bz = compiled.contract.block
    smem = compiled.contract.dynamic_smem
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    launch_kernel = cuda.cuLaunchKernel

    def launch():
        launch_kernel(function, 1, 1, 1, bx, by, bz, smem, stream, params, None)

    launch._keep = (module, values, params)  # keep the packed block alive
    return launch


def per_call_us(call, count: int = 20000) -> float:
    """Host time of a call that launches nothing (median of a few loops)."""
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            call()
        samples.append((time.perf_counter() - start) / count * 1e6)
    return statistics.median(samples)


def breakdown(x, y, out, grid) -> dict:
    """Where a Phobos launch's host time goes: each layer alone."""
    (loaded,) = vector_add.loaded.values()
    args = (x, y, out)
    block = loaded.parameter_block()
    fast = loaded._fast
    driver = loaded.driver
    return {
        "launcher_launch": per_launch_us(lambda: loaded.launch(grid, args)),
        "launcher_bind_only": per_call_us(lambda: fast(args, block.write)),
        "cuCtxGetCurrent": per_call_us(driver.current_context),
        "torch_reads_3_tensors": per_call_us(
            lambda: [(t.is_cuda, t.dtype, t.shape, t.data_ptr(), t.stride()) for t in args]
        ),
        "torch_current_raw_stream": per_call_us(lambda: torch._C._cuda_getCurrentRawStream(0)),
    }


def main() -> dict:
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out = torch.empty_like(x)
    block = 1024
    grid = (triton.cdiv(N, block),)
    vector_add[grid](x, y, out, BLOCK=block)
    torch.testing.assert_close(out, x + y)
    compiled = vector_add.compile(arch="sm_90", BLOCK=block)
    bare = bare_launcher(compiled, x, y, out)
    out.zero_()
    bare()
    torch.testing.assert_close(out, x + y)

    lam = lambda m: (triton.cdiv(m["N"], m["BLOCK"]),)  # noqa: E731
    figures = {
        "bare_cuLaunchKernel": per_launch_us(bare),
        "phobos_tuple_grid": per_launch_us(lambda: vector_add[grid](x, y, out, BLOCK=block)),
        "phobos_lambda_grid": per_launch_us(lambda: vector_add[lam](x, y, out, BLOCK=block)),
        "triton": per_launch_us(lambda: triton_add[grid](x, y, out, N, BLOCK_SIZE=block)),
        "torch_add": per_launch_us(lambda: torch.add(x, y, out=out)),
    }
    figures.update(breakdown(x, y, out, grid))
    figures["phobos_over_triton"] = figures["phobos_tuple_grid"] / figures["triton"]
    figures["phobos_over_bare"] = figures["phobos_tuple_grid"] / figures["bare_cuLaunchKernel"]
    for name, value in figures.items():
        print(f"{name:24s} {value:8.2f}", flush=True)
    return {"benchmark": "launch_overhead_us", "n": N, "figures": figures}


if __name__ == "__main__":
    write_json("launch_overhead", {**main(), "environment": environment()})
