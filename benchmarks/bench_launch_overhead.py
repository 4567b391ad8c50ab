"""Host time per launch of a tiny 3-tensor kernel: Phobos, Triton, torch and a bare cuLaunchKernel.

The bare launch is the floor: ctypes ``cuLaunchKernel`` on the same cubin with a
parameter block packed once (and, for reference, ``cuLaunchKernelEx``, the entry
point phobos-launch calls, with its config packed once too).  Each figure is the host time of a burst of launches
divided by their count, timed up to the last launch call (the GPU drains the burst
afterwards, outside the timed region; a burst is shorter than the driver's launch
queue, so no launch waits for the GPU).  The systems are measured in interleaved
rounds, and each figure is the median over the rounds.
"""

from __future__ import annotations

import ctypes
import statistics
import struct
import time

import torch
import triton

from benchmarks.bench_01_vector_add import triton_add, vector_add
from benchmarks.common import environment, write_json
from phobos.launch.native import native_status

N = 1024
ROUNDS = 31
BURST = 400


def burst_us(launch) -> float:
    """Host time per launch of one burst (the GPU is idle when it starts)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(BURST):
        launch()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / BURST * 1e6


def per_launch_us(launches: dict) -> dict:
    """Median host time per launch of each system, measured in interleaved rounds."""
    for launch in launches.values():
        for _ in range(3):
            burst_us(launch)
    samples: dict = {name: [] for name in launches}
    for _ in range(ROUNDS):
        for name, launch in launches.items():
            samples[name].append(burst_us(launch))
    return {name: statistics.median(values) for name, values in samples.items()}


_CTYPES = {
    "u64": ctypes.c_uint64,
    "i64": ctypes.c_int64,
    "i32": ctypes.c_int32,
    "f32": ctypes.c_float,
    "u32": ctypes.c_uint32,
}


def bare_launchers(compiled, x, y, out):
    """cuLaunchKernel and cuLaunchKernelEx through ctypes, each with its arguments packed once."""
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
    launch_kernel_ex = cuda.cuLaunchKernelEx
    config = (ctypes.c_uint64 * 7)()  # CUlaunchConfig, no attributes
    struct.pack_into("<7I4xQ16x", config, 0, 1, 1, 1, bx, by, bz, smem, stream.value or 0)

    def bare():
        launch_kernel(function, 1, 1, 1, bx, by, bz, smem, stream, params, None)

    def bare_ex():
        launch_kernel_ex(config, function, params, None)

    bare._keep = bare_ex._keep = (module, values, params, config)  # keep the packed block alive
    return bare, bare_ex


def per_call_us(call, count: int = 20000) -> float:
    """Host time of a call that launches nothing (median of a few loops)."""
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            call()
        samples.append((time.perf_counter() - start) / count * 1e6)
    return statistics.median(samples)


def python_fast_path(loaded, args):
    """The generated-Python fast path for the same kernel and signature (the native path's
    fallback), to measure the two side by side."""
    return loaded.fast_path(args, 0, native=False)


def breakdown(x, y, out, lam) -> dict:
    """What the parts of a launch that launch nothing cost alone."""
    args = (x, y, out)
    meta = {"BLOCK": 1024, "N": N}
    return {
        "grid_lambda_call": per_call_us(lambda: lam(meta)),
        "torch_reads_3_tensors": per_call_us(
            lambda: [
                (t.dtype, t.shape, t.data_ptr(), t.get_device(), t.is_contiguous()) for t in args
            ]
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
    loaded = vector_add.dispatcher.steady.last_launch[1]  # the LoadedKernel that launch used
    compiled = vector_add.compile(arch="sm_90", BLOCK=block)
    bare, bare_ex = bare_launchers(compiled, x, y, out)
    for launch in (bare, bare_ex):
        out.zero_()
        launch()
        torch.testing.assert_close(out, x + y)

    lam = lambda m: (triton.cdiv(m["N"], m["BLOCK"]),)  # noqa: E731
    args = (x, y, out)
    python_try = python_fast_path(loaded, args)
    out.zero_()
    assert python_try(grid, args, None) == 0
    torch.testing.assert_close(out, x + y)
    figures = per_launch_us(
        {
            "bare_cuLaunchKernel": bare,
            "bare_cuLaunchKernelEx": bare_ex,
            "phobos_tuple_grid": lambda: vector_add[grid](x, y, out, BLOCK=block),
            "phobos_lambda_grid": lambda: vector_add[lam](x, y, out, BLOCK=block),
            "launcher_launch": lambda: loaded.launch(grid, args),
            "launcher_try_launch": lambda: loaded.try_launch(grid, args, None),
            "launcher_try_launch_python": lambda: python_try(grid, args, None),
            "triton": lambda: triton_add[grid](x, y, out, N, BLOCK_SIZE=block),
            "torch_add": lambda: torch.add(x, y, out=out),
        }
    )
    figures.update(breakdown(x, y, out, lam))
    for launch in (
        lambda: vector_add[grid](x, y, out, BLOCK=block),
        lambda: vector_add[lam](x, y, out, BLOCK=block),
    ):
        out.zero_()
        launch()
        torch.testing.assert_close(out, x + y)  # the fast path launched the right thing
    assert loaded.try_launch(grid, args, None) == 0, "the steady state missed the fast path"
    paths = {
        "native_status": native_status(),
        "try_launch_type": type(loaded.try_launch).__name__,
        "kernel_grid_type": type(vector_add[grid]).__name__,
    }
    figures["phobos_over_triton"] = figures["phobos_tuple_grid"] / figures["triton"]
    figures["phobos_over_bare"] = figures["phobos_tuple_grid"] / figures["bare_cuLaunchKernel"]
    for name, value in figures.items():
        print(f"{name:24s} {value:8.2f}", flush=True)
    print(paths, flush=True)
    return {"benchmark": "launch_overhead_us", "n": N, "figures": figures, "paths": paths}


if __name__ == "__main__":
    write_json("launch_overhead", {**main(), "environment": environment()})
