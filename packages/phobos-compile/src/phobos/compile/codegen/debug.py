"""Debugging statements on the GPU: ``trace`` as ``printf``, ``assert`` as ``__assertfail``.

A traced scalar is printed by thread 0 of each selected block, in the
interpreter's format: ``file:line: block (x, y, z): name = value``.  A traced
tile is printed one lane per line, ``name[i, j] = value``, by the thread that
holds the lane (so lines of one tile come in no fixed order); absent lanes are
not printed.  A failed assert calls ``__assertfail`` with the user's file and
line, so the device reports ``file:line: function: block: [..], thread: [..]
Assertion `message` failed.`` and the launch stops with an error; a tile's
assert is checked by every thread on its own lanes, a scalar's by thread 0.
Values and conditions are computed by every thread before any ``if (tid ==
0)``, so reductions and layout changes (which synchronise the block) stay
outside divergent code.
"""

from __future__ import annotations

from contextlib import nullcontext

from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.conversions import to_layout
from phobos.compile.codegen.dtypes import ctype
from phobos.compile.codegen.expressions import scalar, tile
from phobos.compile.codegen.lanes import all_lanes
from phobos.compile.ir import nodes as ir

BLOCK_ARGS = "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z"


def c_string(text: str) -> str:
    """``text`` as a C string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def printf_format(dtype: str, value: str) -> tuple[str, str]:
    """The printf conversion for a value of ``dtype``, and the argument to pass."""
    if dtype in ir.FLOAT_DTYPES:
        return "%g", f"(double)(float)({value})" if dtype != "f64" else f"({value})"
    if dtype in ("i64", "index"):
        return "%lld", f"(long long)({value})"
    if dtype == "u64":
        return "%llu", f"(unsigned long long)({value})"
    if dtype == "u32":
        return "%u", f"(unsigned)({value})"
    return "%d", f"(int)({value})"


def emit_trace(ctx: EmitContext, stmt: ir.Trace) -> None:
    where = f"{c_string(stmt.span.file)}, {stmt.span.line}"
    selected = nullcontext() if stmt.when is None else ctx.block(f"if ({scalar(ctx, stmt.when)})")
    with selected:
        if isinstance(stmt.value.type, ir.TileT):
            _trace_tile(ctx, stmt.value, stmt.name, where)
        else:
            _trace_scalar(ctx, stmt.value, stmt.name, where)


def _trace_scalar(ctx: EmitContext, value: ir.Expr, name: str, where: str) -> None:
    held = ctx.fresh("trace")
    ctx.line(f"const {ctype(value.type.dtype)} {held} = {scalar(ctx, value)};")
    conversion, argument = printf_format(value.type.dtype, held)
    text = f'"%s:%d: block (%d, %d, %d): %s = {conversion}\\n"'
    with ctx.block("if (tid == 0)"):
        ctx.line(f"printf({text}, {where}, {BLOCK_ARGS}, {c_string(name)}, {argument});")


def _trace_tile(ctx: EmitContext, value: ir.Expr, name: str, where: str) -> None:
    shape = value.type.shape
    lanes = to_layout(ctx, tile(ctx, value), ctx.layout(shape))
    conversion, argument = printf_format(value.type.dtype, lanes.lane)
    index = ", ".join("%d" for _ in shape)
    coords = ", ".join(f"c{k}" for k in range(len(shape)))
    text = f'"%s:%d: block (%d, %d, %d): %s[{index}] = {conversion}\\n"'
    call = f"printf({text}, {where}, {BLOCK_ARGS}, {c_string(name)}, {coords}, {argument});"
    if lanes.mask is not None:
        call = f"if ({lanes.mask}) {call}"
    all_lanes(ctx, lanes.layout, [call], skip_padding=True)


def emit_assert(ctx: EmitContext, stmt: ir.DeviceAssert) -> None:
    fail = (
        f"__assertfail({c_string(stmt.message)}, {c_string(stmt.span.file)}, "
        f"{stmt.span.line}, __func__, 1);"
    )
    if isinstance(stmt.cond.type, ir.ScalarT):
        held = ctx.fresh("holds")
        ctx.line(f"const bool {held} = {scalar(ctx, stmt.cond)};")
        ctx.line(f"if (tid == 0 && !{held}) {fail}")
        return
    lanes = tile(ctx, stmt.cond)
    failing = f"!({lanes.lane})" if lanes.mask is None else f"{lanes.mask} && !({lanes.lane})"
    all_lanes(ctx, lanes.layout, [f"if ({failing}) {fail}"], skip_padding=True)
