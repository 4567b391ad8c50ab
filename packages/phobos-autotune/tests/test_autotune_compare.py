"""Comparing outputs: tolerances per dtype, NaN and infinities, integers exactly, poison values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from phobos.autotune import DEFAULT_TOLERANCES, Tolerance, ops_for, poison_value, tolerance_for


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


def test_poison_values():
    assert math.isnan(poison_value("f32"))
    assert poison_value("u8") == 0xA5
    assert poison_value("i32") == int.from_bytes(b"\xa5" * 4, "little", signed=True)
    assert poison_value("bool") is None
    out = np.zeros(4, dtype=np.int16)
    ops_for(out).poison(out)
    assert (out.view(np.uint16) == 0xA5A5).all()


def test_scalars_have_no_array_operations():
    assert ops_for(2.0) is None
    assert ops_for(np.float32(2.0)) is None
