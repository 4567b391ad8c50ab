"""What a launch's host time is made of: driver entry points, ctypes call styles, torch reads.

The design of phobos-launch's hot path rests on these figures (benchmarks/NOTES.md,
"launch path"): which ctypes spelling of the driver call is cheapest, what each
torch accessor costs, and what the driver answers when the kernel's context is not
current.  Run on a GPU: ``bash benchmarks/run_gpu_suite.sh probe_launch_api``.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from ctypes import byref, c_int, c_uint64, c_void_p

import torch

from benchmarks.bench_01_vector_add import vector_add
from benchmarks.bench_launch_overhead import BURST, N, burst_us, per_call_us
from benchmarks.common import environment, write_json

CU_LAUNCH_PARAM_BUFFER_POINTER = 1
CU_LAUNCH_PARAM_BUFFER_SIZE = 2
CU_LAUNCH_PARAM_END = 0


def launch_variants(cuda, function, x, y, out, tile: int, block: int) -> dict:
    """Each spelling of the same launch: a function that launches once (pre-packed)."""
    params_raw = struct.pack("<QQQi", x.data_ptr(), y.data_ptr(), out.data_ptr(), N)
    values = (c_uint64 * 4)()
    ctypes.memmove(values, params_raw, len(params_raw))
    base = ctypes.addressof(values)
    params = (c_void_p * 4)(base, base + 8, base + 16, base + 24)
    stream = c_void_p(torch.cuda.current_stream().cuda_stream)
    grid = (N + tile - 1) // tile
    fn = c_void_p(function)

    plain = cuda.cuLaunchKernel
    typed = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    typed.argtypes = [c_void_p] + [ctypes.c_uint] * 7 + [c_void_p] * 3
    typed.restype = c_int
    held = ctypes.PyDLL("libcuda.so.1").cuLaunchKernel
    ex = cuda.cuLaunchKernelEx

    # CUlaunchConfig: 7 uint32, pad, stream, attrs pointer, numAttrs (56 bytes).
    config = (c_uint64 * 7)()
    struct.pack_into("<7I4xQ16x", config, 0, grid, 1, 1, block, 1, 1, 0, stream.value or 0)
    size = c_uint64(len(params_raw))
    extra = (c_void_p * 5)(
        CU_LAUNCH_PARAM_BUFFER_POINTER, base, CU_LAUNCH_PARAM_BUFFER_SIZE,
        ctypes.addressof(size), CU_LAUNCH_PARAM_END,
    )  # fmt: skip
    typed_params = ctypes.addressof(params)
    whole = struct.Struct("<7I4xQ16xQQQi")
    arena = (c_uint64 * 11)()
    arena_params = (c_void_p * 4)(*(ctypes.addressof(arena) + 56 + 8 * i for i in range(4)))
    write = whole.pack_into
    ptrs = (x.data_ptr(), y.data_ptr(), out.data_ptr())
    stream_value = stream.value or 0

    def ex_packed():
        write(arena, 0, grid, 1, 1, block, 1, 1, 0, stream_value, *ptrs, N)
        return ex(arena, fn, arena_params, None)

    return {
        "cuLaunchKernel_plain": lambda: plain(fn, grid, 1, 1, block, 1, 1, 0, stream, params, None),
        "cuLaunchKernel_argtypes": lambda: typed(
            function, grid, 1, 1, block, 1, 1, 0, stream.value, typed_params, None
        ),
        "cuLaunchKernel_gil_held": lambda: held(
            fn, grid, 1, 1, block, 1, 1, 0, stream, params, None
        ),
        "cuLaunchKernel_extra_buffer": lambda: plain(
            fn, grid, 1, 1, block, 1, 1, 0, stream, None, extra
        ),
        "cuLaunchKernelEx": lambda: ex(config, fn, params, None),
        "cuLaunchKernelEx_repacked_each_launch": ex_packed,
        "_keep": (values, params, config, extra, size, arena, arena_params),
    }


def check_variants(variants: dict, x, y, out) -> None:
    for name, launch in variants.items():
        if name.startswith("_"):
            continue
        out.fill_(float("nan"))
        code = launch()
        assert code == 0, f"{name}: CUDA error {code}"
        torch.cuda.synchronize()
        torch.testing.assert_close(out, x + y, msg=name)


def interleaved(variants: dict, rounds: int = 31) -> dict:
    samples: dict = {k: [] for k in variants if not k.startswith("_")}
    for name in samples:
        for _ in range(3):
            burst_us(variants[name])
    for _ in range(rounds):
        for name in samples:
            samples[name].append(burst_us(variants[name]))
    return {k: sorted(v)[len(v) // 2] for k, v in samples.items()}


def accessor_costs(x) -> dict:
    """ns per call of each torch accessor a launch could use, and a few Python primitives."""
    local = threading.local()
    local.value = 1
    raw = torch._C._cuda_getCurrentRawStream
    handle = c_void_p()
    probes = {
        "data_ptr()": lambda: x.data_ptr(),
        "shape": lambda: x.shape,
        "unpack shape": lambda: [e for (e,) in (x.shape,)],
        "dtype": lambda: x.dtype,
        "get_device()": lambda: x.get_device(),
        "is_cuda": lambda: x.is_cuda,
        "device": lambda: x.device,
        "stride()": lambda: x.stride(),
        "is_contiguous()": lambda: x.is_contiguous(),
        "len()": lambda: len(x),
        "dim()": lambda: x.dim(),
        "__class__": lambda: x.__class__,
        "_cuda_getCurrentRawStream(0)": lambda: raw(0),
        "threading.local attr": lambda: local.value,
        "threading.get_ident()": threading.get_ident,
        "c_void_p.value =": lambda: setattr(handle, "value", 123456789),
        "empty lambda": lambda: None,
    }
    empty = per_call_us(probes["empty lambda"]) * 1000
    return {k: round(per_call_us(f) * 1000 - empty, 1) for k, f in probes.items()} | {
        "empty lambda (subtracted from the others)": round(empty, 1)
    }


def context_behaviour(cuda, function, x, y, out, tile: int, block: int) -> dict:
    """What cuLaunchKernel answers with no context current, and with another context current."""
    grid = (N + tile - 1) // tile
    values = (c_uint64 * 4)()
    struct.pack_into("<QQQi", values, 0, x.data_ptr(), y.data_ptr(), out.data_ptr(), N)
    base = ctypes.addressof(values)
    params = (c_void_p * 4)(base, base + 8, base + 16, base + 24)
    fn = c_void_p(function)
    primary = c_void_p()
    cuda.cuCtxGetCurrent(byref(primary))
    found: dict = {}

    def attempt(label: str) -> None:
        out.fill_(float("nan"))
        torch.cuda.synchronize()
        code = cuda.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, None, params, None)
        sync = cuda.cuCtxSynchronize()
        cuda.cuCtxSetCurrent(primary)
        torch.cuda.synchronize()
        right = bool(torch.equal(out, x + y))
        found[label] = {"launch_code": code, "sync_code": sync, "result_right": right}

    cuda.cuCtxSetCurrent(None)
    attempt("no context current")
    other = c_void_p()
    create = getattr(cuda, "cuCtxCreate_v2", None)
    code = create(byref(other), 0, 0) if create else -1
    found["cuCtxCreate_v2"] = code
    if code == 0:
        attempt("another context current")  # cuCtxCreate made it current
        cuda.cuCtxSetCurrent(primary)
        cuda.cuCtxDestroy_v2(other)
    current = c_void_p()
    cuda.cuCtxGetCurrent(byref(current))
    found["primary restored"] = current.value == primary.value
    return found


def main() -> dict:
    x, y = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    out = torch.empty_like(x)
    tile = 1024
    vector_add[(1,)](x, y, out, BLOCK=tile)  # the primary context, made current by torch
    torch.cuda.synchronize()
    compiled = vector_add.compile(arch="sm_90", BLOCK=tile)
    block = compiled.contract.block[0]
    assert [s.kind for s in compiled.contract.slots] == ["pointer"] * 3 + ["extent"]
    cuda = ctypes.CDLL("libcuda.so.1")
    module, function = c_void_p(), c_void_p()
    assert cuda.cuModuleLoadData(byref(module), compiled.cubin) == 0
    assert cuda.cuModuleGetFunction(byref(function), module, compiled.contract.entry.encode()) == 0
    variants = launch_variants(cuda, function.value, x, y, out, tile, block)
    check_variants(variants, x, y, out)
    figures = interleaved(variants)
    result = {
        "benchmark": "probe_launch_api",
        "burst": BURST,
        "launch_us": figures,
        "accessor_ns": accessor_costs(x),
        "cuCtxGetCurrent_ns": round(
            per_call_us(lambda: cuda.cuCtxGetCurrent(byref(c_void_p()))) * 1000, 1
        ),
        "context": context_behaviour(cuda, function.value, x, y, out, tile, block),
    }
    for key, value in result.items():
        print(key, value, flush=True)
    return result


if __name__ == "__main__":
    write_json("probe_launch_api", {**main(), "environment": environment()})
