"""The limits of docs/language.md, "Limits": each is an error at the user's line that names
the limit, just past it; just under it, the program passes every stage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower, tune_space
from phobos.compile.diagnostics import PhobosError
from phobos.compile.interp import run
from phobos.compile.ir import format_kernel
from phobos.compile.ir import nodes as ir
from phobos.compile.limits import (
    MAX_NESTING,
    MAX_TILE_ELEMENTS,
    MAX_VARIANT_TILE_ELEMENTS,
    NESTING,
    TILE_ELEMENTS,
    VARIANT_TILE_ELEMENTS,
)
from phobos.compile.pipeline import generate_kernel
from phobos.compile.races import check_races
from phobos.compile.span import Span
from phobos.compile.syntax import ast, format_module, parse

HEAD = "kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {\n    let t = x[0 :+ 4]\n"


def kernel_with(expr: str) -> str:
    return HEAD + f"    out[0 :+ 4] = {expr}\n}}\n"


def every_stage(text: str) -> None:
    """Parse, print, check, lower, print the IR, race-check, interpret and generate CUDA C++."""
    module = parse(text, "k.ph")
    assert parse(format_module(module), "again.ph") == module
    name = module.kernels[0].name
    kernel = lower(module, name, {})
    format_kernel(kernel)
    check_races(kernel)
    args = [np.ones(8, np.float32) if isinstance(p, ir.TensorParam) else 1.0 for p in kernel.params]
    run(kernel, (1,), args)
    generate_kernel(module, name, {}, arch="sm_90")


def error_of(text: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        module = parse(text, "k.ph")
        lower(module, module.kernels[0].name, {})
    return caught.value


# ------------------------------------------------------------------ nesting

# A statement's expression is level 2 in a kernel body (level 1): a sum of n terms reaches n + 1.
DEEP = {
    "sum": lambda n: " + ".join(["t"] * n),
    "negations": lambda n: "-" * (n - 1) + "t",
    "calls": lambda n: "exp(" * (n - 1) + "t" + ")" * (n - 1),
    "products": lambda n: "t * (" * ((n - 1) // 2) + "t" + ")" * ((n - 1) // 2),
}


@pytest.mark.parametrize("shape", DEEP)
def test_an_expression_at_the_limit_passes_every_stage(shape):
    every_stage(kernel_with(DEEP[shape](MAX_NESTING - 1)))


@pytest.mark.parametrize("shape", DEEP)
@pytest.mark.parametrize("extra", [2, 400])
def test_an_expression_past_the_limit_is_an_error_at_its_line(shape, extra):
    err = error_of(kernel_with(DEEP[shape](MAX_NESTING + extra)))
    assert err.span.file == "k.ph" and err.span.line == 3
    assert "nested too deeply" in err.message and f"the limit is {MAX_NESTING}" in err.message
    assert err.diagnostics[0].limit == NESTING and err.only_limits
    assert "`let x = ...`" in err.diagnostics[0].help


def test_the_error_counts_the_levels():
    err = error_of(kernel_with(DEEP["sum"](120)))
    assert err.message == f"expression nested too deeply (121 levels); the limit is {MAX_NESTING}"
    assert (err.span.line, err.span.col) == (3, 19)


def test_parentheses_count_in_ph():
    err = error_of(kernel_with("(" * 245 + "t" + ")" * 245))
    assert err.message.startswith("nested too deeply: more than 100 levels")
    assert err.span.line == 3


def nested_ifs(depth: int) -> str:
    body = "".join("    " * (i + 1) + "if true {\n" for i in range(depth))
    body += "    " * (depth + 1) + "out[0 :+ 4] = t\n"
    body += "".join("    " * (i + 1) + "}\n" for i in reversed(range(depth)))
    return HEAD + body + "}\n"


def test_blocks_at_the_limit_pass_and_past_it_are_an_error():
    every_stage(nested_ifs(MAX_NESTING - 4))  # out[0 :+ 4]: a subscript, a window, a number
    err = error_of(nested_ifs(MAX_NESTING + 5))
    assert "nested too deeply" in err.message
    assert err.diagnostics[0].limit == NESTING


def test_a_long_else_if_chain_nests():
    chain = "    if t[0] > 0.0 {\n        out[0 :+ 4] = t\n    }"
    chain += "".join(
        f" else if t[0] > {i}.0 {{\n        out[0 :+ 4] = t\n    }}" for i in range(150)
    )
    err = error_of(HEAD + chain + "\n}\n")
    assert err.diagnostics[0].limit == NESTING


def fn_chain(count: int) -> str:
    fns = "".join(
        f"fn g{i}(a: f32) -> f32 {{\n    return g{i + 1}(a) + 1.0\n}}\n" for i in range(count)
    )
    fns += f"fn g{count}(a: f32) -> f32 {{\n    return a\n}}\n"
    return fns + kernel_with("g0(t)")


def test_inlined_fn_calls_count_toward_the_limit():
    every_stage(fn_chain(20))
    err = error_of(fn_chain(150))
    assert "nested too deeply once fns are inlined" in err.message
    assert err.diagnostics[0].limit == NESTING
    assert any("in this call of" in n.message for n in err.diagnostics[0].notes)


def deep_tree(levels: int) -> ast.Module:
    """A tree no parser made: ``-(-(...t))`` ``levels`` deep, in a kernel."""
    span = Span("made.py", 3, 5, 3, 9)
    expr: ast.Expr = ast.Name("t", span)
    for _ in range(levels):
        expr = ast.Unary("-", expr, span)
    module = parse(kernel_with("t"), "made.py")
    kernel = module.kernels[0]
    store = kernel.body.body[1]
    body = ast.Block((kernel.body.body[0], ast.Assign(store.target, expr, span=span)))
    return ast.Module((ast.Kernel(kernel.name, kernel.params, body, span=kernel.span),))


def test_the_printer_refuses_a_tree_too_deep_to_print():
    format_module(deep_tree(MAX_NESTING - 3))
    with pytest.raises(PhobosError) as caught:
        format_module(deep_tree(5000))
    assert caught.value.span.file == "made.py"
    assert caught.value.diagnostics[0].limit == NESTING


def test_the_ir_printer_refuses_ir_too_deep_to_print():
    kernel = lower(parse(kernel_with("t"), "k.ph"), "k", {})
    store = kernel.body[-1]
    value = store.value
    for _ in range(5000):
        value = ir.Unary("neg", value, value.type, store.span)
    deep = ir.Kernel("k", kernel.params, (), (*kernel.body[:-1], ir.Store(store.tensor, store.indices, value, store.span)), kernel.span)  # fmt: skip
    with pytest.raises(PhobosError) as caught:
        format_kernel(deep)
    assert caught.value.diagnostics[0].limit == NESTING


# ------------------------------------------------------------------ tiles


def window(length: int) -> str:
    return f"kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {{\n    out[0 :+ {length}] = x[0 :+ {length}]\n}}\n"  # fmt: skip


def test_a_window_at_the_limit_passes_and_one_past_it_is_an_error():
    kernel = lower(parse(window(MAX_TILE_ELEMENTS), "k.ph"), "k", {})
    run(kernel, (1,), [np.ones(10, np.float32), np.zeros(10, np.float32)])
    for length in (MAX_TILE_ELEMENTS + 1, 9223372036854775807, 2**80):
        err = error_of(window(length))
        assert err.message == f"a window length must be at most {MAX_TILE_ELEMENTS}, got {length}"
        assert (err.span.line, err.span.col) == (2, 14)
        assert err.diagnostics[0].limit == TILE_ELEMENTS


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("zeros<f32>[1024, 256]", "this tile ([1024, 256]) has 262144 lanes"),
        ("arange(131073)", "a tile extent must be at most 131072, got 131073"),
        ("zeros<f32>[131073]", "a tile extent must be at most 131072, got 131073"),
        (
            "x[0 :+ 1024][:, newaxis] + x[0 :+ 1024][newaxis, :]",
            "this tile ([1024, 1024]) has 1048576 lanes",
        ),
    ],
)
def test_a_tile_past_the_limit_is_an_error_at_its_expression(expr, message):
    text = f"kernel k(x: tensor<f32>[N], out: tensor<f32>[N]) {{\n    let zz = {expr}\n}}\n"
    err = error_of(text)
    assert err.message.startswith(message)
    assert err.span.line == 2 and err.diagnostics[0].limit == TILE_ELEMENTS


def test_a_two_dimensional_window_past_the_limit():
    text = "kernel k(x: tensor<f32>[M, N]) {\n    x[0 :+ 1024, 0 :+ 1024] = 0.0\n}\n"
    err = error_of(text)
    assert err.message.startswith("this window ([1024, 1024]) has 1048576 lanes")


def statements(count: int) -> str:
    """``count`` bindings of 3 x 131072 lanes each: a load, a splat of the constant, a product."""
    ops = "\n".join(f"    let t{i} = x[0 :+ 131072] * {i}.0" for i in range(count))
    return f"kernel k(x: tensor<f32>[N]) {{\n{ops}\n}}\n"


def test_the_lanes_of_a_variant_are_limited():
    lower(parse(statements(10), "k.ph"), "k", {})  # 3932160 lanes
    err = error_of(statements(11))  # 4325376 lanes
    assert err.span.line == 1 and err.diagnostics[0].limit == VARIANT_TILE_ELEMENTS
    assert f"the limit is {MAX_VARIANT_TILE_ELEMENTS} per variant" in err.message
    assert "computes tiles of 4325376 lanes in all" in err.message
    assert err.diagnostics[0].notes[0].message == "the largest tile, 131072 lanes"


def test_the_tutorials_largest_variants_are_within_the_limits():
    softmax = Path(__file__).resolve().parents[3] / "examples" / "softmax.ph"
    module = parse(softmax.read_text(), str(softmax))
    for name in ("softmax", "softmax_online"):
        lower(module, name, {"ROWS": 8, "BLOCK_N": 16384})


def test_a_tensor_extent_fixed_at_compile_time_may_be_large_but_an_i64():
    lower(parse("kernel k(x: tensor<f32>[1048576]) {\n}\n", "k.ph"), "k", {})
    err = error_of("kernel k(x: tensor<f32>[9223372036854775808]) {\n}\n")
    assert err.message.startswith("a tensor extent must be at most 9223372036854775807")


def test_an_autotune_space_is_limited():
    names = ", ".join(f"B{i} in [1, 1024]" for i in range(5))  # 11^5 variants
    module = parse(f"@autotune({names})\nkernel k(x: tensor<f32>[N]) {{\n}}\n", "k.ph")
    with pytest.raises(PhobosError) as caught:
        tune_space(module, "k")
    assert caught.value.message == (
        "the @autotune space of 'k' has 161051 variants; the limit is 65536"
    )
    module = parse("@autotune(B in {1, 18446744073709551616})\nkernel k() {\n}\n", "k.ph")
    with pytest.raises(PhobosError) as caught:
        tune_space(module, "k")
    assert caught.value.message == "the @autotune value 18446744073709551616 does not fit in i64"
