"""On a real GPU: a hand-written PTX kernel launched on torch and CuPy arrays.

Each test skips, with the reason, where there is no CUDA driver, no GPU, or no
torch/CuPy.  The kernel writes each element's global index into an int32 array.
"""

from __future__ import annotations

import ctypes
import threading

import pytest

from phobos.launch import CudaError, DriverNotFound, LaunchError, load_kernel, shared_driver

pytestmark = pytest.mark.gpu

WRITE_INDEX_PTX = """\
.version 7.0
.target sm_80
.address_size 64

.visible .entry write_index(
    .param .u64 write_index_out,
    .param .u32 write_index_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [write_index_out];
    ld.param.u32 %r1, [write_index_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
DONE:
    ret;
}
"""

WRITE_INDEX = {
    "format_version": 1,
    "kernel": "write_index",
    "entry": "write_index",
    "arch": "sm_80",
    "index_width": 32,
    "block": [128, 1, 1],
    "dynamic_smem": 0,
    "static_smem": 0,
    "values": {"BLOCK": 128},
    "tensors": [
        {"name": "out", "dtype": "i32", "dims": ["N"], "read": False, "written": True,
         "align": 4, "unit_stride": True},
    ],
    "scalars": [],
    "slots": [
        {"kind": "pointer", "type": "u64", "param": "out"},
        {"kind": "extent", "type": "i32", "param": "N"},
    ],
    "params": ["out"],
}  # fmt: skip


def blocks(meta):
    return (-(-meta["N"] // meta["BLOCK"]),)


@pytest.fixture(scope="module")
def gpu():
    try:
        return shared_driver()
    except DriverNotFound as exc:
        pytest.skip(f"no CUDA driver here: {exc.detail}")
    except CudaError as exc:
        pytest.skip(f"the CUDA driver has no usable GPU: {exc}")


@pytest.fixture(scope="module")
def kernel(gpu):
    return load_kernel(WRITE_INDEX, ptx=WRITE_INDEX_PTX)


@pytest.fixture(scope="module")
def torch(gpu):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@pytest.fixture(scope="module")
def cupy(gpu):
    try:
        import cupy
    except Exception as exc:  # CuPy raises more than ImportError without a CUDA runtime
        pytest.skip(f"CuPy unavailable: {exc}")
    return cupy


def test_torch_tensor(kernel, torch):
    out = torch.full((1000,), -1, dtype=torch.int32, device="cuda")
    kernel.launch(blocks, (out,))
    torch.cuda.synchronize()
    assert out.tolist() == list(range(1000))


def test_torch_current_stream_and_explicit_stream(kernel, torch):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        out = torch.full((4096,), -1, dtype=torch.int32, device="cuda")
        kernel.launch(blocks, (out,))
    side.synchronize()
    assert out.tolist() == list(range(4096))
    other = torch.full((300,), -1, dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    kernel.launch(blocks, (other,), stream=side)
    side.synchronize()
    assert other.tolist() == list(range(300))


def test_torch_strided_view_is_refused(kernel, torch):
    out = torch.zeros(64, dtype=torch.int32, device="cuda")[::2]
    with pytest.raises(LaunchError, match=r"non-contiguous .* pass \.contiguous\(\)"):
        kernel.launch(blocks, (out,))


def test_torch_wrong_dtype_is_refused(kernel, torch):
    out = torch.zeros(64, dtype=torch.float32, device="cuda")
    with pytest.raises(LaunchError, match="out: expected a i32 tensor, got f32"):
        kernel.launch(blocks, (out,))


def test_torch_cpu_tensor_is_refused(kernel, torch):
    with pytest.raises(LaunchError, match=r"move it to the GPU first"):
        kernel.launch(blocks, (torch.zeros(4, dtype=torch.int32),))


def test_cupy_array(kernel, cupy):
    out = cupy.full((1000,), -1, dtype=cupy.int32)
    kernel.launch(blocks, (out,))
    cupy.cuda.Device().synchronize()
    assert out.get().tolist() == list(range(1000))


def test_cupy_array_made_on_another_stream(kernel, cupy):
    producer = cupy.cuda.Stream(non_blocking=True)
    with producer:
        out = cupy.full((1 << 20,), -1, dtype=cupy.int32)  # its CAI v3 stream is `producer`
    kernel.launch(blocks, (out,), stream=cupy.cuda.Stream(non_blocking=True))
    cupy.cuda.Device().synchronize()
    assert (out.get() == list(range(1 << 20))).all()


WRITE_INDEX_CUDA = """\
extern "C" __global__ void write_index(int* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i;
}
"""


def test_cubin_is_preferred(gpu, torch):
    """With a cubin for the card the launcher loads it, not the PTX beside it (here not PTX)."""
    toolchain = pytest.importorskip("phobos.compile.toolchain")  # NVRTC builds the cubin
    major, minor = gpu.compute_capability(torch.cuda.current_device())
    cubin = toolchain.compile_cuda(
        WRITE_INDEX_CUDA, arch=f"sm_{major}{minor}", name="write_index"
    ).cubin
    kernel = load_kernel(WRITE_INDEX, cubin=cubin, ptx="not PTX: the cubin must be used")
    out = torch.full((257,), -1, dtype=torch.int32, device="cuda")
    kernel.launch(blocks, (out,))
    torch.cuda.synchronize()
    assert out.tolist() == list(range(257))


def test_launch_with_another_context_current(kernel, torch, gpu):
    """The caller's own context stays current; the kernel still runs in the primary context."""
    cuda = ctypes.CDLL("libcuda.so.1")
    out = torch.full((300,), -1, dtype=torch.int32, device="cuda")
    mine = ctypes.c_void_p()
    assert cuda.cuCtxCreate_v2(ctypes.byref(mine), 0, out.get_device()) == 0
    try:
        for _ in range(3):  # the reference path, then the fast path the driver refuses
            kernel.launch(blocks, (out,))
        current = ctypes.c_void_p()
        cuda.cuCtxGetCurrent(ctypes.byref(current))
        assert current.value == mine.value
    finally:
        cuda.cuCtxDestroy_v2(mine)
        torch.cuda.synchronize()
    assert out.tolist() == list(range(300))


def test_launch_from_a_thread_with_no_context(kernel, torch):
    out = torch.full((300,), -1, dtype=torch.int32, device="cuda")
    errors = []

    def launch():
        try:
            for _ in range(3):
                kernel.launch(blocks, (out,))
        except Exception as exc:  # reported below, on the test's thread
            errors.append(exc)

    thread = threading.Thread(target=launch)
    thread.start()
    thread.join()
    torch.cuda.synchronize()
    assert errors == []
    assert out.tolist() == list(range(300))


def test_torch_steady_launches_take_the_native_path(torch):
    """The second launch of a signature makes the native fast path; it launches right, and a
    launch it cannot take (a strided view) still gets the reference path's refusal."""
    from phobos.launch.native import native_status

    if "is on" not in native_status():
        pytest.fail(f"the GPU machine should build the native launch path: {native_status()}")
    kernel = load_kernel(WRITE_INDEX, ptx=WRITE_INDEX_PTX)
    first = torch.full((10,), -1, dtype=torch.int32, device="cuda")
    kernel.launch(blocks, (first,))
    assert type(kernel.try_launch).__name__ == "FastLaunch"
    for n in (1, 1000, 123_457):
        out = torch.full((n,), -1, dtype=torch.int32, device="cuda")
        assert kernel.try_launch(blocks, (out,), None) == 0
        torch.cuda.synchronize()
        assert torch.equal(out, torch.arange(n, dtype=torch.int32, device="cuda"))
    strided = torch.zeros(64, dtype=torch.int32, device="cuda")[::2]
    assert kernel.try_launch(blocks, (strided,), None) is None
    with pytest.raises(LaunchError, match=r"non-contiguous"):
        kernel.launch(blocks, (strided,))


def test_the_timing_calls_phobos_autotune_makes(kernel, torch):
    """Timed events around a launch, a stream's synchronisation, a scratch buffer zeroed on a
    stream: the driver binding phobos-autotune times and flushes L2 with."""
    driver = shared_driver()
    out = torch.full((300,), -1, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    assert driver.current_device() == out.device.index
    assert driver.l2_cache_bytes(driver.current_device()) > 1 << 20
    scratch = driver.allocate(1 << 20)
    start, end = driver.create_event(True), driver.create_event(True)
    driver.memset_async(scratch, 1 << 20, stream)
    driver.record_event(start, stream)
    kernel.launch(blocks, (out,))
    driver.record_event(end, stream)
    assert driver.elapsed_ms(start, end) >= 0.0
    driver.synchronize_stream(stream)
    for event in (start, end):
        driver.destroy_event(event)
    driver.free(scratch)
    assert out.tolist() == list(range(300))
