"""Tutorial 03, matmul: the kernel in the interpreter against numpy in float64, and every
variant of its space compiled for sm_90 (the GPU autotuner compiles them all)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.test_tutorials import load

tutorial = load("03_matmul.py")


def operands(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m * 10000 + n * 100 + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b


def poisoned_view(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """An [m, n] view into a NaN-filled fp16 buffer with spare rows and columns around it."""
    buffer = np.full((m + 3, n + 5), np.nan, np.float16)
    return buffer, buffer[1 : m + 1, 2 : n + 2]


@pytest.mark.parametrize(
    "m, n, k, tiles",
    [
        (70, 50, 90, {"BM": 64, "BN": 64, "BK": 32}),
        (70, 50, 90, {"BM": 128, "BN": 128, "BK": 64}),
        (33, 130, 17, {"BM": 64, "BN": 128, "BK": 32}),
        # 10 block-rows: one full group of GROUP_M=8 and a last group of 2.
        (600, 200, 40, {"BM": 64, "BN": 64, "BK": 32, "NUM_THREADS": 128}),
        (1, 1, 1, {"BM": 64, "BN": 64, "BK": 32}),
    ],
)
@pytest.mark.parametrize("activation", [False, True])
def test_matmul_matches_numpy_and_writes_only_its_output(m, n, k, tiles, activation):
    a, b = operands(m, n, k)
    buffer, c = poisoned_view(m, n)
    tutorial.run_matmul(a, b, c, activation, race_check=True, **tiles)
    expected = tutorial.reference(a, b, activation)
    assert tutorial.relative_error(c, expected) < 1e-3
    assert not np.isnan(c).any()
    outside = np.ones(buffer.shape, bool)
    outside[1 : m + 1, 2 : n + 2] = False
    assert np.isnan(buffer[outside]).all()


def test_leaky_relu_keeps_a_slope_of_negative_values():
    a = np.array([[1.0], [-1.0]], np.float16)
    b = np.array([[4.0, -2.0]], np.float16)
    c = np.full((2, 2), np.nan, np.float16)
    tutorial.run_matmul(a, b, c, activation=True, BM=64, BN=64, BK=32)
    np.testing.assert_allclose(c, [[4.0, -0.02], [-0.04, 2.0]], rtol=1e-3)


def test_the_grid_covers_every_tile():
    meta = {"M": 600, "N": 200, "BM": 64, "BN": 128}
    assert tutorial.grid(meta) == (10 * 2,)


def test_the_tutorial_checks_itself_on_the_cpu():
    tutorial.check_on_cpu(m=70, n=50, k=90)


VARIANTS = tutorial.matmul.space.variants()
# One test per arch and output tile (BM x BN: 8 variants each), so that pytest-xdist spreads the
# 96 compiles over its workers; each test compiles its 8 concurrently, as the tuner does.
TILES = sorted({(v["BM"], v["BN"]) for v in VARIANTS})


def test_the_space_has_48_variants_in_6_tiles():
    assert len(VARIANTS) == 48
    assert len(TILES) == 6
    assert all(sum((v["BM"], v["BN"]) == tile for v in VARIANTS) == 8 for tile in TILES)


@pytest.mark.parametrize("tile", TILES, ids=lambda tile: f"{tile[0]}x{tile[1]}")
@pytest.mark.parametrize("arch", ["sm_90", "sm_90a"])  # mma.sync, and wgmma where tiles fit
def test_every_variant_compiles(arch, tile):
    variants = [v for v in VARIANTS if (v["BM"], v["BN"]) == tile]

    def compile_one(values):
        # 128 x 256 on 128 threads: 256 accumulators a thread, refused as a limit (pruned)
        unfit = values["BM"] * values["BN"] > 255 * values["NUM_THREADS"]
        try:
            tutorial.matmul.compile(arch=arch, **values)
        except Exception as exc:  # every failure is reported, not only the first
            if unfit and getattr(exc, "only_limits", False):
                return None
            return f"{values}: {str(exc).splitlines()[0]}"
        return f"{values}: compiled, though a thread cannot hold its result" if unfit else None

    with ThreadPoolExecutor(4) as pool:
        failures = [f for f in pool.map(compile_one, variants) if f]
    assert not failures, "\n".join(failures)
