"""Binding a launch in the interpreter: every argument error names the parameter, and writes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.diagnostics import PhobosError, register_source
from phobos.compile.interp import LaunchError, run
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span

SOURCE = """\
kernel scale(x: tensor<f32>[N], out: tensor<f32>[N], w: tensor<f32>[4, M], alpha: f32, n: u8) {
    out[0 :+ 4] = x[0 :+ 4]
}
"""
FILE = "interp_launch.ph"
register_source(FILE, SOURCE)


def span_of(text: str) -> Span:
    """The span of ``text`` on the kernel's first line."""
    col = SOURCE.index(text) + 1
    return Span(FILE, 1, col, 1, col + len(text))


IDX = ir.ScalarT("index")
X = ir.TensorParam("x", "f32", ("N",), span_of("x: tensor<f32>[N]"))
OUT = ir.TensorParam("out", "f32", ("N",), span_of("out: tensor<f32>[N]"))
W = ir.TensorParam("w", "f32", (4, "M"), span_of("w: tensor<f32>[4, M]"))
ALPHA = ir.ScalarParam("alpha", "f32", span_of("alpha: f32"))
COUNT = ir.ScalarParam("n", "u8", span_of("n: u8"))
WINDOW = (ir.WindowIndex(ir.Const(0, IDX), 4),)
KERNEL = ir.Kernel(
    "scale",
    (X, OUT, W, ALPHA, COUNT),
    (),
    (ir.Store(OUT, WINDOW, ir.Load(X, WINDOW, ir.TileT("f32", (4,)))),),
    Span(FILE, 1, 1, 3, 2),
)


def good_args() -> list[object]:
    return [
        np.arange(6, dtype=np.float32),
        np.full(6, np.nan, np.float32),
        np.zeros((4, 3), np.float32),
        2.0,
        7,
    ]


def launch_error(grid=(1,), **replaced) -> LaunchError:
    """The error of a launch whose arguments are the good ones with some replaced; checks nothing ran."""
    args = good_args()
    names = [p.name for p in KERNEL.params]
    for name, value in replaced.items():
        args[names.index(name)] = value
    out = args[1]
    snapshot = out.copy() if isinstance(out, np.ndarray) else None
    with pytest.raises(LaunchError) as caught:
        run(KERNEL, grid, args)
    if snapshot is not None:
        assert np.array_equal(out, snapshot, equal_nan=True), "binding failed but out was written"
    return caught.value


def test_good_arguments_run():
    args = good_args()
    run(KERNEL, (1,), args)
    assert args[1][:4].tolist() == [0, 1, 2, 3]


def test_launch_errors_are_phobos_errors_at_the_parameter():
    err = launch_error(x=np.zeros(6, np.float64))
    assert isinstance(err, PhobosError)
    assert err.span == X.span
    rendered = str(err)
    assert rendered.startswith("interp_launch.ph:1:14: error: parameter 'x' is a tensor<f32>[N]")
    assert "    " + SOURCE.splitlines()[0] in rendered
    assert "^" * len("x: tensor<f32>[N]") in rendered


def test_wrong_dtype():
    err = launch_error(x=np.zeros(6, np.float64))
    assert err.message == (
        "parameter 'x' is a tensor<f32>[N], so it needs a float32 array, "
        "but the argument is a float64 array"
    )
    assert "astype(numpy.float32)" in err.render()


def test_wrong_rank():
    err = launch_error(w=np.zeros(12, np.float32))
    assert err.span == W.span
    assert err.message == (
        "parameter 'w' is a tensor<f32>[4, M] with 2 dimension(s), but the array has 1 "
        "(shape (12,))"
    )


def test_not_an_array():
    err = launch_error(out=[0.0] * 6)
    assert err.message == "parameter 'out' is a tensor<f32>[N], but the argument is a list"


def test_literal_extent_mismatch():
    err = launch_error(w=np.zeros((5, 3), np.float32))
    assert err.message == (
        "parameter 'w' is a tensor<f32>[4, M]: axis 0 must have extent 4, but the array's is 5"
    )


def test_named_extents_must_agree_and_both_parameters_are_named():
    err = launch_error(out=np.zeros(7, np.float32))
    assert err.span == OUT.span
    assert err.message == (
        "extent N is 6 in parameter 'x' (axis 0) but 7 in parameter 'out' (axis 0)"
    )
    (note,) = err.diagnostics[0].notes
    assert note.span == X.span and note.message == "N = 6 from 'x' here"


def test_bf16_needs_ml_dtypes():
    try:
        import ml_dtypes
    except ImportError:
        ml_dtypes = None
    bf16_kernel = ir.Kernel("k", (ir.TensorParam("h", "bf16", ("N",)),), (), ())
    if ml_dtypes is None:
        with pytest.raises(LaunchError, match="bf16 arrays need the ml_dtypes package") as caught:
            run(bf16_kernel, (1,), [np.zeros(3, np.float32)])
        assert "pip install ml_dtypes" in caught.value.render()
    else:
        run(bf16_kernel, (1,), [np.zeros(3, ml_dtypes.bfloat16)])
        with pytest.raises(LaunchError, match="needs a bfloat16 array"):
            run(bf16_kernel, (1,), [np.zeros(3, np.float32)])


def test_written_array_must_be_writeable():
    out = np.zeros(6, np.float32)
    out.flags.writeable = False
    err = launch_error(out=out)
    assert err.message == "parameter 'out' is written by the kernel, but the array is read-only"


def test_read_only_arrays_that_are_only_read_are_fine():
    args = good_args()
    args[0].flags.writeable = False
    run(KERNEL, (1,), args)


@pytest.mark.parametrize(
    ("value", "given"),
    [
        ("2.0", "'2.0' (a str)"),
        (np.ones(2, np.float32), "a numpy array of shape (2,)"),
        (True, "True (a bool)"),
        (None, "None (a NoneType)"),
    ],
)
def test_float_scalar_arguments(value, given):
    err = launch_error(alpha=value)
    assert err.span == ALPHA.span
    assert err.message == f"parameter 'alpha' is a scalar f32, but the argument is {given}"


def test_float_scalars_accept_python_and_numpy_numbers():
    for value in (2, 2.5, np.float64(2.5), np.int16(2)):
        args = good_args()
        args[3] = value
        run(KERNEL, (1,), args)


def test_integer_scalar_arguments():
    assert launch_error(n=1.5).message == (
        "parameter 'n' is a scalar u8, but the argument is 1.5 (a float)"
    )
    err = launch_error(n=300)
    assert err.message == "parameter 'n' is a scalar u8, which cannot hold 300"
    assert "u8 holds 0 to 255" in err.render()
    assert launch_error(n=-1).message == "parameter 'n' is a scalar u8, which cannot hold -1"


def test_argument_count():
    with pytest.raises(LaunchError) as caught:
        run(KERNEL, (1,), good_args()[:3])
    assert caught.value.message == ("kernel 'scale' takes 5 arguments (x, out, w, alpha, n), got 3")
    assert caught.value.span == KERNEL.span


@pytest.mark.parametrize("grid", [(), (1, 1, 1, 1), (2, -1), (1.0,), (True,), 4, "1"])
def test_grid_must_be_one_to_three_counts(grid):
    err = launch_error(grid=grid)
    assert err.message == (
        f"the grid of 'scale' must be 1 to 3 integers of at least 0, got {grid!r}"
    )
    assert err.span == KERNEL.span


@pytest.mark.parametrize("grid", [(0,), (2, 0), (0, 0, 0)])
def test_a_grid_with_a_zero_runs_no_block(grid):
    args = good_args()
    run(KERNEL, grid, args)
    assert np.isnan(args[1]).all(), "a block ran"


def test_a_grid_with_a_zero_still_checks_the_arguments():
    err = launch_error(grid=(0,), x=np.zeros(6, np.float64))
    assert err.span == X.span


def test_grid_accepts_lists_and_numpy_ints():
    run(KERNEL, [np.int64(2), 1], good_args())
