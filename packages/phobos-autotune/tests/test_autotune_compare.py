"""Comparing outputs: tolerances per dtype, NaN and infinities, integers exactly; the poison."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phobos.autotune import (
    DEFAULT_TOLERANCES,
    Tolerance,
    ops_for,
    poison_patterns,
    tolerance_for,
)


def mismatch(got, expected, tolerance=None):
    ops = ops_for(got)
    return ops.compare(got, expected, tolerance or tolerance_for(ops.dtype))


def test_f32_rounding_differences_pass_and_real_errors_do_not():
    expected = np.linspace(-100, 100, 1001, dtype=np.float32)
    assert mismatch(expected * np.float32(1 + 3e-6), expected) is None
    wrong = expected.copy()
    wrong[17] += 1.0
    found = mismatch(wrong, expected)
    assert found is not None and found.bad == 1 and found.index == (17,)
    assert found.error == pytest.approx(1.0, rel=1e-5)


def test_atol_scales_with_the_output_so_cancellation_near_zero_passes():
    expected = np.array([1000.0, 0.0, -1000.0], dtype=np.float32)
    got = expected + np.array([0, 5e-3, 0], dtype=np.float32)  # 5e-6 of the largest element
    assert mismatch(got, expected) is None
    assert mismatch(got + np.float32(1), expected) is not None


def test_nan_must_match_the_reference():
    expected = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    assert mismatch(expected.copy(), expected) is None
    got = np.array([1.0, np.nan, np.nan], dtype=np.float32)
    found = mismatch(got, expected)
    assert found.nan_where_finite == 1 and found.index == (2,) and math.isinf(found.error)
    assert "1 NaN where the reference has a number" in found.describe("out")
    assert mismatch(np.array([1.0, 2.0, 3.0], dtype=np.float32), expected) is not None


def test_infinities_must_match():
    expected = np.array([np.inf, 1.0], dtype=np.float32)
    assert mismatch(expected.copy(), expected) is None
    assert mismatch(np.array([-np.inf, 1.0], dtype=np.float32), expected) is not None


def test_integers_are_exact_and_the_worst_element_is_named_in_2d():
    expected = np.arange(12, dtype=np.int64).reshape(3, 4) * (2**53)
    got = expected.copy()
    got[2, 1] += 1  # lost if compared as float64
    found = mismatch(got, expected)
    assert found is not None and found.index == (2, 1)
    assert "out[2, 1]" in found.describe("out")


def test_half_precision_tolerance_is_looser():
    expected = np.linspace(-4, 4, 101).astype(np.float16)
    got = (expected.astype(np.float32) * 1.004).astype(np.float16)
    assert mismatch(got, expected) is None
    assert mismatch(got, expected, Tolerance(1e-5, 1e-6)) is not None
    assert DEFAULT_TOLERANCES["f16"].rtol == 1e-2


def test_poison_patterns_are_two_per_dtype_and_floats_are_unusual_nans():
    assert poison_patterns("u8") == (-0x5B, 0x5A)  # the bytes 0xA5, then 0x5A, as int8
    assert poison_patterns("i32") == (
        int.from_bytes(b"\xa5" * 4, "little", signed=True),
        int.from_bytes(b"\x5a" * 4, "little", signed=True),
    )
    assert poison_patterns("bool") == (0, 1)
    assert poison_patterns("c64") is None
    f32 = [np.array(p, dtype=np.int32).view(np.float32) for p in poison_patterns("f32")]
    assert all(np.isnan(f) for f in f32)
    with np.errstate(invalid="ignore"):
        computed = [
            np.float32(np.nan),
            np.float32(np.inf) - np.float32(np.inf),
            -np.float32(np.nan),
        ]
    bits = {int(np.array(c).view(np.uint32)) for c in computed} | {0x7FFFFFFF}  # CUDA's NaN
    assert not bits & {int(np.array(f).view(np.uint32)) for f in f32}
    for dtype, numpy_dtype in [("f16", np.float16), ("f64", np.float64)]:
        width = np.dtype(numpy_dtype).itemsize * 8
        for pattern in poison_patterns(dtype):
            assert np.isnan(np.array(pattern, dtype=f"int{width}").view(numpy_dtype))


def test_poison_is_written_and_found_bit_for_bit():
    out = np.zeros((2, 3), dtype=np.int16)
    ops = ops_for(out)
    ops.poison(out)
    assert (out.view(np.uint16) == 0xA5A5).all()
    ops.poison(out, 1)
    assert (out.view(np.uint16) == 0x5A5A).all()
    floats = np.zeros((4, 5), dtype=np.float32)[:, ::2]  # not contiguous
    ops = ops_for(floats)
    ops.poison(floats)
    assert np.isnan(floats).all()
    floats[1, 2] = np.nan  # a NaN written by the kernel is not the poison
    mask = ops.holds_poison(floats)
    assert ops.count(mask) == floats.size - 1 and not mask[1, 2]
    floats[0, 0] = 1.0
    assert ops.first_index(~ops.holds_poison(floats), floats.shape) == (0, 0)
    flags = np.ones(3, dtype=bool)
    ops_for(flags).poison(flags)
    assert not flags.any()
    ops_for(flags).poison(flags, 1)
    assert flags.all()


def test_scalars_have_no_array_operations():
    assert ops_for(2.0) is None
    assert ops_for(np.float32(2.0)) is None
