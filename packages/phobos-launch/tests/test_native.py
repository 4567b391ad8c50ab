"""The native fast path (native.py, native_fast_launch.c): built here, launching through a fake
driver's C entry point, with the outcome of the generated Python for every argument."""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import struct
import subprocess
import sys
import sysconfig
import threading
import tracemalloc

import pytest

from phobos.launch import CudaError, DriverNotFound, LaunchError, load_kernel, shared_driver
from phobos.launch import native as native_module
from phobos.launch.native import HEADER, SOURCE, build_extension, native_status
from phobos.launch.table import LaunchTable, c_header

from .conftest import SAXPY, CudaArray, FakeDriver, Tensor, fast_launch

BASE = 0x7F0000000000

needs_native = pytest.mark.skipif(
    native_module.native_module() is None, reason=native_status()
)  # a machine with no C compiler: the generated Python serves (tested in test_fastpath.py)


def saxpy_tensors(n: int = 1000) -> list[Tensor]:
    return [Tensor((n,), ptr=BASE + i * 0x10000) for i in range(3)]


def both_paths(args):
    """(native result, Python result, native bytes, Python bytes, launches) for one call."""
    results = []
    for native in (True, False):
        driver = FakeDriver()
        kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
        fast = fast_launch(kernel, [*saxpy_tensors(), 2.0], native=native)
        assert fast is not None
        grid, call_args, stream = args
        code = fast(grid, call_args, stream)
        results.append((code, bytes(kernel.parameter_block()), driver.launches))
    return results


@needs_native
def test_a_steady_launch_of_torch_tensors_takes_the_native_path():
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    args = [*saxpy_tensors(), 2.0]
    kernel.launch((8,), args)  # the reference path, which makes the fast path
    assert type(kernel.try_launch).__name__ == "FastLaunch"
    kernel.launch((8,), [*saxpy_tensors(), 0.5])
    first, second = driver.launches
    assert (first["caller"], second["caller"]) == ("python", "native")
    assert second["grid"] == (8, 1, 1) and second["block"] == (128, 1, 1)
    assert bytes(kernel.parameter_block()) == struct.pack(
        "<QQQif", BASE, BASE + 0x10000, BASE + 0x20000, 1000, 0.5
    )


GRIDS = [(1,), (3, 2), (3, 2, 5), (0,), (-1,), (2**31,), (1, 65536), (1.0,), [4], (), (1, 2, 3, 4),
         lambda meta: (meta["N"] // meta["BLOCK"] + 1,), lambda meta: 7, lambda meta: (True,)]  # fmt: skip
STREAMS = [None, 0, 7, 2**64 - 1, 2**64, -1, type("S", (), {"cuda_stream": 9})(), True]
SCALARS = [2.0, 3, True, 1e39, -1e39, float("inf"), float("nan"), "x", None, 2**70]


@needs_native
@pytest.mark.parametrize("grid", GRIDS)
@pytest.mark.parametrize("stream", STREAMS)
def test_grids_and_streams_as_the_generated_python_takes_them(grid, stream):
    try:
        native, python = both_paths((grid, [*saxpy_tensors(), 2.0], stream))
    except TypeError:  # a stream= the generated Python refuses outright: the native path too
        with pytest.raises(TypeError):
            both_paths((grid, [*saxpy_tensors(), 2.0], object()))
        return
    assert native[0] == python[0]
    if native[0] == 0:
        assert native[1] == python[1]
        same = ("grid", "block", "smem", "stream", "function", "context")
        assert [[n[k] for k in same] for n in native[2]] == [
            [p[k] for k in same] for p in python[2]
        ]


@needs_native
@pytest.mark.parametrize("alpha", SCALARS)
def test_scalars_as_the_generated_python_takes_them(alpha):
    native, python = both_paths(((1,), (*saxpy_tensors(), alpha), None))
    assert native[0] == python[0]
    if native[0] == 0:
        assert native[1] == python[1]


@needs_native
def test_a_bad_launch_after_the_steady_state_is_explained_by_the_reference_path():
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    kernel.launch((1,), [*saxpy_tensors(), 2.0])
    kernel.launch((1,), [*saxpy_tensors(), 2.0])
    with pytest.raises(LaunchError, match="x: expected a f32 tensor, got f16"):
        kernel.launch((1,), [Tensor((1000,), "float16", ptr=BASE), *saxpy_tensors()[1:], 2.0])
    with pytest.raises(LaunchError, match="extent N disagrees"):
        kernel.launch((1,), [*saxpy_tensors()[:2], Tensor((999,), ptr=BASE), 2.0])
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        kernel.launch((1,), saxpy_tensors())
    assert [launch["caller"] for launch in driver.launches] == ["python", "native"]


@needs_native
def test_another_thread_gets_its_own_fast_path():
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    kernel.launch((1,), [*saxpy_tensors(), 2.0])
    mine = kernel.try_launch
    seen = []

    def launch_twice():
        seen.append(mine((1,), [*saxpy_tensors(), 2.0], None))  # not this thread's: None
        kernel.launch((2,), [*saxpy_tensors(), 2.0])
        kernel.launch((3,), [*saxpy_tensors(), 2.0])
        seen.append(mine((4,), [*saxpy_tensors(), 2.0], None))  # hands over to the thread's own

    thread = threading.Thread(target=launch_twice)
    thread.start()
    thread.join()
    assert seen == [None, 0]
    assert [(launch["grid"][0], launch["caller"]) for launch in driver.launches] == [
        (1, "python"), (2, "python"), (3, "native"), (4, "native")
    ]  # fmt: skip


@needs_native
def test_an_interrupt_in_a_grid_function_goes_up_and_other_errors_mean_retry():
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    fast = fast_launch(kernel, [*saxpy_tensors(), 2.0], native=True)

    def interrupted(meta):
        raise KeyboardInterrupt

    def broken(meta):
        raise KeyError("M")

    with pytest.raises(KeyboardInterrupt):
        fast(interrupted, [*saxpy_tensors(), 2.0], None)
    assert fast(broken, [*saxpy_tensors(), 2.0], None) is None
    assert driver.launches == []


@needs_native
@pytest.mark.parametrize("arrays", ["torch", "cai"])
def test_steady_launches_hold_no_memory(arrays):
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    made = saxpy_tensors() if arrays == "torch" else cai_saxpy(stream=7)
    args = (*made, 2.0)
    fast = fast_launch(kernel, list(args), native=True)
    grid = lambda meta: (4,)  # noqa: E731
    for _ in range(100):
        fast(grid, args, 7)
    driver.launches.clear()
    held = (*args, grid, *(getattr(a, "shape", a) for a in made))
    held += tuple(getattr(a, "__cuda_array_interface__", a) for a in made)
    counts = [sys.getrefcount(o) for o in held]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(2000):
        assert fast(grid, args, 7) == 0
        driver.launches.clear()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert [sys.getrefcount(o) for o in held] == counts
    assert grown < 20_000  # a leak of one int per launch would be 64 kB


def test_a_missing_compiler_leaves_the_generated_python(monkeypatch, tmp_path):
    monkeypatch.setattr(native_module, "_module", None)
    monkeypatch.setattr(native_module, "_status", None)
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path))
    real = sysconfig.get_config_var
    monkeypatch.setattr(
        sysconfig, "get_config_var", lambda name: "/no/such/cc" if name == "CC" else real(name)
    )
    assert "native launch path is off: /no/such/cc could not run" in native_status()
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    kernel.launch((1,), [*saxpy_tensors(), 2.0])
    kernel.launch((1,), [*saxpy_tensors(), 2.0])
    assert [launch["caller"] for launch in driver.launches] == ["python", "python"]
    assert kernel.try_launch.source.startswith("def try_launch")


def test_the_switch_turns_the_native_path_off(monkeypatch):
    monkeypatch.setenv("PHOBOS_NATIVE_LAUNCH", "0")
    assert native_status() == "the native launch path is off: PHOBOS_NATIVE_LAUNCH=0"
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    for _ in range(2):
        kernel.launch((1,), [*saxpy_tensors(), 2.0])
    assert [launch["caller"] for launch in driver.launches] == ["python", "python"]


@needs_native
def test_a_build_is_kept_and_found_again(tmp_path):
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    older = tmp_path / f"phobos_native_launch-0123456789abcdef{suffix}"
    older.write_bytes(b"an earlier version's build")
    path = build_extension(tmp_path)
    assert not older.exists()  # replaced by this version's
    assert path.exists() and path.name.startswith("phobos_native_launch-")
    stamp = path.stat().st_mtime_ns
    assert build_extension(tmp_path) == path and path.stat().st_mtime_ns == stamp
    names = sorted(p.name for p in tmp_path.iterdir())  # no temporary left behind
    assert names == sorted([path.name, path.name + ".sha256", "phobos_native_launch.lock"])
    assert (tmp_path / (path.name + ".sha256")).read_text().strip() == hashlib.sha256(
        path.read_bytes()
    ).hexdigest()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on this machine")
def test_the_c_source_compiles_without_warnings(tmp_path):
    """With the header table.c_header() writes; its static assertions check the layout."""
    include = sysconfig.get_paths()["include"]
    (tmp_path / HEADER).write_text(c_header())
    done = subprocess.run(
        ["gcc", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", f"-I{tmp_path}",
         f"-I{include}", str(SOURCE), "-o", str(tmp_path / "x.so")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_module_says_whether_the_native_path_is_on():
    """``python -m phobos.launch``: the driver first; the native path only where it is used."""
    done = subprocess.run([sys.executable, "-m", "phobos.launch"], capture_output=True, text=True)
    assert not done.stderr
    try:
        shared_driver()
    except (DriverNotFound, CudaError):
        assert done.returncode == 1
        assert done.stdout.startswith("CUDA driver: ")
        assert "unused here without a driver" in done.stdout.splitlines()[-1]
        return
    assert done.returncode == 0
    on = native_module.native_module() is not None
    assert ("native launch path: on" in done.stdout) == on


def test_the_module_has_help_and_a_version():
    for flag, start in (
        ("--help", "usage: python -m phobos.launch"),
        ("--version", "phobos-launch "),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "phobos.launch", flag], capture_output=True, text=True
        )
        assert done.returncode == 0 and done.stdout.startswith(start), done


def cai_saxpy(**changes):
    """Three CUDA-array-interface arrays for saxpy; ``changes`` edits one of them (``out``)."""
    arrays = [CudaArray((1000,), ptr=BASE + i * 0x10000) for i in range(3)]
    arrays[2].__cuda_array_interface__.update(changes)
    return arrays


CAI_CASES = {
    "as made": {},
    "made on the launch stream": {"stream": 7},
    "made on the legacy stream": {"stream": 1},
    "made on another stream": {"stream": 9},
    "v2 (its stream is not read)": {"stream": 9, "version": 2},
    "readonly output": {"data": (BASE + 0x20000, True)},
    "null pointer": {"data": (0, False)},
    "pointer the driver does not know": {"data": (0x800, False)},
    "misaligned": {"data": (BASE + 0x20004, False)},
    "f16": {"typestr": "<f2"},
    "big-endian": {"typestr": ">f4"},
    "masked": {"mask": object()},
    "unmasked": {"mask": None},
    "byte strides": {"strides": (4,)},
    "strided": {"strides": (8,)},
    "strides in half elements": {"strides": (2,)},
    "shape as a list": {"shape": [1000]},
    "two axes": {"shape": (10, 100)},
    "another extent": {"shape": (999,)},
}


@needs_native
@pytest.mark.parametrize("case", CAI_CASES, ids=list(CAI_CASES))
@pytest.mark.parametrize("stream", [None, 7])
def test_cai_arrays_as_the_generated_python_takes_them(case, stream):
    """The native path reads __cuda_array_interface__ (v2/v3) as arrays.read_cai does, asks the
    driver for each pointer's GPU, and declines what the reference path must explain or order."""
    results = []
    for native in (True, False):
        driver = FakeDriver()
        kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
        fast = fast_launch(kernel, [*cai_saxpy(), 2.0], native=native)
        assert fast is not None and (type(fast).__name__ == "FastLaunch") == native
        code = fast((4,), [*cai_saxpy(**CAI_CASES[case]), 2.0], stream)
        results.append((code, bytes(kernel.parameter_block()) if code == 0 else None))
        if code == 0:
            assert [launch["caller"] for launch in driver.launches] == [
                "native" if native else "python"
            ]
    assert results[0] == results[1]


def test_the_header_declares_what_table_py_defines():
    """The slot sources, slot types and readers are numbered once, in Python; the C sees them
    through the header (whose static assertions hold the struct to the ctypes layout)."""
    header = c_header()
    assert (
        "enum { SOURCE_POINTER = 0, SOURCE_STRIDE = 1, SOURCE_EXTENT = 2, SOURCE_SCALAR = 3, "
        "SOURCE_TENSORMAP = 4 };" in header
    )
    assert "TYPE_BOOL = 0," in header and "TYPE_F64 = 12, TYPE_TMAP = 13 };" in header
    assert "enum { READ_TORCH = 0, READ_CAI = 1 };" in header
    assert f"sizeof(LaunchTable) == {ctypes.sizeof(LaunchTable)}" in header


@needs_native
def test_a_table_the_c_cannot_read_safely_is_refused():
    kernel = load_kernel(SAXPY, cubin=b"C", driver=FakeDriver())
    fast = fast_launch(kernel, [*saxpy_tensors(), 2.0], native=True)
    table, module = fast.table, native_module.native_module()
    with pytest.raises(ValueError, match="not a LaunchTable of this build"):
        module.FastLaunch(bytearray(64))
    for field, bad in [("ntensors", 65), ("nslots", -1), ("nextents", 2)]:
        good = getattr(table, field)
        setattr(table, field, bad)
        try:
            with pytest.raises(ValueError, match="not a LaunchTable of this build"):
                module.FastLaunch(table)
        finally:
            setattr(table, field, good)
    assert module.FastLaunch(table)((1,), [*saxpy_tensors(), 2.0], None) == 0
