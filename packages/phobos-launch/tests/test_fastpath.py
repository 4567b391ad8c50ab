"""The fast paths (generated Python and native C) accept exactly what the reference binder
accepts, and pack the same bytes."""

from __future__ import annotations

import itertools
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from phobos.launch import LaunchError, load_kernel

from .conftest import SAXPY, SCALE, CudaArray, FakeDriver, Tensor, fast_launch

BASE = 0x7F0000000000
INDEX32_SCALE = {
    **SCALE,
    "index_width": 32,
    "slots": [
        {**slot, "type": "i32"} if slot["kind"] in ("stride", "extent") else slot
        for slot in SCALE["slots"]
    ],
}


def outcome(kernel, fast, args, caller="python"):
    """(reference result or error text, fast result or None) for the same arguments.

    A result is (device, extents, producer streams, parameter bytes); the reference
    packs the block as a launch would, the fast path launches through the fake driver.
    """
    binder = kernel._binder
    block = kernel.parameter_block()
    driver = kernel.driver
    try:
        device, extents, values, producers = binder.bind(args, binder.plan(args))
        block.fill((1, 1, 1), 0, values)
        reference = (device, tuple(extents), tuple(producers), bytes(block))
    except (LaunchError, struct.error, OverflowError) as exc:
        reference = str(exc)
    driver.launches.clear()
    try:
        code = fast((1,), args, None)
    except LaunchError as exc:
        return reference, str(exc)
    if code != 0:
        assert driver.launches == []
        return reference, code
    (launch,) = driver.launches
    assert launch["grid"] == (1, 1, 1) and launch["stream"] == 0 and launch["caller"] == caller
    return reference, (launch["context"] - 0xC0, reference[1], reference[2], bytes(block))


def check_agreement(kernel, make, good, bad, native=False):
    fast = fast_launch(kernel, good, native=native)
    assert fast is not None
    reference, bound = outcome(kernel, fast, bad, "native" if native else "python")
    if isinstance(reference, str):
        assert bound is None or bound == reference, (reference, getattr(fast, "source", fast))
    else:
        assert bound == reference, getattr(fast, "source", fast)


arrays = st.sampled_from(["cai", "torch"])
alignments = st.sampled_from([0, 2, 4, 8, 16, 64])
sizes = st.integers(0, 5) | st.sampled_from([2**31 - 1, 2**31, 2**33])


@settings(max_examples=300, deadline=None)
@given(
    kind=arrays,
    n=st.tuples(sizes, sizes, sizes) | sizes.map(lambda k: (k, k, k)),
    offsets=st.tuples(alignments, alignments, alignments) | st.just((0, 0, 0)),
    stride=st.sampled_from([1, 1, 2, -1]),
    dtype=st.sampled_from(["f32", "f32", "f32", "f16"]),
    alpha=st.sampled_from([2.0, 3, "x", 1e40, True]),
    readonly=st.booleans(),
    devices=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    native=st.booleans(),
)
def test_saxpy_fast_path_agrees(kind, n, offsets, stride, dtype, alpha, readonly, devices, native):
    driver = FakeDriver()
    kernel = load_kernel(SAXPY, cubin=b"C", driver=driver)

    def make(size, offset, stride=1, dtype="f32", readonly=False, device=0):
        ptr = BASE + (device << 40) + offset
        driver.pointer_devices[ptr] = device
        if kind == "torch":
            names = {"f32": "float32", "f16": "float16"}
            return Tensor((size,), names[dtype], ptr=ptr, strides=(stride,), device=device)
        typestr = {"f32": "<f4", "f16": "<f2"}[dtype]
        itemsize = int(typestr[2])
        return CudaArray((size,), typestr, ptr, (stride * itemsize,), readonly=readonly)

    good = [make(8, 0), make(8, 0), make(8, 0), 1.0]
    bad = [
        make(n[0], offsets[0], stride, dtype, device=devices[0]),
        make(n[1], offsets[1], device=devices[1]),
        make(n[2], offsets[2], readonly=readonly),
        alpha,
    ]
    check_agreement(kernel, make, good, bad, native)


def test_scale_fast_path_agrees_on_every_combination():
    """Every combination of the cases below, through both paths (a few thousand, in a second)."""
    kernels = [load_kernel(c, cubin=b"C", driver=FakeDriver()) for c in (SCALE, INDEX32_SCALE)]

    def make(shape, typestr, strides=None):
        itemsize = int(typestr[2])
        byte_strides = None if strides is None else tuple(s * itemsize for s in strides)
        return CudaArray(shape, typestr, BASE, byte_strides)

    def make_tensor(shape, typestr, strides=None):
        return Tensor(shape, {"<f2": "float16", "<f4": "float32"}[typestr], BASE, strides)

    a_strides = [None, (2, 1), (1, 8), (2**31 - 1, 1), (2**31, 1), (2**40, 1)]
    scalars = [(1.0, 3, True), (1e6, 3, True), (1.0, 2.5, True), (1.0, 3, 2)]
    scalars += [(2**15 * 3.0, -(2**63), False), (1.0, 2**63, True), (float("nan"), 1, 1)]
    makers = [(make, False), (make, True), (make_tensor, False), (make_tensor, True)]
    cases = itertools.product(
        kernels, makers, [0, 1, 2, 3, 2**20], [1, 4, 5], [64, 32], a_strides, scalars
    )
    for kernel, (maker, native), m, k, cols, strides, values in cases:
        good = [maker((2, 4), "<f2"), maker((4, 64), "<f2"), maker((2, 64), "<f4"), 1.0, 1, False]
        bad = [maker((m, k), "<f2", strides), maker((k, cols), "<f2"), maker((m, 64), "<f4")]
        check_agreement(kernel, maker, good, [*bad, *values], native)


def test_generated_source_is_kept_for_reading(contract, fakes):
    kernel = load_kernel(contract, cubin=b"C", driver=FakeDriver(native=False))
    args = [fakes.tensor((8,)) for _ in range(3)] + [1.0]
    kernel.launch((1,), args)
    source = kernel.try_launch.source
    assert source.startswith("def try_launch(grid, args, stream):")
    assert "a0.dtype is D0" in source
    assert "a0.is_contiguous()" in source and "stride()" not in source
