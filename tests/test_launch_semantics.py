"""Interpreter launches follow the GPU launcher's rules: one grid rule, integer compile-time
values, and the same results for casts and integer division (docs/language.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import phobos.lang as ph
from phobos.autotune import PASSED, PRUNED, Options
from phobos.launch import LaunchError
from phobos.launch.grid import MAX_GRID, grid_dims

FAST = Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False)
# Some kernels here write from every block on purpose (one block runs).
pytestmark = pytest.mark.filterwarnings("ignore::phobos.compile.diagnostics.PhobosWarning")


@ph.kernel
@ph.autotune(BLOCK=[16, 64])
def double(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = x[base:+BLOCK] * 2.0


def arrays(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=np.float32), np.full(n, -1.0, np.float32)


# ------------------------------------------------------------------ grids


@pytest.mark.parametrize("grid", [(0,), (4, 0), (0, 0, 0), [0]])
def test_a_grid_with_a_zero_launches_nothing(grid):
    x, out = arrays()
    double[grid](x, out)
    assert (out == -1.0).all()


def test_a_grid_function_that_gives_zero_launches_nothing():
    x, out = arrays(0)
    double[lambda meta: (-(-meta["N"] // meta["BLOCK"]),)](x, out)


def launch_error(grid, **values) -> ph.PhobosError:
    x, out = arrays()
    with pytest.raises(ph.PhobosError) as caught:
        double[grid](x, out, **values)  # the launch line
    return caught.value


def gpu_message(grid) -> str:
    with pytest.raises(LaunchError) as caught:
        grid_dims("double", grid)
    return str(caught.value)


@pytest.mark.parametrize(
    "grid",
    [
        (MAX_GRID[0] + 1,),
        (1, MAX_GRID[1] + 1),
        (1, 1, MAX_GRID[2] + 1),
        (-1,),
        (7.9,),
        ("7",),
        (True,),
        (np.float32(2),),
        (1, 2, 3, 4),
        (),
        7,
    ],
)
def test_a_bad_grid_is_the_gpu_launchers_error_at_the_launch_line(grid):
    err = launch_error(grid)
    assert err.message == gpu_message(grid)
    assert err.span.file == __file__
    assert "double[grid](x, out, **values)  # the launch line" in str(err)


def test_the_limits_are_the_gpus():
    x, out = arrays()
    assert grid_dims("double", (MAX_GRID[0], MAX_GRID[1], MAX_GRID[2])) == MAX_GRID
    double[(np.int64(1), np.int32(1))](x, out)  # numpy ints are ints
    assert (out == 2 * x).all()


def test_a_name_the_grid_function_asks_for_is_named():
    err = launch_error(lambda meta: (meta["M"],))
    assert err.message == "double: the grid function asked for meta['M']; meta has BLOCK, N"
    assert err.span.file == __file__


def test_a_grid_function_gives_the_same_rule():
    err = launch_error(lambda meta: (meta["N"] / meta["BLOCK"],))
    assert err.message == "double: grid x must be an int, got float 1.0"


# ------------------------------------------------------------------ compile-time values


@pytest.mark.parametrize("value", [16.9, 16.0, "16", True, None])
def test_a_compile_time_value_must_be_an_integer(value):
    err = launch_error((1,), BLOCK=value)
    assert err.message == f"the value of 'BLOCK' must be an integer, got {value!r}"
    assert err.span.file == __file__  # the kernel's line in this file


def test_numpy_integers_are_compile_time_values():
    x, out = arrays()
    double[(4,)](x, out, BLOCK=np.int64(16))
    assert (out == 2 * x).all()


# ------------------------------------------------------------------ casts and division


@ph.kernel
def convert(
    x: ph.tensor[ph.f32][N],
    o8: ph.tensor[ph.i8][N],
    u16: ph.tensor[ph.u16][N],
    i32: ph.tensor[ph.i32][N],
    u64: ph.tensor[ph.u64][N],
):
    t: ph.let = x[0:+8]
    o8[0:+8] = ph.i8(t)
    u16[0:+8] = ph.u16(t)
    i32[0:+8] = ph.i32(t)
    u64[0:+8] = ph.u64(t)


def test_float_to_int_saturates_and_nan_is_zero():
    x = np.array([math.nan, math.inf, -math.inf, 300.7, -300.7, -0.5, 3e9, 1e20], np.float32)
    o8, u16, i32, u64 = (np.zeros(8, d) for d in (np.int8, np.uint16, np.int32, np.uint64))
    convert[(1,)](x, o8, u16, i32, u64)
    assert o8.tolist() == [0, 127, -128, 127, -128, 0, 127, 127]
    assert u16.tolist() == [0, 65535, 0, 300, 0, 0, 65535, 65535]
    big, small = 2**31 - 1, -(2**31)
    assert i32.tolist() == [0, big, small, 300, -300, 0, big, big]
    assert u64.tolist() == [0, 2**64 - 1, 0, 300, 0, 0, 3_000_000_000, 2**64 - 1]


@ph.kernel
def divide(
    a: ph.tensor[ph.i32][N],
    b: ph.tensor[ph.i32][N],
    q: ph.tensor[ph.i32][N],
    r: ph.tensor[ph.i32][N],
    uq: ph.tensor[ph.u8][N],
    ur: ph.tensor[ph.u8][N],
):
    q[0:+8] = a[0:+8] // b[0:+8]
    r[0:+8] = a[0:+8] % b[0:+8]
    ua: ph.let = ph.u8(a[0:+8])
    ub: ph.let = ph.u8(b[0:+8])
    uq[0:+8] = ua // ub
    ur[0:+8] = ua % ub
    s: ph.let = a[0] // b[1]  # a scalar division by zero
    q[8] = s
    r[8] = a[0] % b[1]


def test_integer_division_by_zero_gives_zero_and_the_remainder_the_dividend():
    a = np.array([7, -7, 5, -(2**31), -(2**31), 0, 9, 200, 0], np.int32)
    b = np.array([0, 0, 0, -1, 1, 0, -2, 3, 0], np.int32)
    q, r = np.zeros(9, np.int32), np.zeros(9, np.int32)
    uq, ur = np.zeros(9, np.uint8), np.zeros(9, np.uint8)
    divide[(1,)](a, b, q, r, uq, ur)
    assert q.tolist() == [0, 0, 0, -(2**31), -(2**31), 0, -4, 66, 0]
    assert r.tolist() == [7, -7, 5, 0, 0, 0, 1, 2, 7]
    ua, ub = a[:8].astype(np.uint8), b[:8].astype(np.uint8)
    expected_q = [int(x) // int(y) if y else 0 for x, y in zip(ua, ub)]
    expected_r = [int(x) % int(y) if y else int(x) for x, y in zip(ua, ub)]
    assert uq[:8].tolist() == expected_q
    assert ur[:8].tolist() == expected_r
    # a == (a / b) * b + a % b, b == 0 included (int64 arithmetic: no wrap for this check)
    a64, b64, q64, r64 = (v[:8].astype(np.int64) for v in (a, b, q, r))
    assert ((q64 * b64 + r64 - a64) % 2**32 == 0).all()


# ------------------------------------------------------------------ tile limits in the tuner


@ph.kernel
@ph.autotune(BLOCK=[65536, 262144])
def huge(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = x[base:+BLOCK] + 1.0


def test_a_variant_past_the_tile_limit_is_pruned_with_the_reason():
    x = np.zeros(300_000, np.float32)  # larger than every tile: the size rule prunes none
    out = np.zeros(300_000, np.float32)
    choice = huge.autotune(x, out, grid=lambda m: (-(-m["N"] // m["BLOCK"]),), options=FAST)
    assert choice["BLOCK"] in (65536, 131072)
    report = huge.tuning_report()
    statuses = {r.values["BLOCK"]: (r.status, r.detail) for r in report.variants}
    assert statuses[65536][0] == statuses[131072][0] == PASSED
    status, detail = statuses[262144]
    assert status == PRUNED
    assert detail.startswith(f"{__file__}:")
    assert detail.endswith("error: a window length must be at most 131072, got 262144")


def test_a_launch_past_the_tile_limit_is_an_error_at_the_window():
    x = np.zeros(1000, np.float32)
    with pytest.raises(ph.PhobosError) as caught:
        huge[(1,)](x, x, BLOCK=262144)
    err = caught.value
    assert err.message == "a window length must be at most 131072, got 262144"
    assert err.diagnostics[0].limit == "tile elements"
    assert "out[base:+BLOCK] = x[base:+BLOCK] + 1.0" in str(err)


# ------------------------------------------------------------------ modules as Python reads them


def import_file(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LATIN1 = """\
# -*- coding: latin-1 -*-
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
def façade(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    # déjà vu, in latin-1 bytes
    ﬁrst: ph.let = ph.ctx.block.x * 4
    out[ﬁrst:+4] = x[ﬁrst:+4] * 2.0
"""


MODULES = {
    # ﬁ is not latin-1: that module spells the name as Python reads the other one
    "latin1_kernels": LATIN1.replace("ﬁrst", "first").encode("latin-1"),
    "bom_kernels": b"\xef\xbb\xbf" + LATIN1.split("\n", 1)[1].encode(),  # UTF-8, a BOM, ﬁrst
}


@pytest.mark.parametrize("name", MODULES)
def test_a_module_python_imports_launches_with_names_beyond_ascii(tmp_path, name):
    data = MODULES[name]
    path = tmp_path / f"{name}.py"
    path.write_bytes(data)
    kernel = import_file(path).façade
    x, out = arrays(8)
    kernel[(2,)](x, out)
    assert (out == 2 * x).all()
    source = kernel.source
    assert "kernel façade(" in source and "let first = ctx.block.x * 4" in source
    from phobos.compile.syntax import parse

    assert parse(source, "source.ph") == kernel.program.for_kernel("façade").module
