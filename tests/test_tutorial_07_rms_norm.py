"""Tutorial 07, RMS norm: forward and backward in the interpreter against numpy in float64,
f16 and bf16 (bf16 arrays are ``ml_dtypes.bfloat16``), at widths no tile divides, on both of
the forward's paths (a row in one tile, a row in chunks), and tuned in the interpreter."""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (bf16 numpy arrays: a test dependency, as in noxfile.py)
import numpy as np
import pytest

from phobos.autotune import PASSED, PRUNED, WRONG, Options
from tests.test_tutorials import load

tutorial = load("07_rms_norm.py")

KINDS = ("f16", "bf16")
TOLERANCE = tutorial.TOLERANCE


def error(got: np.ndarray, expected: np.ndarray) -> float:
    return tutorial.relative_error(got, expected)


def assert_matches(got: dict, expected: dict, kind: str, names=("y", "rstd", "dx", "dw")) -> None:
    for name in names:
        assert not np.isnan(np.asarray(got[name], np.float64)).any(), f"{name} has NaN"
        bound = TOLERANCE["rstd" if name == "rstd" else kind]
        found = error(got[name], expected[name])
        assert found < bound, f"{kind} {name}: relative error {found:.2e} (bound {bound})"


def nan(shape, dtype) -> np.ndarray:
    return np.full(shape, np.nan, dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "m, n, rows, block_n",
    [
        (37, 300, 4, 512),  # one tile, 212 columns absent; the last block has 1 of its 4 rows
        (9, 3000, 2, 3072),  # the benchmark's width that is no power of two
        (5, 3000, 1, 1024),  # wider than the tile: three chunks, the last 952 columns
        (7, 300, 4, 128),  # chunks of 128, rows past M absent in the last block
        (3, 128, 8, 128),  # one block of 8 rows, 5 of them absent
        (2, 1, 1, 128),  # one column
    ],
)
def test_forward_matches_numpy(kind, m, n, rows, block_n):
    data = tutorial.cpu_inputs(m, n, kind, seed=m * 1000 + n)
    expected = tutorial.reference(**data)
    x = data["x"]
    y, rstd = nan((m, n), x.dtype), nan(m, np.float32)
    tutorial.forward(x, data["w"], y, rstd, ROWS=rows, BLOCK_N=block_n, race_check=True)
    assert_matches({"y": y, "rstd": rstd}, expected, kind, ("y", "rstd"))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "m, n, rows, block_n, groups, block_g, cols",
    [
        # Chunks of 16 rows: 0-15, 16-31, 32-36.  Two blocks: block 0 takes chunks 0 and 2
        # (its grid-stride loop's second step, rows past M absent), block 1 chunk 1.
        (37, 300, 4, 512, 2, 16, 32),
        (37, 300, 1, 768, 37, 32, 64),  # 37 blocks, 34 of them without rows: zero partials
        (37, 300, 8, 512, 3, 64, 128),  # the last chunk's 8-row steps: 5 rows, then none
        (9, 3000, 2, 3072, 4, 16, 256),  # the benchmark's width that is no power of two
        (5, 100, 8, 128, 4, 32, 32),
        (1, 5, 1, 128, 1, 16, 32),  # one row (one column would make dx cancel to ~0)
    ],
)
def test_backward_matches_numpy(kind, m, n, rows, block_n, groups, block_g, cols):
    data = tutorial.cpu_inputs(m, n, kind, seed=m * 1000 + n)
    expected = tutorial.reference(**data)
    x = data["x"]
    # rstd as the forward makes it (checked above), so the backward sees what it is made for.
    rstd = nan(m, np.float32)
    tutorial.forward(x, data["w"], nan((m, n), x.dtype), rstd)
    dx, dw, partial = nan((m, n), x.dtype), nan(n, x.dtype), nan((groups, n), np.float32)
    tutorial.backward(
        data["dy"], x, data["w"], rstd, dx, dw, partial,
        dw_names={"BLOCK_G": block_g, "BLOCK_N": cols},
        ROWS=rows, BLOCK_N=block_n, race_check=True,
    )  # fmt: skip
    assert_matches({"dx": dx, "dw": dw}, expected, kind, ("dx", "dw"))
    # Each block's partial sums are f32, and so is their sum over the blocks.
    assert error(partial.sum(axis=0, dtype=np.float64), expected["dw"]) < 1e-5
    assert not np.isnan(partial).any()


@pytest.mark.parametrize("kind", KINDS)
def test_the_wrappers_defaults_hold_every_row_up_to_the_widest_tile(kind):
    """A launch on numpy arrays fixes nothing and uses each space's first values."""
    assert tutorial.rms_norm_forward_f16.space.default() == {"ROWS": 1, "BLOCK_N": 16384}
    assert tutorial.rms_norm_backward_bf16.space.default()["BLOCK_N"] == tutorial.MAX_TILE
    for m, n in ((37, 300), (3, 16384)):
        data = tutorial.cpu_inputs(m, n, kind, seed=n)
        assert_matches(tutorial.run_on_cpu(data), tutorial.reference(**data), kind)


def test_a_tile_too_narrow_for_the_backward_leaves_dx_unwritten():
    """Why the tuner rejects such a tile, and a test that can fail: the columns past the
    tile keep their poison."""
    data = tutorial.cpu_inputs(5, 300, "f16")
    x = data["x"]
    rstd = nan(5, np.float32)
    tutorial.forward(x, data["w"], nan((5, 300), x.dtype), rstd)
    dx, dw, partial = nan((5, 300), x.dtype), nan(300, x.dtype), nan((2, 300), np.float32)
    tutorial.backward(data["dy"], x, data["w"], rstd, dx, dw, partial, BLOCK_N=256)
    assert not np.isnan(dx[:, :256]).any() and np.isnan(dx[:, 256:]).all()


def test_the_backward_refuses_rows_wider_than_one_tile():
    x = np.ones((2, tutorial.MAX_TILE + 1), np.float16)
    with pytest.raises(ValueError, match="one tile: 16385 columns > 16384"):
        tutorial.backward(x, x, x[0], np.ones(2, np.float32), x, x[0], np.ones((1, 16385)))


def test_the_wrappers_refuse_other_dtypes():
    x = np.ones((2, 8), np.float32)
    with pytest.raises(TypeError, match="float16 or bfloat16 arrays, not float32"):
        tutorial.forward(x, x[0], x, np.ones(2, np.float32))


def test_rows_share_a_tuning_result_only_when_the_same_tiles_hold_them():
    key = tutorial.row_tile_key
    assert key({"M": 4096, "N": 3000}, {}) == {"M": 4096, "row_tile": 3072}
    assert key({"M": 4000, "N": 2049}, {}) == key({"M": 4096, "N": 3072}, {})
    assert key({"M": 4096, "N": 3073}, {}) == {"M": 4096, "row_tile": 4096}
    assert key({"M": 4096, "N": 700, "GROUPS": 264}, {}) == {
        "M": 4096, "GROUPS": 512, "row_tile": 768,
    }  # fmt: skip
    assert key({"M": 64, "N": 20000}, {}) == {"M": 64, "N": 32768}  # the forward's chunks


def test_partial_rows_never_exceed_the_rows():
    assert tutorial.partial_rows(np.ones((37, 3))) == 4
    assert tutorial.partial_rows(np.ones((2, 3))) == 2


def statuses(report) -> dict[tuple[int, int], str]:
    return {(v.values["ROWS"], v.values["BLOCK_N"]): v.status for v in report.variants}


@pytest.mark.parametrize("kind", KINDS)
def test_the_tuner_chooses_a_tile_that_covers_the_backwards_rows(kind):
    """Tuned in the interpreter at N=300 (M=37: tiles above 512 are pruned): every forward
    variant is right (128 and 256 take the chunked path); the backward's 128 and 256 leave
    columns of dx unwritten and are wrong, and 512 is chosen."""
    data = tutorial.cpu_inputs(37, 300, kind)
    expected = tutorial.reference(**data)
    x, w, dy = data["x"], data["w"], data["dy"]
    forward = tutorial.FORWARD[kind]
    backward = tutorial.BACKWARD[kind]
    options = Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False, retune=True)
    y, rstd = nan((37, 300), x.dtype), nan(37, np.float32)
    forward.autotune(x, w, y, rstd, 1e-6, grid=tutorial.row_blocks, options=options)
    found = statuses(forward.tuning_report())
    assert {found[r, b] for r in (1, 2, 4, 8) for b in (128, 256, 512)} == {PASSED}
    assert {found[r, b] for r in (1, 2, 4, 8) for b in (768, 16384)} == {PRUNED}
    forward[tutorial.row_blocks](x, w, y, rstd, 1e-6)  # the choice
    assert_matches({"y": y, "rstd": rstd}, expected, kind, ("y", "rstd"))

    dx, partial = nan((37, 300), x.dtype), nan((4, 300), np.float32)
    args = (dy, x, w, rstd, dx, partial)
    choice = backward.autotune(*args, grid=tutorial.partial_blocks, options=options)
    found = statuses(backward.tuning_report())
    assert {found[r, b] for r in (1, 2, 4, 8) for b in (128, 256)} == {WRONG}
    assert {found[r, 512] for r in (1, 2, 4, 8)} == {PASSED}
    assert choice["BLOCK_N"] == 512
    dw = nan(300, x.dtype)
    tutorial.backward(dy, x, w, rstd, dx, dw, partial)  # the choice, and the dw kernel's default
    assert_matches({"dx": dx, "dw": dw}, expected, kind, ("dx", "dw"))


def test_the_tutorial_checks_itself_on_the_cpu():
    tutorial.check_on_cpu(m=11, n=257)
