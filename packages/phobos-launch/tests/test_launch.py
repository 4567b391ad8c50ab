"""Launching against a fake driver: the parameter block, grids, streams, loading."""

from __future__ import annotations

import ctypes
import struct
import sys
import types

import pytest

from phobos.launch import CudaError, LaunchError, load_kernel
from phobos.launch.driver import (
    CUDA_ERROR_INVALID_PTX,
    CUDA_ERROR_NO_BINARY_FOR_GPU,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
)
from phobos.launch.params import CONFIG_SIZE

BASE = 0x7F0000000000


def saxpy_args(fakes, n=1000, **streams):
    return [
        fakes.cuda_array((n,), ptr=BASE, stream=streams.get("x")),
        fakes.cuda_array((n,), ptr=BASE + 0x1000, stream=streams.get("y")),
        fakes.cuda_array((n,), ptr=BASE + 0x2000, stream=streams.get("out")),
        2.0,
    ]


def block_bytes(kernel) -> bytes:
    return bytes(kernel.parameter_block())


def test_saxpy_parameter_block_bytes(saxpy, driver, fakes):
    saxpy.launch((4,), saxpy_args(fakes))
    expected = struct.pack("<QQQif", BASE, BASE + 0x1000, BASE + 0x2000, 1000, 2.0)
    assert block_bytes(saxpy) == expected
    (launch,) = driver.launches
    pointers = (ctypes.c_void_p * 5).from_address(launch["params"])
    base = ctypes.addressof(saxpy.parameter_block()._buffer) + CONFIG_SIZE
    assert [p - base for p in pointers] == [0, 8, 16, 24, 28]
    assert launch["grid"] == (4, 1, 1)
    assert launch["block"] == (128, 1, 1)
    assert launch["smem"] == 0


def test_mixed_slot_types_are_packed_at_their_alignment(scale_contract, driver, fakes):
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((8, 4), typestr="<f2", ptr=BASE, strides=(16, 2))
    b = fakes.cuda_array((4, 64), typestr="<f2", ptr=BASE + 0x100)
    c = fakes.cuda_array((8, 64), ptr=BASE + 0x800)
    kernel.launch((2, 3), [a, b, c, 1.5, -7, True])
    expected = (
        struct.pack("<Qqqq", BASE, 8, 8, 1)
        + struct.pack("<Q", BASE + 0x100)
        + struct.pack("<e", 1.5)
        + b"\0" * 6
        + struct.pack("<Qqqq?", BASE + 0x800, 4, 64, -7, True)
    )
    assert block_bytes(kernel) == expected
    assert kernel.parameter_block().offsets == (0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80)
    assert driver.launches[0]["grid"] == (2, 3, 1)
    assert driver.launches[0]["smem"] == 65536


def test_bf16_scalar_is_rounded_to_nearest_even(scale_contract, driver, fakes):
    scale_contract["scalars"][0]["dtype"] = "bf16"
    scale_contract["slots"][5]["type"] = "bf16"
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((8, 4), typestr="<f2")
    b = fakes.cuda_array((4, 64), typestr="<f2")
    c = fakes.cuda_array((8, 64))
    binding = kernel.bind([a, b, c, 1.0 + 2**-8, 0, False])
    assert binding.slot_values[5] == 0x3F80  # a tie, rounded to the even 1.0
    binding = kernel.bind([a, b, c, 1.0 + 3 * 2**-8, 0, False])
    assert binding.slot_values[5] == 0x3F82


def test_numpy_like_and_ctypes_scalars(saxpy, fakes):
    class Float32:  # what a NumPy scalar offers
        def __float__(self):
            return 0.5

    args = saxpy_args(fakes)
    args[3] = Float32()
    assert saxpy.bind(args).slot_values[4] == 0.5
    args[3] = ctypes.c_float(0.25)
    assert saxpy.bind(args).slot_values[4] == 0.25
    args[3] = 3
    assert saxpy.bind(args).slot_values[4] == 3.0


def test_torch_tensors_take_their_own_accessors(saxpy, driver, fakes):
    args = [fakes.tensor((64,), ptr=BASE + 64 * i) for i in range(3)] + [1.0]
    saxpy.launch((1,), args)
    assert block_bytes(saxpy) == struct.pack("<QQQif", BASE, BASE + 64, BASE + 128, 64, 1.0)


def test_the_block_is_built_once_and_patched_in_place(saxpy, driver, fakes):
    saxpy.launch((1,), saxpy_args(fakes))
    first = driver.launches[0]["params"]
    block = saxpy.parameter_block()
    other = [fakes.cuda_array((8,), ptr=BASE + 0x9000 + 16 * i) for i in range(3)] + [3.0]
    saxpy.launch((1,), other)
    assert driver.launches[1]["params"] == first
    assert saxpy.parameter_block() is block
    assert block_bytes(saxpy) == struct.pack(
        "<QQQif", BASE + 0x9000, BASE + 0x9010, BASE + 0x9020, 8, 3.0
    )


def test_each_call_signature_is_planned_once(saxpy, fakes):
    saxpy.launch((1,), saxpy_args(fakes))
    saxpy.launch((1,), saxpy_args(fakes, n=7))
    assert len(saxpy._binder.plans) == 1
    saxpy.launch((1,), [fakes.tensor((8,)) for _ in range(3)] + [1.0])
    assert len(saxpy._binder.plans) == 2


def test_each_thread_has_its_own_block(saxpy, fakes):
    import threading

    saxpy.launch((1,), saxpy_args(fakes))
    mine = saxpy.parameter_block()
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(saxpy.parameter_block()))
    thread.start()
    thread.join()
    assert theirs[0] is not mine


def test_grid_function_sees_extents_and_values(saxpy, driver, fakes):
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (-(-meta["N"] // meta["BLOCK"]),)

    saxpy.launch(grid, saxpy_args(fakes, n=1000))
    assert seen == {"BLOCK": 256, "N": 1000}
    assert driver.launches[0]["grid"] == (4, 1, 1)
    saxpy.launch(
        lambda meta: (meta["BLOCK"], meta["EXTRA"]), saxpy_args(fakes), values={"EXTRA": 3}
    )
    assert driver.launches[1]["grid"] == (256, 3, 1)


def test_grid_function_asking_for_an_unknown_name(saxpy, fakes):
    with pytest.raises(LaunchError, match=r"asked for meta\['M'\]; meta has BLOCK, N"):
        saxpy.launch(lambda meta: (meta["M"],), saxpy_args(fakes))


def test_a_grid_with_no_blocks_launches_nothing(saxpy, driver, fakes):
    saxpy.launch(lambda meta: (meta["N"],), saxpy_args(fakes, n=0))
    saxpy.launch((4, 0), saxpy_args(fakes))
    assert driver.launches == []


def test_default_stream_without_an_array_library(saxpy, driver, fakes):
    saxpy.launch((1,), saxpy_args(fakes))
    assert driver.launches[0]["stream"] == 0


@pytest.mark.parametrize(
    ("stream", "handle"),
    [
        (0x5000, 0x5000),
        (types.SimpleNamespace(cuda_stream=0x6000), 0x6000),
        (types.SimpleNamespace(ptr=0x7000), 0x7000),
    ],
)
def test_explicit_stream(saxpy, driver, fakes, stream, handle):
    saxpy.launch((1,), saxpy_args(fakes), stream=stream)
    assert driver.launches[0]["stream"] == handle


def test_a_stream_that_is_not_one(saxpy, fakes):
    with pytest.raises(TypeError, match="stream= takes a CUstream handle"):
        saxpy.launch((1,), saxpy_args(fakes), stream="fast")


def test_torch_current_stream(saxpy, driver, fakes, monkeypatch):
    asked = []
    fake_torch = types.ModuleType("torch")
    fake_torch._C = types.SimpleNamespace(
        _cuda_getCurrentRawStream=lambda device: asked.append(device) or 0xAB00
    )
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    saxpy.launch((1,), [fakes.tensor((8,), device=1) for _ in range(3)] + [1.0])
    assert driver.launches[0]["stream"] == 0xAB00
    assert asked == [1]


def test_torch_current_stream_without_the_raw_accessor(saxpy, driver, fakes, monkeypatch):
    fake_torch = types.ModuleType("torch")
    fake_torch.cuda = types.SimpleNamespace(
        current_stream=lambda device: types.SimpleNamespace(cuda_stream=0xCD00 + device)
    )
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    saxpy.launch((1,), [fakes.tensor((8,)) for _ in range(3)] + [1.0])
    assert driver.launches[0]["stream"] == 0xCD00


def test_cupy_current_stream(saxpy, driver, fakes, monkeypatch):
    class CupyArray(fakes.cuda_array):
        __module__ = "cupy"

    fake_cupy = types.ModuleType("cupy")
    fake_cupy.cuda = types.SimpleNamespace(
        get_current_stream=lambda: types.SimpleNamespace(ptr=0xCC00)
    )
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    args = [CupyArray((8,), ptr=BASE + 16 * i) for i in range(3)] + [1.0]
    saxpy.launch((1,), args)
    assert driver.launches[0]["stream"] == 0xCC00


def test_launch_waits_for_the_producer_streams(saxpy, driver, fakes):
    saxpy.launch((1,), saxpy_args(fakes, x=0x51, y=0x52, out=0x51), stream=0x60)
    waits = [c for c in driver.calls if c[0] in ("record_event", "stream_wait_event")]
    event = waits[0][1]
    assert waits == [
        ("record_event", event, 0x51),
        ("stream_wait_event", 0x60, event),
        ("record_event", event, 0x52),
        ("stream_wait_event", 0x60, event),
    ]
    assert driver.events == 1
    assert driver.launches[0]["stream"] == 0x60


def test_no_wait_when_the_producer_is_the_launch_stream(saxpy, driver, fakes):
    saxpy.launch((1,), saxpy_args(fakes, x=0x60), stream=0x60)
    saxpy.launch((1,), saxpy_args(fakes, x=1))  # CAI's 1 is the legacy default stream, 0
    assert not [c for c in driver.calls if c[0] == "record_event"]


def test_v2_arrays_have_no_stream(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[0] = fakes.cuda_array((1000,), ptr=BASE, version=2)
    args[0].__cuda_array_interface__["stream"] = 0x99
    saxpy.launch((1,), args, stream=0x60)
    assert not [c for c in driver.calls if c[0] == "record_event"]


def test_loads_lazily_into_the_primary_context_of_the_arrays_gpu(saxpy, driver, fakes):
    assert driver.calls == []
    saxpy.launch((1,), [fakes.tensor((8,), device=1) for _ in range(3)] + [1.0])
    assert ("primary_context", 1) in driver.calls
    assert ("load_module", "cubin", 0xC1) in driver.calls
    assert driver.launches[0]["context"] == 0xC1
    assert driver.context == 0xC1  # a thread with no context keeps the kernel's
    saxpy.launch((1,), [fakes.tensor((8,), device=1) for _ in range(3)] + [1.0])
    assert [c[0] for c in driver.calls].count("load_module") == 1


def test_no_context_switch_when_the_primary_context_is_current(saxpy, driver, fakes):
    driver.context = 0xC0
    saxpy.launch((1,), saxpy_args(fakes))
    driver.calls.clear()
    saxpy.launch((1,), saxpy_args(fakes))
    assert driver.calls == []
    assert driver.launches[1]["context"] == 0xC0


def test_eager_load_on_a_given_device(driver, contract):
    load_kernel(contract, cubin=b"C", device=2, driver=driver)
    assert ("primary_context", 2) in driver.calls
    assert ("get_function", 0x501, "saxpy_v0") in driver.calls


def test_large_dynamic_shared_memory_is_opted_into(scale_contract, driver):
    load_kernel(scale_contract, cubin=b"C", device=0, driver=driver)
    assert ("set_max_dynamic_shared_memory", 0xF00 + 0x501, 65536) in driver.calls


def test_needs_code(contract):
    with pytest.raises(ValueError, match=r"cubin= .* or ptx="):
        load_kernel(contract)


def test_ptx_fallback_when_the_cubin_is_not_for_this_gpu(contract, driver):
    driver.refuse["cubin"] = CUDA_ERROR_NO_BINARY_FOR_GPU
    load_kernel(contract, cubin=b"C", ptx=".version 8.0", device=0, driver=driver)
    assert driver.modules == [b".version 8.0\0"]


def test_cubin_for_another_gpu_without_ptx(contract, driver):
    driver.refuse["cubin"] = CUDA_ERROR_NO_BINARY_FOR_GPU
    driver.capability = (8, 0)
    with pytest.raises(CudaError, match=r"built for sm_90 but GPU 0 is sm_80 .*compile the kernel"):
        load_kernel(contract, cubin=b"C", device=0, driver=driver)


def test_ptx_from_a_newer_nvrtc_says_to_ship_the_cubin(contract, driver):
    driver.refuse["ptx"] = CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    with pytest.raises(CudaError) as info:
        load_kernel(contract, ptx=".version 9.2", device=0, driver=driver)
    assert info.value.code == CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    assert "came from a newer NVRTC than this driver supports (the driver is CUDA 13.0)" in str(
        info.value
    )
    assert "ship the cubin" in str(info.value)


def test_other_load_failures_pass_through(contract, driver):
    driver.refuse["ptx"] = CUDA_ERROR_INVALID_PTX
    with pytest.raises(CudaError, match="CODE_218"):
        load_kernel(contract, ptx="bad", device=0, driver=driver)


def test_entry_missing_from_the_code(contract, driver):
    contract["entry"] = "missing"
    with pytest.raises(LaunchError, match="no kernel named 'missing'"):
        load_kernel(contract, cubin=b"C", device=0, driver=driver)


def test_scalars_only_kernel_launches_on_device_0(driver):
    contract = {
        "format_version": 1, "kernel": "fill", "entry": "fill", "arch": "sm_90",
        "index_width": 32, "block": [32, 1, 1], "dynamic_smem": 0, "static_smem": 0,
        "values": {}, "tensors": [], "scalars": [{"name": "v", "dtype": "i32"}],
        "slots": [{"kind": "scalar", "type": "i32", "param": "v"}],
    }  # fmt: skip
    kernel = load_kernel(contract, cubin=b"C", driver=driver)
    kernel.launch((1,), [5])
    assert driver.launches[0]["context"] == 0xC0
    assert bytes(kernel.parameter_block()) == struct.pack("<i", 5)


def test_another_current_context_is_put_back_after_each_launch(saxpy, driver, fakes):
    driver.context = 0xAA  # the caller's own context, on the same GPU
    saxpy.launch((1,), saxpy_args(fakes))
    assert driver.launches[0]["context"] == 0xC0
    assert driver.context == 0xAA
    driver.calls.clear()
    saxpy.launch((1,), saxpy_args(fakes))  # the driver refuses the fast path's launch
    assert [launch["context"] for launch in driver.launches] == [0xC0, 0xC0]
    assert driver.calls == [("set_current_context", 0xC0), ("set_current_context", 0xAA)]


def test_a_thread_without_a_context_launches_without_switching_after_the_first(
    saxpy, driver, fakes
):
    saxpy.launch((1,), saxpy_args(fakes))
    driver.calls.clear()
    driver.context = 0  # another thread, say, or the context was unset
    saxpy.launch((1,), saxpy_args(fakes))
    assert driver.calls == []
    assert len(driver.launches) == 2


def test_a_launch_the_driver_refuses_raises_its_error(saxpy, driver, fakes):
    saxpy.launch((1,), saxpy_args(fakes))
    driver.refuse_launch = 701
    with pytest.raises(CudaError) as info:
        saxpy.launch((1,), saxpy_args(fakes))
    assert info.value.code == 701
    assert info.value.call == "cuLaunchKernelEx"
    assert len(driver.launches) == 1


def counting_binds(kernel):
    binds = []
    bind = kernel._binder.bind
    kernel._binder.bind = lambda args, plan, arrays=None: (
        binds.append(1) or bind(args, plan, arrays)
    )
    return binds


@pytest.mark.parametrize(
    ("grid", "expected"),
    [
        ((3,), (3, 1, 1)),
        ((3, 2), (3, 2, 1)),
        ((3, 2, 5), (3, 2, 5)),
        (lambda meta: (meta["N"] // meta["BLOCK"], 2), (3, 2, 1)),
    ],
)
def test_the_fast_path_launches_what_the_reference_path_launched(
    saxpy, driver, fakes, grid, expected
):
    binds = counting_binds(saxpy)
    args = saxpy_args(fakes, n=3 * 256 + 5)
    for stream in (None, 0x77, None):
        saxpy.launch(grid, args, stream=stream)
    assert len(binds) == 1  # the reference path once, then the fast path
    assert [launch["grid"] for launch in driver.launches] == [expected] * 3
    assert [launch["stream"] for launch in driver.launches] == [0, 0x77, 0]
    assert {launch["block"] for launch in driver.launches} == {(128, 1, 1)}
    assert block_bytes(saxpy) == struct.pack(
        "<QQQif", BASE, BASE + 0x1000, BASE + 0x2000, 3 * 256 + 5, 2.0
    )


def test_threads_launch_through_their_own_fast_paths(saxpy, driver, fakes):
    import threading

    binds = counting_binds(saxpy)
    mine = saxpy_args(fakes)
    theirs = [fakes.cuda_array((8,), ptr=BASE + 0x9000 + 16 * i) for i in range(3)] + [3.0]
    blocks = []

    def launch_twice():
        saxpy.launch((1,), theirs)
        saxpy.launch((1,), theirs)
        blocks.append(bytes(saxpy.parameter_block()))

    saxpy.launch((1,), mine)
    thread = threading.Thread(target=launch_twice)
    thread.start()
    thread.join()
    saxpy.launch((1,), mine)  # through the other thread's try_launch, then this thread's
    assert len(binds) == 2  # once per thread
    assert len(driver.launches) == 4
    assert blocks == [struct.pack("<QQQif", BASE + 0x9000, BASE + 0x9010, BASE + 0x9020, 8, 3.0)]
    assert block_bytes(saxpy) == struct.pack(
        "<QQQif", BASE, BASE + 0x1000, BASE + 0x2000, 1000, 2.0
    )


def test_a_stream_handle_out_of_range_is_refused(saxpy, driver, fakes):
    saxpy.launch((1,), saxpy_args(fakes))
    for handle in (-1, 2**64):
        with pytest.raises(LaunchError, match=f"stream={handle} is not a CUstream handle"):
            saxpy.launch((1,), saxpy_args(fakes), stream=handle)
    assert len(driver.launches) == 1
