"""Tutorial 05, layer norm: forward and backward in the interpreter against numpy in float64."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_tutorials import load

tutorial = load("05_layer_norm.py")


def inputs(m: int, n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(m * 1000 + n)
    return {
        "x": (2 * rng.standard_normal((m, n)) - 1.5).astype(np.float16),
        "w": rng.uniform(0.5, 1.5, n).astype(np.float16),
        "b": rng.standard_normal(n).astype(np.float16),
        "dy": rng.standard_normal((m, n)).astype(np.float16),
    }


def nan(shape, dtype=np.float16) -> np.ndarray:
    return np.full(shape, np.nan, dtype)


def error(got: np.ndarray, expected: np.ndarray) -> float:
    return tutorial.relative_error(got, expected)


def run_forward(data: dict, block_n: int) -> dict[str, np.ndarray]:
    m, n = data["x"].shape
    out = {"y": nan((m, n)), "mean": nan(m, np.float32), "rstd": nan(m, np.float32)}
    tutorial.layer_norm_forward[(m,)](
        data["x"], data["w"], data["b"], out["y"], out["mean"], out["rstd"], 1e-5,
        BLOCK_N=block_n, race_check=True,
    )  # fmt: skip
    return out


@pytest.mark.parametrize("m, n, block_n", [(37, 100, 128), (37, 300, 512), (3, 16, 16)])
def test_forward_matches_numpy(m, n, block_n):
    data = inputs(m, n)
    expected = tutorial.reference(**data)
    out = run_forward(data, block_n)
    # The statistics are fp32 all the way; y is rounded to fp16 once.
    assert error(out["mean"], expected["mean"]) < 1e-5
    assert error(out["rstd"], expected["rstd"]) < 1e-5
    assert error(out["y"], expected["y"]) < 1e-3
    assert not np.isnan(out["y"]).any()


@pytest.mark.parametrize(
    "m, n, block_n, rows, block_g, cols",
    [
        (37, 100, 128, 4, 16, 32),
        (37, 300, 512, 8, 32, 64),
        (37, 300, 512, 64, 16, 128),
        (37, 100, 128, 1, 16, 32),
    ],
)
def test_backward_matches_numpy(m, n, block_n, rows, block_g, cols):
    data = inputs(m, n)
    expected = tutorial.reference(**data)
    stats = run_forward(data, block_n)
    groups = tutorial.groups(m, rows)
    dx = nan((m, n))
    dw_partial = nan((groups, n), np.float32)
    db_partial = nan((groups, n), np.float32)
    tutorial.layer_norm_backward_dx[(groups,)](
        data["dy"], data["x"], data["w"], stats["mean"], stats["rstd"], dx, dw_partial, db_partial,
        ROWS=rows, BLOCK_N=block_n, race_check=True,
    )  # fmt: skip
    dw, db = nan(n), nan(n)
    tutorial.layer_norm_backward_dwdb[(-(-n // cols),)](
        dw_partial, db_partial, dw, db, BLOCK_G=block_g, BLOCK_N=cols, race_check=True
    )
    assert error(dx, expected["dx"]) < 2e-3
    # Each block's partial sums are fp32, and so is their sum over the groups.
    assert error(dw_partial.sum(axis=0, dtype=np.float64), expected["dw"]) < 1e-5
    assert error(db_partial.sum(axis=0, dtype=np.float64), expected["db"]) < 1e-5
    assert error(dw, expected["dw"]) < 1e-3
    assert error(db, expected["db"]) < 1e-3
    for value in (dx, dw, db, dw_partial, db_partial):
        assert not np.isnan(value).any()


def test_backward_refuses_partial_buffers_of_the_wrong_size():
    data = inputs(37, 100)
    stats = run_forward(data, 128)
    partial = nan((9, 100), np.float32)
    with pytest.raises(ValueError, match="with 4 rows per block, the partial buffers need 10 rows"):
        tutorial.backward(
            data["dy"], data["x"], data["w"], stats["mean"], stats["rstd"], nan((37, 100)),
            partial, partial, nan(100), nan(100), rows=4,
        )  # fmt: skip


def test_row_tile_covers_the_row_or_says_it_cannot():
    assert [tutorial.row_tile(n) for n in (1, 16, 17, 300, 15872)] == [16, 16, 32, 512, 16384]
    with pytest.raises(ValueError, match="do not fit one tile"):
        tutorial.row_tile(16385)


def test_the_tutorial_checks_itself_on_the_cpu():
    tutorial.check_on_cpu(m=37, n=300, rows=2)
