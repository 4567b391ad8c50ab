"""Tutorial 07, RMS norm: forward and backward in the interpreter against numpy in float64,
f16 and bf16 (bf16 arrays are ``ml_dtypes.bfloat16``), at widths no tile divides, on both
paths of each (a row in one tile, a row in chunks: for the backward, the wide kernels), rows
wider than the widest tile, and tuned in the interpreter with no variant wrong."""

from __future__ import annotations

import ml_dtypes  # noqa: F401  (bf16 numpy arrays: a test dependency, as in noxfile.py)
import numpy as np
import pytest

from phobos.autotune import PASSED, PRUNED, Options
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
        # BLOCK_N narrower than the row: the wide kernels, in bands of BLOCK_N columns.
        (37, 300, 2, 256, 2, 16, 32),  # two bands, the last of 44 columns; chunks 0-2 as above
        (37, 1000, 4, 256, 3, 32, 64),  # four bands; the last chunk's 4-row steps: 1, then none
        (19, 3000, 1, 1024, 4, 16, 256),  # three bands, the last 952 columns; two groups idle
        (5, 700, 4, 512, 1, 64, 128),  # one group: every row in one block, 1 of its 4 absent
        (2, 257, 2, 256, 5, 16, 32),  # a band of one column; groups past the rows write zeros
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
@pytest.mark.parametrize("m, n", [(37, 300), (3, 16384), (3, 16385), (5, 20000)])
def test_the_wrappers_defaults_are_right_for_rows_of_any_width(kind, m, n):
    """A launch on numpy arrays fixes only what the wrapper fixes and takes each space's
    first values for the rest; up to the widest tile (16384) the backward holds a row in one
    tile, past it the wide kernels take it in bands."""
    assert tutorial.rms_norm_forward_f16.space.default() == {"ROWS": 1, "BLOCK_N": 16384}
    data = tutorial.cpu_inputs(m, n, kind, seed=n)
    assert_matches(tutorial.run_on_cpu(data), tutorial.reference(**data), kind)


def kernels_launched(m: int, n: int, **launch) -> list[str]:
    x = np.ones((m, n), np.float16)
    found = tutorial.backward_launches(x, x, x[0], x[:, 0], x, x[0], x, **launch)
    return [f"{kernel.name} {names}" for kernel, _, _, names in found]


def test_the_backward_leaves_the_tiles_that_hold_the_row_to_the_tuner():
    assert kernels_launched(4, 3000) == [
        "rms_norm_backward_f16 {}",
        "rms_norm_backward_dw_f16 {}",
    ]
    assert kernels_launched(4, 16384, ROWS=2, race_check=True, dw_names={"BLOCK_G": 16})[0] == (
        "rms_norm_backward_f16 {'ROWS': 2, 'race_check': True}"
    )
    # Wider than every tile: the wide kernels, BLOCK_N left to the tuner.
    assert kernels_launched(4, 16385) == [
        "rms_norm_backward_c_f16 {}",
        "rms_norm_backward_chunked_f16 {}",
        "rms_norm_backward_dw_f16 {}",
    ]
    # A BLOCK_N narrower than the row: the wide kernels at that BLOCK_N; a wider one: one tile.
    assert kernels_launched(4, 300, BLOCK_N=256)[:2] == [
        "rms_norm_backward_c_f16 {'BLOCK_N': 256}",
        "rms_norm_backward_chunked_f16 {'BLOCK_N': 256}",
    ]
    assert kernels_launched(4, 300, BLOCK_N=1024)[0] == "rms_norm_backward_f16 {'BLOCK_N': 1024}"
    assert tutorial.covering_tile(16385) is None and tutorial.covering_tile(1) == 128


def test_a_tile_too_narrow_for_the_one_tile_backward_leaves_dx_unwritten():
    """Why the one-tile kernel requires a tile that holds the row: launched by itself with a
    narrower tile, it leaves the columns past the tile with their poison.  The tuner prunes
    those variants with the kernel's reason (never compiling them) and passes the others;
    the wrapper given a narrower tile takes the wide kernels, which write every column."""
    data = tutorial.cpu_inputs(5, 300, "f16")
    x, w, dy = data["x"], data["w"], data["dy"]
    rstd = nan(5, np.float32)
    tutorial.forward(x, w, nan((5, 300), x.dtype), rstd)
    dx, partial = nan((5, 300), x.dtype), nan((2, 300), np.float32)
    one_tile = tutorial.BACKWARD["f16"]
    one_tile[tutorial.partial_blocks](dy, x, w, rstd, dx, partial, BLOCK_N=256)
    assert not np.isnan(dx[:, :256]).any() and np.isnan(dx[:, 256:]).all()
    one_tile.autotune(dy, x, w, rstd, dx, partial, grid=tutorial.partial_blocks, options=OPTIONS)
    found = statuses(one_tile.tuning_report())
    assert {found[r, b] for r in (1, 2, 4, 8) for b in (128, 256)} == {PRUNED}
    assert {found[r, 512] for r in (1, 2, 4, 8)} == {PASSED}
    details = {v.detail for v in one_tile.tuning_report().variants if v.values["BLOCK_N"] == 128}
    assert details == {"BLOCK_N=128 is narrower than a row (N=300)"}
    dx, dw = nan((5, 300), x.dtype), nan(300, x.dtype)
    tutorial.backward(dy, x, w, rstd, dx, dw, partial, BLOCK_N=256)
    assert_matches({"dx": dx, "dw": dw}, tutorial.reference(**data), "f16", ("dx", "dw"))


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


OPTIONS = Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False, retune=True)


@pytest.mark.parametrize("kind", KINDS)
def test_every_forward_variant_is_right_and_the_tuner_chooses_one(kind):
    """Tuned in the interpreter at N=300 (M=37: tiles above 512 are pruned): every forward
    variant is right (128 and 256 take the chunked path)."""
    data = tutorial.cpu_inputs(37, 300, kind)
    x, w = data["x"], data["w"]
    forward = tutorial.FORWARD[kind]
    y, rstd = nan((37, 300), x.dtype), nan(37, np.float32)
    forward.autotune(x, w, y, rstd, 1e-6, grid=tutorial.row_blocks, options=OPTIONS)
    found = statuses(forward.tuning_report())
    assert {found[r, b] for r in (1, 2, 4, 8) for b in (128, 256, 512)} == {PASSED}
    assert {found[r, b] for r in (1, 2, 4, 8) for b in (768, 16384)} == {PRUNED}
    forward[tutorial.row_blocks](x, w, y, rstd, 1e-6)  # the choice
    assert_matches({"y": y, "rstd": rstd}, tutorial.reference(**data), kind, ("y", "rstd"))


def tune_the_backward(data: dict, groups: int, **launch) -> tuple[dict, list]:
    """Tune each kernel the wrapper launches, as it launches it (its grid and fixed names),
    in the interpreter, then launch the choice (the next kernel reads what it writes).
    Returns dx and dw, and each kernel's name and report."""
    x, w, dy = data["x"], data["w"], data["dy"]
    m, n = x.shape
    rstd = nan(m, np.float32)
    tutorial.forward(x, w, nan((m, n), x.dtype), rstd)
    out = {"dx": nan((m, n), x.dtype), "dw": nan(n, x.dtype)}
    partial = nan((groups, n), np.float32)
    reports = []
    for kernel, grid, args, names in tutorial.backward_launches(
        dy, x, w, rstd, out["dx"], out["dw"], partial, **launch
    ):
        kernel.autotune(*args, grid=grid, options=OPTIONS, **names)
        reports.append((kernel.name, kernel.tuning_report()))
        kernel[grid](*args, **names)
    return out, reports


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m, n", [(37, 300), (19, 16500)])
def test_the_tuner_sees_only_variants_that_are_right(kind, m, n):
    """The wrapper's launches, tuned: at N=300 the one-tile kernel, whose tiles narrower than
    the row it prunes itself and wider than 512 the size rule does (512 passes at every
    ROWS), past the widest tile both wide kernels with every variant of their
    spaces; no variant is wrong, and the choices give dx and dw."""
    data = tutorial.cpu_inputs(m, n, kind, seed=n)
    got, reports = tune_the_backward(data, groups=4)
    for name, report in reports:
        kinds = {v.status for v in report.variants}
        assert kinds <= {PASSED, PRUNED} and PASSED in kinds, f"{name}: {report}"
    names = [name for name, _ in reports]
    if n <= tutorial.MAX_TILE:
        assert names == [f"rms_norm_backward_{kind}", f"rms_norm_backward_dw_{kind}"]
        found = statuses(reports[0][1])
        assert {v for v, status in found.items() if status == PASSED} == {
            (r, 512) for r in (1, 2, 4, 8)
        }
    else:
        assert names[:2] == [f"rms_norm_backward_c_{kind}", f"rms_norm_backward_chunked_{kind}"]
        for _, report in reports[:2]:
            assert len(report.variants) == 15 and report.ran == 15
    assert_matches(got, tutorial.reference(**data), kind, ("dx", "dw"))


@pytest.mark.parametrize("kind", KINDS)
def test_every_variant_of_the_wide_kernels_is_right_where_no_tile_divides_the_row(kind):
    """Both wide kernels' whole spaces (tiles 256 to 4096, none pruned at N=3000), tuned in
    the interpreter with BLOCK_N left free: 19 rows (a chunk of 16 and a partial one), 2
    groups, bands whose last is partial for every tile."""
    data = tutorial.cpu_inputs(19, 3000, kind)
    x, w, dy = data["x"], data["w"], data["dy"]
    expected = tutorial.reference(**data)
    rstd = nan(19, np.float32)
    tutorial.forward(x, w, nan((19, 3000), x.dtype), rstd)
    c = nan(19, np.float32)
    rows = tutorial.BACKWARD_C[kind]
    rows.autotune(dy, x, w, rstd, c, grid=tutorial.row_blocks, options=OPTIONS)
    assert set(statuses(rows.tuning_report()).values()) == {PASSED}
    rows[tutorial.row_blocks](dy, x, w, rstd, c)
    dx, partial = nan((19, 3000), x.dtype), nan((2, 3000), np.float32)
    chunked = tutorial.BACKWARD_CHUNKED[kind]
    args = (dy, x, w, rstd, c, dx, partial)
    chunked.autotune(*args, grid=tutorial.band_blocks, options=OPTIONS)
    found = statuses(chunked.tuning_report())
    assert len(found) == 15 and set(found.values()) == {PASSED}
    chunked[tutorial.band_blocks](*args)
    assert_matches({"dx": dx}, expected, kind, ("dx",))
    assert error(partial.sum(axis=0, dtype=np.float64), expected["dw"]) < 1e-5


def test_the_tutorial_checks_itself_on_the_cpu():
    tutorial.check_on_cpu(m=11, n=257)
