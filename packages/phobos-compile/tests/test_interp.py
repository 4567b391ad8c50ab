"""The CPU interpreter, node by node, on kernels built directly in the tile IR."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phobos.compile.diagnostics import PhobosError
from phobos.compile.interp import run
from phobos.compile.ir import nodes as ir

IDX = ir.ScalarT("index")


def tile_t(dtype: str, *shape: int) -> ir.TileT:
    return ir.TileT(dtype, shape, partial=True)


def const(value, dtype: str = "index") -> ir.Const:
    return ir.Const(value, ir.ScalarT(dtype))


def block(axis: str = "x") -> ir.CtxValue:
    return ir.CtxValue("block", axis, IDX)


def tensor(name: str, dtype: str, *dims: str | int) -> ir.TensorParam:
    return ir.TensorParam(name, dtype, dims)


def win(start: ir.Expr | int, length: int) -> ir.WindowIndex:
    return ir.WindowIndex(const(start) if isinstance(start, int) else start, length)


def point(index: ir.Expr | int) -> ir.PointIndex:
    return ir.PointIndex(const(index) if isinstance(index, int) else index)


def load(t: ir.TensorParam, *indices: ir.TensorIndex) -> ir.Load:
    shape = tuple(i.length for i in indices if isinstance(i, ir.WindowIndex))
    type_ = tile_t(t.dtype, *shape) if shape else ir.ScalarT(t.dtype)
    return ir.Load(t, indices, type_)


def binary(op: str, a: ir.Expr, b: ir.Expr) -> ir.Binary:
    comparison = op in ("eq", "ne", "lt", "le", "gt", "ge")
    dtype = "bool" if comparison else a.type.dtype
    type_ = tile_t(dtype, *a.type.shape) if isinstance(a.type, ir.TileT) else ir.ScalarT(dtype)
    return ir.Binary(op, a, b, type_)


def mul(a: ir.Expr, b: ir.Expr) -> ir.Binary:
    return binary("mul", a, b)


def kernel(params, *body: ir.Stmt) -> ir.Kernel:
    return ir.Kernel("k", tuple(params), (), tuple(body))


def variable(name: str, type_: ir.IRType, mutable: bool = False) -> ir.Variable:
    return ir.Variable(name, type_, mutable)


def evaluate(build, *inputs: np.ndarray, out_dtype: str | None = None):
    """Run ``out[...] = build(*loads)`` on whole arrays in one block; returns ``out``.

    Each input becomes a tensor parameter loaded whole (a 0-d input is a scalar
    parameter); the result is stored whole (a scalar result into a 1-element out).
    """
    params, operands = [], []
    for n, array in enumerate(inputs):
        dtype = ir_dtype(array.dtype)
        if array.ndim == 0:
            param = ir.ScalarParam(f"s{n}", dtype)
            operands.append(ir.ScalarArg(param, ir.ScalarT(dtype)))
        else:
            param = tensor(f"in{n}", dtype, *array.shape)
            operands.append(load(param, *(win(0, d) for d in array.shape)))
        params.append(param)
    expr = build(*operands)
    dtype = out_dtype or expr.type.dtype
    shape = expr.type.shape if isinstance(expr.type, ir.TileT) else (1,)
    out = tensor("out", dtype, *shape)
    if isinstance(expr.type, ir.TileT):
        indices = tuple(win(0, d) for d in shape)
    else:
        indices = (point(0),)
    result = np.full(shape, 99, dtype=numpy_dtype(dtype))
    args = [a if a.ndim else a[()] for a in inputs]
    run(kernel([*params, out], ir.Store(out, indices, expr)), (1,), [*args, result])
    return result if isinstance(expr.type, ir.TileT) else result[0]


def ir_dtype(dtype: np.dtype) -> str:
    if dtype.name == "bfloat16":
        return "bf16"
    if dtype.kind == "b":
        return "bool"
    return {"i": "i", "u": "u", "f": "f"}[dtype.kind] + str(dtype.itemsize * 8)


def numpy_dtype(dtype: str) -> np.dtype:
    if dtype == "bf16":
        return np.dtype(pytest.importorskip("ml_dtypes").bfloat16)
    if dtype == "bool":
        return np.dtype(np.bool_)
    return np.dtype({"i": "int", "u": "uint", "f": "float"}[dtype[0]] + dtype[1:])


# --------------------------------------------------------------------------- leaves


def test_block_and_grid_coordinates_of_a_3d_grid():
    out = tensor("out", "i64", 4, 3, 2, 6)
    values = [block("x"), block("y"), block("z")] + [
        ir.CtxValue("grid", axis, IDX) for axis in "xyz"
    ]
    body = [
        ir.Store(out, (point(block("x")), point(block("y")), point(block("z")), point(i)), v)
        for i, v in enumerate(values)
    ]
    result = np.zeros((4, 3, 2, 6), np.int64)
    run(kernel([out], *body), (4, 3, 2), [result])
    x, y, z = np.meshgrid(range(4), range(3), range(2), indexing="ij")
    assert (result[..., 0] == x).all() and (result[..., 1] == y).all()
    assert (result[..., 2] == z).all() and (result[..., 3:] == [4, 3, 2]).all()


def test_missing_grid_dimensions_are_one():
    out = tensor("out", "i64", 2)
    body = [
        ir.Store(out, (point(0),), ir.CtxValue("grid", "y", IDX)),
        ir.Store(out, (point(1),), ir.CtxValue("grid", "z", IDX)),
    ]
    result = np.zeros(2, np.int64)
    run(kernel([out], *body), (5,), [result])
    assert result.tolist() == [1, 1]


def test_scalar_arguments_extents_and_variables():
    x = tensor("x", "f32", "N")
    out = tensor("out", "f32", "N")
    scale = ir.ScalarParam("scale", "f32")
    n_minus_1 = variable("last", IDX)
    acc = variable("acc", ir.ScalarT("f32"), mutable=True)
    read_acc = ir.Read(acc, acc.type)
    body = [
        ir.Define(n_minus_1, binary("sub", ir.Extent("N", IDX), const(1))),
        ir.Define(acc, ir.ScalarArg(scale, ir.ScalarT("f32"))),
        ir.Assign(acc, mul(read_acc, load(x, point(ir.Read(n_minus_1, IDX))))),
        ir.Store(out, (point(0),), read_acc),
    ]
    result = np.zeros(5, np.float32)
    run(kernel([x, out, scale], *body), (1,), [np.arange(5, dtype=np.float32), result, 3])
    assert result[0] == 12.0 and result.dtype == np.float32


# --------------------------------------------------------------------------- elementwise


def test_integer_division_truncates_and_remainder_takes_the_dividends_sign():
    a = np.array([7, -7, 7, -7, 0, 1, -1, 9], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 3, -4], np.int32)
    assert evaluate(lambda x, y: binary("div", x, y), a, b).tolist() == [3, -3, -3, 3, 0, 0, 0, -2]
    assert evaluate(lambda x, y: binary("mod", x, y), a, b).tolist() == [1, -1, 1, -1, 0, 1, -1, 1]


def test_scalar_integer_division_is_c_division_too():
    assert evaluate(lambda x, y: binary("div", x, y), np.int64(-7), np.int64(2)) == -3
    assert evaluate(lambda x, y: binary("mod", x, y), np.int64(-7), np.int64(2)) == -1


def test_unsigned_division_and_float_division_and_remainder():
    a, b = np.array([7, 200], np.uint8), np.array([2, 7], np.uint8)
    assert evaluate(lambda x, y: binary("div", x, y), a, b).tolist() == [3, 28]
    fa, fb = np.array([-7.5, 7.5], np.float32), np.array([2.0, -2.0], np.float32)
    assert evaluate(lambda x, y: binary("div", x, y), fa, fb).tolist() == [-3.75, -3.75]
    assert evaluate(lambda x, y: binary("mod", x, y), fa, fb).tolist() == [-1.5, 1.5]


def test_integers_wrap_at_their_width():
    i32 = np.array([2**31 - 1, -(2**31)], np.int32)
    one = np.array([1, 1], np.int32)
    assert evaluate(lambda x, y: binary("add", x, y), i32, one).tolist() == [-(2**31), -(2**31) + 1]
    u8 = np.array([255, 0], np.uint8)
    assert evaluate(lambda x, y: binary("add", x, y), u8, np.ones(2, np.uint8)).tolist() == [0, 1]
    assert evaluate(lambda x, y: binary("sub", x, y), u8, np.full(2, 1, np.uint8)).tolist() == [
        254,
        255,
    ]
    i8 = np.array([-128, 100], np.int8)
    neg = evaluate(lambda x: ir.Unary("neg", x, x.type), i8)
    assert neg.tolist() == [-128, -100]
    big = np.int32(2**31 - 1)
    assert evaluate(lambda x, y: mul(x, y), big, np.int32(2)) == -2


def test_bitwise_shift_comparison_and_logical_ops():
    a = np.array([0b1100, 5, -8], np.int32)
    b = np.array([0b1010, 1, 1], np.int32)
    expected = {
        "and": a & b,
        "or": a | b,
        "xor": a ^ b,
        "shl": a << b,
        "shr": a >> b,
        "eq": a == b,
        "ne": a != b,
        "lt": a < b,
        "le": a <= b,
        "gt": a > b,
        "ge": a >= b,
        "max": np.maximum(a, b),
        "min": np.minimum(a, b),
    }
    for op, want in expected.items():
        got = evaluate(lambda x, y, op=op: binary(op, x, y), a, b)
        assert got.dtype == want.dtype and (got == want).all(), op
    p, q = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert evaluate(lambda x, y: binary("land", x, y), p, q).tolist() == [1, 0, 0, 0]
    assert evaluate(lambda x, y: binary("lor", x, y), p, q).tolist() == [1, 1, 1, 0]


def test_unary_ops():
    a = np.array([1, -2, 0], np.int16)
    assert evaluate(lambda x: ir.Unary("neg", x, x.type), a).tolist() == [-1, 2, 0]
    assert evaluate(lambda x: ir.Unary("bitnot", x, x.type), a).tolist() == [-2, 1, -1]
    flags = np.array([True, False])
    assert evaluate(lambda x: ir.Unary("not", x, x.type), flags).tolist() == [False, True]


def test_max_and_min_propagate_nan_like_the_gpu_runtime():
    a = np.array([np.nan, 1.0, -np.inf], np.float32)
    b = np.array([2.0, np.nan, 3.0], np.float32)
    got = evaluate(lambda x, y: binary("max", x, y), a, b)
    assert np.isnan(got[:2]).all() and got[2] == 3.0
    got = evaluate(lambda x, y: binary("min", x, y), a, b)
    assert np.isnan(got[:2]).all() and got[2] == -np.inf


@pytest.mark.parametrize("fn", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_math_functions_compute_in_their_type(fn, dtype):
    a = np.array([0.25, 1.0, 2.5, 7.0], dtype)
    got = evaluate(lambda x: ir.Math(fn, (x,), x.type), a)
    wide = a.astype(np.float64)
    reference = 1 / np.sqrt(wide) if fn == "rsqrt" else getattr(np, fn)(wide)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, reference, rtol=np.finfo(dtype).eps * 2)


def test_f16_arithmetic_rounds_to_f16_after_every_operation():
    big, one = np.array([2048.0], np.float16), np.array([1.0], np.float16)
    # In f32, (2048 + 1) - 2048 is 1; in f16, 2049 rounds to 2048 first.
    got = evaluate(lambda x, y: binary("sub", binary("add", x, y), x), big, one)
    assert got.dtype == np.float16 and got[0] == 0.0


def test_bf16_casts_round_to_nearest_even_and_keep_nan():
    halfway = 1 + 2.0**-8  # halfway between bf16 1.0 and 1.0078125: ties to even, 1.0
    above = 1 + 3 * 2.0**-9  # nearer 1.0078125
    a = np.array([halfway, above, 3.0, np.nan, -np.inf, 3.4e38], np.float32)
    got = evaluate(lambda x: ir.Cast(ir.Cast(x, tile_t("bf16", 6)), x.type), a)
    assert got[:3].tolist() == [1.0, 1.0078125, 3.0]
    assert np.isnan(got[3]) and got[4] == -np.inf and got[5] == np.inf


def test_bf16_arithmetic_rounds_after_every_operation():
    def build(x, y):
        bx, by = ir.Cast(x, tile_t("bf16", 1)), ir.Cast(y, tile_t("bf16", 1))
        return ir.Cast(binary("sub", binary("add", bx, by), bx), x.type)

    # 257 is not a bf16 (8 significant bits): 256 + 1 rounds to 256.
    got = evaluate(build, np.array([256.0], np.float32), np.array([1.0], np.float32))
    assert got[0] == 0.0


def test_bf16_tensors_are_read_and_written_through_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.5, -2.0, 3.0, 1e-3], ml_dtypes.bfloat16)[::-1]
    b = np.array([0.25, 0.5, 0.125, 4.0], ml_dtypes.bfloat16)
    got = evaluate(lambda x, y: mul(binary("add", x, y), y), a, b)
    assert got.dtype == ml_dtypes.bfloat16
    want = ((a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)).astype(
        np.float32
    ) * b.astype(np.float32)
    assert (got == want.astype(ml_dtypes.bfloat16)).all()


def test_select_on_tiles_and_scalars():
    c = np.array([True, False, True])
    a, b = np.array([1, 2, 3], np.int32), np.array([10, 20, 30], np.int32)
    got = evaluate(lambda cc, x, y: ir.Select(cc, x, y, x.type), c, a, b)
    assert got.tolist() == [1, 20, 3]
    got = evaluate(
        lambda cc, x, y: ir.Select(cc, x, y, x.type), np.bool_(False), np.int32(4), np.int32(5)
    )
    assert got == 5


def test_casts_truncate_toward_zero_and_wrap():
    a = np.array([2.7, -2.7, 0.0, 300.0], np.float32)
    assert evaluate(lambda x: ir.Cast(x, tile_t("i32", 4)), a).tolist() == [2, -2, 0, 300]
    assert evaluate(lambda x: ir.Cast(x, tile_t("bool", 4)), a).tolist() == [1, 1, 0, 1]
    wide = np.array([257, -1], np.int32)
    assert evaluate(lambda x: ir.Cast(x, tile_t("u8", 2)), wide).tolist() == [1, 255]


def test_splat_expand_dims_broadcast_and_transpose():
    col = np.array([1.0, 2.0, 3.0], np.float32)
    row = np.array([10.0, 20.0], np.float32)

    def outer(c, r):
        cc = ir.Broadcast(ir.ExpandDims(c, 1, tile_t("f32", 3, 1)), tile_t("f32", 3, 2))
        rr = ir.Broadcast(ir.ExpandDims(r, 0, tile_t("f32", 1, 2)), tile_t("f32", 3, 2))
        return ir.Transpose(mul(cc, rr), tile_t("f32", 2, 3))

    assert (evaluate(outer, col, row) == np.outer(col, row).T).all()
    got = evaluate(lambda s: ir.Splat(s, tile_t("f64", 2, 2)), np.float64(2.5))
    assert (got == 2.5).all() and got.shape == (2, 2)


def test_iota_and_full():
    out = tensor("out", "i32", 2, 5)
    body = [
        ir.Store(out, (point(0), win(0, 5)), ir.Iota(tile_t("i32", 5))),
        ir.Store(out, (point(1), win(0, 5)), ir.Full(7, tile_t("i32", 5))),
    ]
    result = np.zeros((2, 5), np.int32)
    run(kernel([out], *body), (1,), [result])
    assert result.tolist() == [[0, 1, 2, 3, 4], [7] * 5]


# --------------------------------------------------------------------------- absent lanes


def nan_surrounded(values: np.ndarray, pad: int = 7) -> np.ndarray:
    """``values`` as a view into a larger NaN-filled buffer (its neighbours are NaN)."""
    buffer = np.full(tuple(s + 2 * pad for s in values.shape), np.nan, values.dtype)
    inner = tuple(slice(pad, pad + s) for s in values.shape)
    buffer[inner] = values
    return buffer[inner]


def test_a_window_over_the_end_never_reads_outside_the_tensor():
    n, size = 10, 8
    x = nan_surrounded(np.arange(n, dtype=np.float32))
    xt, out = tensor("x", "f32", "N"), tensor("out", "f32", "N")
    base = mul(block(), const(size))
    body = ir.Store(
        out, (win(base, size),), binary("add", load(xt, win(base, size)), load(xt, win(base, size)))
    )
    result = nan_surrounded(np.full(n, -1.0, np.float32))
    run(kernel([xt, out], body), (2,), [x, result])
    assert (result == 2 * np.arange(n)).all()
    assert np.isnan(result.base[:7]).all() and np.isnan(result.base[7 + n :]).all()


def test_a_window_before_the_start_and_one_wholly_outside():
    x = nan_surrounded(np.arange(4, dtype=np.float32))
    xt, out = tensor("x", "f32", 4), tensor("out", "f32", 3)
    fill = lambda t: ir.Fill(t, const(-1.0, "f32"), t.type)  # noqa: E731
    body = [
        ir.Store(
            out, (point(0),), ir.Reduce("sum", fill(load(xt, win(-3, 4))), 0, ir.ScalarT("f32"))
        ),
        ir.Store(
            out, (point(1),), ir.Reduce("sum", fill(load(xt, win(9, 4))), 0, ir.ScalarT("f32"))
        ),
        ir.Store(out, (point(2),), ir.Reduce("sum", load(xt, win(-9, 4)), 0, ir.ScalarT("f32"))),
    ]
    result = np.zeros(3, np.float32)
    run(kernel([xt, out], *body), (1,), [x, result])
    # [-3, 1): three absent lanes filled with -1, then x[0] = 0.
    assert result.tolist() == [-3.0, -4.0, 0.0]


def test_elementwise_results_are_absent_where_an_operand_is_and_stores_skip_them():
    # y is shorter than x: lanes past M are absent in y, so in x + y, so not stored.
    x, y = np.arange(6, dtype=np.float32), np.full(4, 10.0, np.float32)
    xt, yt, out = tensor("x", "f32", "N"), tensor("y", "f32", "M"), tensor("out", "f32", "N")
    body = ir.Store(out, (win(0, 6),), binary("add", load(xt, win(0, 6)), load(yt, win(0, 6))))
    result = np.full(6, -5.0, np.float32)
    run(kernel([xt, yt, out], body), (1,), [x, y, result])
    assert result.tolist() == [10, 11, 12, 13, -5, -5]


def test_fill_gives_absent_lanes_a_value():
    x = nan_surrounded(np.array([1.0, 2.0], np.float32))
    got = np.zeros(4, np.float32)
    xt, out = tensor("x", "f32", 2), tensor("out", "f32", 4)
    loaded = load(xt, win(0, 4))
    body = ir.Store(out, (win(0, 4),), ir.Fill(loaded, const(9.0, "f32"), loaded.type))
    run(kernel([xt, out], body), (1,), [x, got])
    assert got.tolist() == [1.0, 2.0, 9.0, 9.0]


def test_two_dimensional_windows_over_both_ends():
    a = np.arange(5 * 7, dtype=np.float64).reshape(5, 7)
    at, out = tensor("a", "f64", "M", "N"), tensor("out", "f64", "M", "N")
    rows, cols = mul(block("y"), const(4)), mul(block("x"), const(4))
    window = (win(rows, 4), win(cols, 4))
    body = ir.Store(out, window, ir.Math("sqrt", (load(at, *window),), tile_t("f64", 4, 4)))
    result = nan_surrounded(np.zeros((5, 7)))
    run(kernel([at, out], body), (2, 2), [nan_surrounded(a), result])
    assert np.array_equal(result, np.sqrt(a))


# --------------------------------------------------------------------------- reductions and dot


def reduce_kernel(op: str, axis: int, shape: tuple[int, int], window: tuple[int, int]):
    x = tensor("x", "f32", "M", "N")
    loaded = load(x, win(0, window[0]), win(0, window[1]))
    kept = window[1 - axis]
    out = tensor("out", "f32", kept)
    reduced = ir.Reduce(op, loaded, axis, tile_t("f32", kept))
    return kernel([x, out], ir.Store(out, (win(0, kept),), reduced))


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1])
def test_reductions_treat_absent_lanes_as_identity(op, axis):
    data = np.array([[-3.0, 5.0, 1.0], [2.0, -7.0, 4.0]], np.float32)
    result = np.full(4, 123.0, np.float32)
    window = (4, 4)
    run(reduce_kernel(op, axis, data.shape, window), (1,), [nan_surrounded(data), result])
    want = getattr(np, op)(data, axis=axis)
    # Lanes of the result past the data reduce only absent lanes: absent, so not stored.
    assert result[: len(want)].tolist() == want.tolist()
    assert (result[len(want) :] == 123.0).all()


def test_a_scalar_reduction_of_absent_lanes_is_the_identity():
    x, out = tensor("x", "f32", "N"), tensor("out", "f32", 2)
    body = [
        ir.Store(out, (point(0),), ir.Reduce("max", load(x, win(5, 4)), 0, ir.ScalarT("f32"))),
        ir.Store(out, (point(1),), ir.Reduce("sum", load(x, win(1, 4)), 0, ir.ScalarT("f32"))),
    ]
    result = np.zeros(2, np.float32)
    run(kernel([x, out], *body), (1,), [np.array([1.0, 2.0, 3.0], np.float32), result])
    assert result.tolist() == [-np.inf, 5.0]


def test_integer_sums_wrap_and_f16_sums_accumulate_in_f32():
    assert (
        evaluate(lambda x: ir.Reduce("sum", x, 0, ir.ScalarT("i8")), np.full(3, 100, np.int8)) == 44
    )
    assert (
        evaluate(lambda x: ir.Reduce("max", x, 0, ir.ScalarT("u8")), np.array([3, 250], np.uint8))
        == 250
    )
    ones = np.ones(4096, np.float16)
    # Adding one at a time in f16 stops at 2048; accumulated in f32 it reaches 4096 exactly.
    assert evaluate(lambda x: ir.Reduce("sum", x, 0, ir.ScalarT("f16")), ones) == 4096


def dot_kernel(a_dtype: str, acc_dtype: str, bm: int, bk: int, bn: int, with_acc: bool):
    a, b = tensor("a", a_dtype, "M", "K"), tensor("b", a_dtype, "K", "N")
    out = tensor("out", acc_dtype, "M", "N")
    c = tensor("c", acc_dtype, "M", "N")
    acc = load(c, win(0, bm), win(0, bn)) if with_acc else ir.Full(0, tile_t(acc_dtype, bm, bn))
    product = ir.Dot(
        load(a, win(0, bm), win(0, bk)),
        load(b, win(0, bk), win(0, bn)),
        acc,
        tile_t(acc_dtype, bm, bn),
    )
    return kernel([a, b, c, out], ir.Store(out, (win(0, bm), win(0, bn)), product))


def test_dot_with_absent_lanes_on_every_axis():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 6)).astype(np.float32)
    b = rng.standard_normal((6, 3)).astype(np.float32)
    c = rng.standard_normal((5, 3)).astype(np.float32)
    out = nan_surrounded(np.zeros((5, 3), np.float32))
    run(
        dot_kernel("f32", "f32", 8, 8, 4, True),
        (1,),
        [nan_surrounded(a), nan_surrounded(b), c, out],
    )
    np.testing.assert_allclose(out, c + a @ b, rtol=1e-5)
    assert np.isnan(out.base[:7]).all()


def test_f16_dot_accumulates_in_f32():
    a = np.full((1, 4096), 1.0, np.float16)
    b = np.full((4096, 1), 1.0, np.float16)
    out = np.zeros((1, 1), np.float32)
    run(
        dot_kernel("f16", "f32", 1, 4096, 1, False), (1,), [a, b, np.zeros((1, 1), np.float32), out]
    )
    assert out[0, 0] == 4096.0
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 8)).astype(np.float16)
    out = np.zeros((16, 8), np.float16)
    run(
        dot_kernel("f16", "f16", 16, 32, 8, False), (1,), [a, b, np.zeros((16, 8), np.float16), out]
    )
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    assert np.array_equal(out, want)


def test_integer_dot():
    a = np.array([[100, 100], [-128, 1]], np.int8)
    b = np.array([[100, 1], [100, 1]], np.int8)
    out = np.zeros((2, 2), np.int32)
    run(dot_kernel("i8", "i32", 2, 2, 2, False), (1,), [a, b, np.zeros((2, 2), np.int32), out])
    assert out.tolist() == (a.astype(np.int32) @ b.astype(np.int32)).tolist()


# --------------------------------------------------------------------------- memory


def copy_kernel(dtype: str, rank: int, size: int) -> ir.Kernel:
    dims = [f"D{i}" for i in range(rank)]
    x, out = tensor("x", dtype, *dims), tensor("out", dtype, *dims)
    starts = [mul(block("xyz"[i]), const(size)) for i in range(rank)]
    window = tuple(win(s, size) for s in starts)
    return kernel([x, out], ir.Store(out, window, load(x, *window)))


def test_strided_transposed_and_reversed_views():
    base = np.arange(12 * 10, dtype=np.float32).reshape(12, 10)
    source = base[::2, ::-3].T  # (4, 6), neither stride is one element
    backing = np.full((10, 20), -1.0, np.float32)
    target = backing[1::2, ::3][:4, :6]
    run(copy_kernel("f32", 2, 4), (1, 2), [source, target])
    assert np.array_equal(target, source)
    untouched = np.ones(backing.shape, bool)
    untouched[1::2, ::3][:4, :6] = False
    assert (backing[untouched] == -1.0).all()


def test_loads_are_copies_so_a_later_store_does_not_change_them():
    x, out = tensor("x", "i32", 4), tensor("out", "i32", 4)
    before = variable("before", tile_t("i32", 4))
    whole = (win(0, 4),)
    body = [
        ir.Define(before, load(x, *whole)),
        ir.Store(x, whole, ir.Full(0, tile_t("i32", 4))),
        ir.Store(out, whole, ir.Read(before, before.type)),
    ]
    data, result = np.arange(4, dtype=np.int32), np.zeros(4, np.int32)
    run(kernel([x, out], *body), (1,), [data, result])
    assert result.tolist() == [0, 1, 2, 3] and data.tolist() == [0, 0, 0, 0]


def test_a_scalar_read_outside_the_tensor_is_zero():
    x, out = tensor("x", "f32", "N"), tensor("out", "f32", "N")
    body = ir.Store(out, (point(block()),), load(x, point(binary("add", block(), const(1)))))
    result = np.full(3, -1.0, np.float32)
    run(kernel([x, out], body), (3,), [nan_surrounded(np.array([1, 2, 3], np.float32)), result])
    assert result.tolist() == [2.0, 3.0, 0.0]


def test_a_scalar_store_outside_the_tensor_is_skipped():
    out = tensor("out", "i32", "N")
    body = ir.Store(out, (point(binary("add", block(), const(1))),), const(5, "i32"))
    result = np.zeros(3, np.int32)
    run(kernel([out], body), (3,), [result])
    assert result.tolist() == [0, 5, 5]


def test_a_scalar_stored_into_a_window_fills_its_in_bounds_lanes():
    out = tensor("out", "i32", "N")
    body = ir.Store(out, (win(2, 4),), const(5, "i32"))
    result = np.zeros(4, np.int32)
    run(kernel([out], body), (1,), [result])
    assert result.tolist() == [0, 0, 5, 5]


# --------------------------------------------------------------------------- control flow


def test_for_loop_accumulates_chunks_with_fill():
    n, chunk = 10, 4
    x, out = tensor("x", "f32", "N"), tensor("out", "f32", 1)
    k = variable("k", IDX)
    acc = variable("acc", tile_t("f32", chunk), mutable=True)
    read_acc = ir.Read(acc, acc.type)
    loaded = load(x, win(ir.Read(k, IDX), chunk))
    body = [
        ir.Define(acc, ir.Full(0.0, acc.type)),
        ir.For(
            k,
            const(0),
            ir.Extent("N", IDX),
            const(chunk),
            (
                ir.Assign(
                    acc, binary("add", read_acc, ir.Fill(loaded, const(0.0, "f32"), loaded.type))
                ),
            ),
        ),
        ir.Store(out, (point(0),), ir.Reduce("sum", read_acc, 0, ir.ScalarT("f32"))),
    ]
    result = np.zeros(1, np.float32)
    run(kernel([x, out], *body), (1,), [nan_surrounded(np.arange(n, dtype=np.float32)), result])
    assert result[0] == sum(range(n))


def test_for_stop_is_evaluated_once_at_loop_entry():
    out = tensor("out", "i64", 1)
    i, stop, count = variable("i", IDX), variable("stop", IDX, True), variable("n", IDX, True)
    body = [
        ir.Define(stop, const(3)),
        ir.Define(count, const(0)),
        ir.For(
            i,
            const(0),
            ir.Read(stop, IDX),
            const(1),
            (
                ir.Assign(stop, binary("add", ir.Read(stop, IDX), const(1))),
                ir.Assign(count, binary("add", ir.Read(count, IDX), const(1))),
            ),
        ),
        ir.Store(out, (point(0),), ir.Read(count, IDX)),
    ]
    result = np.zeros(1, np.int64)
    run(kernel([out], *body), (1,), [result])
    assert result[0] == 3


def test_a_loop_step_that_is_not_positive_is_an_error():
    i = variable("i", IDX)
    body = ir.For(i, const(0), const(4), binary("sub", block(), block()), ())
    with pytest.raises(PhobosError, match="step is 0; it must be positive"):
        run(kernel([], body), (1,), [])


def test_if_else_while_and_return():
    out = tensor("out", "i64", "N")
    n = variable("n", IDX, mutable=True)
    read_n = ir.Read(n, IDX)
    odd = binary("eq", binary("mod", block(), const(2)), const(1))
    body = [
        ir.If(binary("eq", block(), const(3)), (ir.Return(),)),
        ir.Define(n, const(0)),
        ir.While(binary("lt", read_n, block()), (ir.Assign(n, binary("add", read_n, const(10))),)),
        ir.If(
            odd,
            (ir.Store(out, (point(block()),), read_n),),
            (ir.Store(out, (point(block()),), ir.Unary("neg", read_n, IDX)),),
        ),
    ]
    result = np.full(5, 7, np.int64)
    run(kernel([out], *body), (5,), [result])
    assert result.tolist() == [0, 10, -10, 7, -10]


def test_return_inside_a_loop_ends_the_block():
    out = tensor("out", "i64", 1)
    i = variable("i", IDX)
    body = [
        ir.For(
            i,
            const(0),
            const(10),
            const(1),
            (
                ir.Store(out, (point(0),), ir.Read(i, IDX)),
                ir.If(binary("eq", ir.Read(i, IDX), const(4)), (ir.Return(),)),
            ),
        ),
        ir.Store(out, (point(0),), const(-1)),
    ]
    result = np.zeros(1, np.int64)
    run(kernel([out], *body), (1,), [result])
    assert result[0] == 4


def test_saxpy_with_a_million_elements():
    """Its speed is measured by benchmarks/bench_compile_time.py, not here."""
    n, size = 1_000_000, 1024
    x, y, out = (tensor(name, "f32", "N") for name in ("x", "y", "out"))
    alpha = ir.ScalarParam("alpha", "f32")
    window = (win(mul(block(), const(size)), size),)
    scaled = mul(
        ir.Splat(ir.ScalarArg(alpha, ir.ScalarT("f32")), tile_t("f32", size)), load(x, *window)
    )
    saxpy = kernel(
        [x, y, out, alpha], ir.Store(out, window, binary("add", scaled, load(y, *window)))
    )
    rng = np.random.default_rng(2)
    xs, ys = rng.random(n, np.float32), rng.random(n, np.float32)
    result = np.full(n, np.nan, np.float32)
    run(saxpy, (-(-n // size),), [xs, ys, result, 2.0])
    assert np.array_equal(result, np.float32(2.0) * xs + ys)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    lengths=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    starts=st.lists(st.integers(-7, 8), min_size=4, max_size=4),
)
def test_windows_anywhere_copy_exactly_the_lanes_inside_both_tensors(shape, lengths, starts):
    x, out = tensor("x", "f64", "M", "N"), tensor("out", "f64", "M", "N")
    names = ("r0", "c0", "r1", "c1")
    params = [ir.ScalarParam(n, "i64") for n in names]
    read, write = (
        tuple(win(ir.ScalarArg(p, ir.ScalarT("i64")), n) for p, n in zip(pair, lengths))
        for pair in (params[:2], params[2:])
    )
    value = binary("add", load(x, *read), ir.Full(1.0, tile_t("f64", *lengths)))
    source = np.arange(shape[0] * shape[1], dtype=np.float64).reshape(shape)
    result = nan_surrounded(np.full(shape, -1.0))
    run(
        kernel([x, out, *params], ir.Store(out, write, value)),
        (1,),
        [nan_surrounded(source), result, *starts],
    )
    want = np.full(shape, -1.0)
    r0, c0, r1, c1 = starts
    for i in range(lengths[0]):
        for j in range(lengths[1]):
            src, dst = (r0 + i, c0 + j), (r1 + i, c1 + j)
            inside = all(0 <= p < n for p, n in zip(src + dst, shape + shape))
            if inside:
                want[dst] = source[src] + 1
    assert np.array_equal(result, want)
    assert np.isnan(result.base[:7]).all() and np.isnan(result.base[-7:]).all()
