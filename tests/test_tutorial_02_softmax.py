"""Tutorial 02, fused softmax: both kernels in the interpreter against numpy in float64."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_tutorials import load

tutorial = load("02_fused_softmax.py")


def inputs(m: int, n: int, scale: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(m * 1000 + n)
    return (scale * rng.standard_normal((m, n))).astype(np.float32)


def poisoned_view(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """An [m, n] view into a NaN-filled buffer with spare rows and columns around it."""
    buffer = np.full((m + 3, n + 5), np.nan, np.float32)
    return buffer, buffer[1 : m + 1, 2 : n + 2]


@pytest.mark.parametrize(
    "kernel, m, n, rows, block_n",
    [
        ("softmax", 37, 100, 1, 128),
        ("softmax", 37, 100, 4, 128),
        ("softmax", 37, 300, 8, 512),
        ("softmax_online", 37, 100, 2, 128),
        ("softmax_online", 37, 300, 4, 128),
        ("softmax_online", 5, 300, 8, 16),
    ],
)
def test_softmax_matches_numpy_and_writes_only_its_output(kernel, m, n, rows, block_n):
    x = inputs(m, n)
    buffer, out = poisoned_view(m, n)
    launch = getattr(tutorial, kernel)[tutorial.grid]
    launch(x, out, ROWS=rows, BLOCK_N=block_n, race_check=True)
    np.testing.assert_allclose(out, tutorial.reference(x), rtol=1e-5, atol=1e-9)
    outside = np.ones(buffer.shape, bool)
    outside[1 : m + 1, 2 : n + 2] = False
    assert np.isnan(buffer[outside]).all()


def test_large_inputs_do_not_overflow():
    """Subtracting the row's maximum first keeps exp finite for inputs near 100."""
    x = inputs(9, 70, scale=1.0) + 100.0
    for kernel, block_n in ((tutorial.softmax, 128), (tutorial.softmax_online, 32)):
        out = np.full_like(x, np.nan)
        kernel[tutorial.grid](x, out, ROWS=2, BLOCK_N=block_n)
        np.testing.assert_allclose(out, tutorial.reference(x), rtol=1e-5, atol=1e-9)


def test_the_host_wrapper_picks_a_kernel_that_covers_the_row():
    x = inputs(11, 300)
    for block_n in (None, 64, 512):
        out = np.full_like(x, np.nan)
        tutorial.run_softmax(x, out, rows=2, block_n=block_n)
        np.testing.assert_allclose(out, tutorial.reference(x), rtol=1e-5, atol=1e-9)


def test_the_tutorial_checks_itself_on_the_cpu():
    tutorial.check_on_cpu(m=37, n=100)
