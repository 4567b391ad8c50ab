"""Every check a launch makes, with its message; nothing is launched when one fails."""

from __future__ import annotations

import contextlib
import re

import pytest

from phobos.launch import HOST, DriverNotFound, LaunchError, load_kernel, read_arguments
from phobos.launch import kernel as kernel_module

from .conftest import SAXPY, FakeDriver, fast_launch

BASE = 0x7F0000000000


def saxpy_args(fakes, n=1000, **out):
    x = fakes.cuda_array((n,), ptr=BASE)
    y = fakes.cuda_array((n,), ptr=BASE + 0x10000)
    o = fakes.cuda_array((n,), ptr=BASE + 0x20000, **out)
    return [x, y, o, 2.0]


def refused(kernel, driver, args, pattern, *, by_binder=True):
    """The launch is refused with ``pattern``; binder checks are refused by the fast path too."""
    if by_binder:
        fast_path_refuses(kernel, args)
    with pytest.raises(LaunchError, match=pattern) as info:
        kernel.launch((1,), args)
    assert driver.launches == []
    return str(info.value)


def fast_path_refuses(kernel, args):
    try:
        fast = fast_launch(kernel, args)
    except LaunchError:
        return  # refused before any plan exists
    if fast is None:
        return  # no fast path for these argument types
    with contextlib.suppress(ValueError):  # LaunchError too
        assert fast((1,), args, None) is None, fast.source
    assert kernel.driver.launches == []


def test_good_arguments_bind(saxpy, fakes):
    binding = saxpy.bind(saxpy_args(fakes))
    assert binding.device == 0
    assert binding.extents == {"N": 1000}
    assert binding.slot_values == (BASE, BASE + 0x10000, BASE + 0x20000, 1000, 2.0)


def test_argument_count(saxpy, driver, fakes):
    message = refused(saxpy, driver, saxpy_args(fakes)[:3], "takes 4 arguments")
    assert message == "saxpy takes 4 arguments (x, y, out, alpha), got 3"


def test_dtype(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[1] = fakes.cuda_array((1000,), typestr="<f2", ptr=BASE)
    message = refused(saxpy, driver, args, "expected a f32 tensor")
    assert message == "saxpy: y: expected a f32 tensor, got f16 (shape (1000,))"


def test_unknown_typestr_is_named_as_given(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[0] = fakes.cuda_array((1000,), typestr="<c8", ptr=BASE)
    refused(saxpy, driver, args, r"x: expected a f32 tensor, got <c8")


def test_rank(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[2] = fakes.cuda_array((10, 100), ptr=BASE)
    message = refused(saxpy, driver, args, "expected a 1-D tensor")
    assert "out: expected a 1-D tensor for tensor<f32>[N], got shape (10, 100) (2-D)" in message


def test_named_extent_disagreement_names_both(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[1] = fakes.cuda_array((999,), ptr=BASE)
    message = refused(saxpy, driver, args, "extent N disagrees")
    assert message == "saxpy: extent N disagrees: x has N = 1000 (axis 0), y has N = 999 (axis 0)"


def test_literal_dim(scale_contract, driver, fakes):
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((8, 4), typestr="<f2")
    b = fakes.cuda_array((4, 32), typestr="<f2")
    c = fakes.cuda_array((8, 64))
    message = refused(kernel, driver, [a, b, c, 1.0, 3, True], "must be 64")
    assert message == (
        "scale: b: axis 1 must be 64 (declared tensor<f16>[K, 64]), got 32 (shape (4, 32))"
    )


def test_arrays_on_two_gpus(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    driver.pointer_devices[BASE + 0x20000] = 1
    message = refused(saxpy, driver, args, "one GPU")
    assert message == "saxpy: out is on GPU 1 but x is on GPU 0; pass all arrays on one GPU"


def test_torch_tensors_on_two_gpus(saxpy, driver, fakes):
    args = [fakes.tensor((4,)), fakes.tensor((4,), device=1), fakes.tensor((4,)), 1.0]
    refused(saxpy, driver, args, "y is on GPU 1 but x is on GPU 0")


def test_kernel_pinned_to_a_device(driver, contract, fakes):
    kernel = load_kernel(contract, cubin=b"C", device=0, driver=driver)
    args = [fakes.tensor((4,), device=1) for _ in range(3)] + [1.0]
    message = "arrays are on GPU 1 but the kernel was loaded for GPU 0"
    refused(kernel, driver, args, message, by_binder=False)


def test_cpu_tensor_is_refused_with_a_hint(saxpy, driver, fakes):
    args = [fakes.tensor((4,)), fakes.tensor((4,), device=-1), fakes.tensor((4,)), 1.0]
    message = refused(saxpy, driver, args, "y:")
    assert message == (
        "saxpy: y: got a torch tensor on cpu; move it to the GPU first (.cuda() or .to('cuda'))"
    )


def test_host_array_and_other_objects(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[0] = fakes.host_array()
    message = refused(saxpy, driver, args, "host array")
    assert message.startswith("saxpy: x: expected a GPU array for tensor<f32>[N]; got a host")
    assert "CPU interpreter" in message
    args[0] = [1.0, 2.0]
    refused(saxpy, driver, args, r"got list \[1.0, 2.0\], which is not a GPU array")


def test_pointer_the_driver_does_not_know(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[0] = fakes.cuda_array((1000,), ptr=0x40)
    refused(saxpy, driver, args, "0x40 is not GPU memory the CUDA driver knows")


def test_alignment(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[0] = fakes.cuda_array((1000,), ptr=BASE + 4)
    message = refused(saxpy, driver, args, "not a multiple of 16 bytes")
    assert message.startswith(
        "saxpy: x: data pointer 0x7f0000000004 is not a multiple of 16 bytes, "
        "the alignment the kernel was specialised for"
    )


def test_element_alignment_is_checked_even_without_a_contract_assumption(
    scale_contract, driver, fakes
):
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((8, 4), typestr="<f2", ptr=BASE + 1)
    b = fakes.cuda_array((4, 64), typestr="<f2")
    c = fakes.cuda_array((8, 64))
    refused(
        kernel,
        driver,
        [a, b, c, 1.0, 3, True],
        r"0x7f0000000001 is not a multiple of its element size \(2 bytes\)",
    )


def test_unit_stride(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[1] = fakes.cuda_array((1000,), ptr=BASE, strides=(8,))
    message = refused(saxpy, driver, args, "non-contiguous")
    assert message == (
        "saxpy: y: non-contiguous last axis (stride 2, shape (1000,)); the kernel was "
        "specialised for unit stride; pass .contiguous()"
    )


def test_unit_stride_ignores_a_last_axis_of_one(saxpy, fakes):
    args = saxpy_args(fakes, n=1)
    args[1] = fakes.cuda_array((1,), ptr=BASE, strides=(40,))
    assert saxpy.bind(args).extents == {"N": 1}


def test_strides_that_are_not_whole_elements(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[1] = fakes.cuda_array((1000,), ptr=BASE, strides=(6,))
    refused(saxpy, driver, args, r"y: strides \(6,\) \(bytes\) are not whole elements of 4")


def test_readonly_array_the_kernel_writes(saxpy, driver, fakes):
    args = saxpy_args(fakes, readonly=True)
    message = refused(saxpy, driver, args, "read-only")
    assert message.startswith(
        "saxpy: out is read-only (its __cuda_array_interface__ says readonly)"
    )
    readonly_input = saxpy_args(fakes)
    readonly_input[0] = fakes.cuda_array((1000,), ptr=BASE, readonly=True)
    saxpy.launch((1,), readonly_input)


def test_index_width_extent(saxpy, driver, fakes):
    args = saxpy_args(fakes, n=2**31)
    args[0] = fakes.cuda_array((2**31,), ptr=BASE)
    args[1] = fakes.cuda_array((2**31,), ptr=BASE)
    message = refused(saxpy, driver, args, "64-bit variant is needed")
    assert message.startswith("saxpy: extent N = 2147483648 (axis 0 of x) does not fit")


def test_index_width_element_offset(scale_contract, driver, fakes):
    scale_contract["index_width"] = 32
    for slot in scale_contract["slots"]:
        if slot["kind"] in ("stride", "extent"):
            slot["type"] = "i32"
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((2, 4), typestr="<f2", strides=(2**32, 2))
    b = fakes.cuda_array((4, 64), typestr="<f2")
    c = fakes.cuda_array((2, 64))
    message = refused(kernel, driver, [a, b, c, 1.0, 3, True], "64-bit variant")
    assert message.startswith("scale: a: element offsets reach 2147483651 (≥ 2^31)")


def test_stride_slot_that_overflows_32_bits(scale_contract, driver, fakes):
    scale_contract["index_width"] = 32
    for slot in scale_contract["slots"]:
        if slot["kind"] in ("stride", "extent"):
            slot["type"] = "i32"
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((1, 4), typestr="<f2", strides=(2**32, 2))
    b = fakes.cuda_array((4, 64), typestr="<f2")
    c = fakes.cuda_array((1, 64))
    message = refused(kernel, driver, [a, b, c, 1.0, 3, True], "does not fit")
    assert message == (
        "scale: stride 0 of a = 2147483648 does not fit this variant's i32 index slots; "
        "a 64-bit variant is needed"
    )


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("2.0", "alpha: expected a f32 scalar (a real number), got str '2.0'"),
        (None, "alpha: expected a f32 scalar (a real number), got NoneType None"),
    ],
)
def test_scalar_of_the_wrong_kind(saxpy, driver, fakes, value, pattern):
    args = saxpy_args(fakes)
    args[3] = value
    refused(saxpy, driver, args, re.escape(pattern))


def test_array_for_a_scalar(saxpy, driver, fakes):
    args = saxpy_args(fakes)
    args[3] = fakes.tensor((1,))
    refused(saxpy, driver, args, "alpha: expected a f32 scalar .* got an array")


def test_scalar_that_does_not_fit(scale_contract, driver, fakes):
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((8, 4), typestr="<f2")
    b = fakes.cuda_array((4, 64), typestr="<f2")
    c = fakes.cuda_array((8, 64))
    refused(kernel, driver, [a, b, c, 1e6, 3, True], r"scale: s: 1000000.0 does not fit f16")
    refused(kernel, driver, [a, b, c, 1.0, 2**63, True], r"scale: n: \d+ does not fit i64")
    refused(kernel, driver, [a, b, c, 1.0, 2.5, True], r"n: expected a i64 scalar \(an integer\)")
    refused(kernel, driver, [a, b, c, 1.0, 3, 2], r"on: expected a bool scalar \(True or False\)")


@pytest.mark.parametrize(
    ("grid", "pattern"),
    [
        ((2**31,), "grid x = 2147483648 exceeds the limit 2147483647"),
        ((1, 65536), "grid y = 65536 exceeds the limit 65535"),
        ((1, 1, 70000), "grid z = 70000 exceeds the limit 65535"),
        ((-1,), "grid x = -1 is negative"),
        ((1.5,), "grid x must be an int, got float 1.5"),
        ((), r"a grid is a tuple of 1 to 3 ints, got \(\)"),
        ((1, 1, 1, 1), "a grid is a tuple of 1 to 3 ints"),
        (4, "a grid is a tuple of 1 to 3 ints, got 4"),
    ],
)
def test_grid_limits(saxpy, driver, fakes, grid, pattern):
    with pytest.raises(LaunchError, match=pattern):
        saxpy.launch(grid, saxpy_args(fakes))
    assert driver.launches == []


def test_shared_memory_over_the_device_limit(scale_contract, driver, fakes):
    driver.max_smem = 48 * 1024
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((8, 4), typestr="<f2")
    b = fakes.cuda_array((4, 64), typestr="<f2")
    c = fakes.cuda_array((8, 64))
    message = refused(kernel, driver, [a, b, c, 1.0, 3, True], "shared memory", by_binder=False)
    assert message == (
        "scale needs 66560 bytes of shared memory per block (static 1024 + dynamic 65536) "
        "but GPU 0 allows 49152"
    )


def test_block_larger_than_the_compiled_kernel_allows(saxpy, driver, fakes):
    driver.max_threads = 64
    message = "block has 128 threads but .* at most 64"
    refused(saxpy, driver, saxpy_args(fakes), message, by_binder=False)


def test_checks_that_need_no_driver_come_before_pointer_queries(saxpy, driver, fakes):
    """A wrong dtype is reported as one even when no pointer can be asked about (no driver)."""

    def no_driver(pointer):
        raise DriverNotFound("libcuda.so.1: cannot open shared object file")

    driver.pointer_device = no_driver
    args = saxpy_args(fakes)
    args[2] = fakes.cuda_array((1000,), typestr="<f2", ptr=BASE + 0x20000)
    refused(saxpy, driver, args, "out: expected a f32 tensor, got f16", by_binder=False)
    args = saxpy_args(fakes)
    args[2] = fakes.cuda_array((999,), ptr=BASE + 0x20000)
    refused(saxpy, driver, args, "extent N disagrees", by_binder=False)


@pytest.mark.parametrize(
    ("index", "shape", "fields", "pattern"),
    [
        (2, (1000,), {"typestr": "<f2"}, "out: expected a f32 tensor, got f16"),
        (0, (10, 100), {}, "x: expected a 1-D tensor"),
        (1, (999,), {}, "extent N disagrees"),
        (1, (1000,), {"strides": (8,)}, "y: non-contiguous last axis"),
    ],
)
def test_bind_without_a_driver_reports_the_argument_problem(
    contract, fakes, monkeypatch, index, shape, fields, pattern
):
    """No libcuda at all (the kernel's driver is the shared one, which cannot load): ``bind``
    still names what is wrong with an argument, and needs the driver only for good ones."""

    def no_driver():
        raise DriverNotFound("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(kernel_module, "shared_driver", no_driver)
    kernel = load_kernel(contract, cubin=b"CUBIN")
    args = saxpy_args(fakes)
    args[index] = fakes.cuda_array(shape, ptr=BASE + 0x10000 * index, **fields)
    with pytest.raises(LaunchError, match=pattern):
        kernel.bind(args)
    with pytest.raises(DriverNotFound):
        kernel.bind(saxpy_args(fakes))  # good arguments: now a pointer must be asked about


@pytest.mark.parametrize("native", [False, True])
def test_the_fast_paths_ask_the_driver_last(native, fakes):
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)
    fast = fast_launch(kernel, saxpy_args(fakes), native=native)
    if fast is None:
        pytest.skip("no native launch path on this machine")
    driver.pointer_queries = 0
    bad = saxpy_args(fakes)
    bad[1] = fakes.cuda_array((999,), ptr=BASE + 0x10000)
    assert fast((1,), bad, None) is None
    assert fast(lambda meta: None, saxpy_args(fakes), None) is None
    assert driver.pointer_queries == 0
    assert fast((1,), saxpy_args(fakes), None) == 0
    assert driver.pointer_queries == 3


def test_arguments_read_once_wherever_they_live(fakes):
    host = fakes.host_array((3, 4), "<f8", ptr=0x5000)
    host.__array_interface__["strides"] = (8, 24)
    cpu = fakes.tensor((5,), device=-1)
    args = [fakes.cuda_array((2,), ptr=0x1000), fakes.tensor((6,), ptr=0x2000), host, cpu, 2.0]
    assert read_arguments(args) == [
        (0x1000, (2,), (1,), "f32", None, False, None),
        (0x2000, (6,), (1,), "f32", 0, False, None),
        (0x5000, (3, 4), (1, 3), "f64", HOST, False, None),
        (0x7F0000000000, (5,), (1,), "f32", HOST, False, None),
        None,
    ]
    broken = fakes.cuda_array((2,), strides=(6,))
    with pytest.raises(LaunchError, match=r"saxpy: y: strides \(6,\) \(bytes\) are not whole"):
        read_arguments([args[0], broken], names=["x", "y"], kernel="saxpy")


def test_host_arrays_are_checked_without_a_driver(driver, contract, fakes):
    """``check_read``: the checks that need no driver, on arguments read wherever they live."""
    binder = load_kernel(contract, cubin=b"C", driver=driver)._binder
    args = [fakes.host_array((4,)), fakes.host_array((4,)), fakes.host_array((5,)), 1.0]
    with pytest.raises(LaunchError, match="extent N disagrees"):
        binder.check_read(args, read_arguments(args))
    args[2] = 3.0
    with pytest.raises(LaunchError, match="out: expected a GPU array"):
        binder.check_read(args, read_arguments(args))
    with pytest.raises(LaunchError, match="takes 4 arguments"):
        binder.check_read(args[:2], read_arguments(args[:2]))
    args[2] = fakes.host_array((4,))
    binder.check_read(args, read_arguments(args))
    assert driver.pointer_queries == 0


@pytest.mark.parametrize("native", [False, True])
def test_rows_off_the_assumed_row_alignment_are_refused(scale_contract, driver, fakes, native):
    """A variant specialised for rows on 16 bytes (TMA copies need them) refuses an array
    whose row stride breaks it, on every path, and says what to pass."""
    scale_contract["tensors"][2].update(unit_stride=True, row_align=16)
    kernel = load_kernel(scale_contract, cubin=b"C", driver=driver)
    a = fakes.cuda_array((8, 4), typestr="<f2", ptr=BASE)
    b = fakes.cuda_array((4, 64), typestr="<f2", ptr=BASE + 0x10000)
    good = fakes.cuda_array((8, 64), ptr=BASE + 0x20000, strides=(4 * 68, 4))
    bad = fakes.cuda_array((8, 64), ptr=BASE + 0x20000, strides=(4 * 66, 4))
    one_row = fakes.cuda_array((1, 64), ptr=BASE + 0x20000, strides=(4 * 66, 4))
    fast = fast_launch(kernel, [a, b, good, 1.0, 3, True], native=native)
    if fast is None:
        pytest.skip("no native launch path on this machine")
    assert fast((1,), [a, b, bad, 1.0, 3, True], None) is None, getattr(fast, "source", "")
    assert driver.launches == []
    with pytest.raises(LaunchError) as info:
        kernel.launch((1,), [a, b, bad, 1.0, 3, True])
    assert str(info.value) == (
        "scale: c: strides (66, 1) (elements) put rows off 16 bytes, the row alignment the "
        "kernel was specialised for; pass .contiguous() with a last extent that keeps rows on "
        "it, or use a variant compiled for less row alignment"
    )
    assert driver.launches == []
    assert fast((1,), [a, b, good, 1.0, 3, True], None) == 0
    a_row = fakes.cuda_array((1, 4), typestr="<f2", ptr=BASE)
    assert fast((1,), [a_row, b, one_row, 1.0, 3, True], None) == 0  # one row: no stride to mind
