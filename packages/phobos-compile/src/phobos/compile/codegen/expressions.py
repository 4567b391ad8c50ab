"""Expression emission: IR expressions to C++ scalars and per-lane tile expressions.

Block-uniform scalars are plain C expressions every thread evaluates.  Tile
expressions are built lane-wise (see ``values.py``): elementwise operators,
math, casts and ``where`` compose per-lane strings and AND their operands'
masks; loads, layout changes, reductions and ``dot`` emit code and return a
materialised tile.  Arithmetic on integers narrower than 32 bits is cast back to
its type so that it wraps as the CPU interpreter's does; f16 and bf16 use the
``cuda_fp16``/``cuda_bf16`` operators and the runtime's math (computed in f32).
"""

from __future__ import annotations

from typing import Union

from phobos.compile.codegen import conversions, dot, memory, reductions
from phobos.compile.codegen.context import EmitContext
from phobos.compile.codegen.dtypes import INDEX_CTYPE, ctype, literal
from phobos.compile.codegen.lanes import mask_lane, mask_word, word_lane
from phobos.compile.codegen.layout import Layout
from phobos.compile.codegen.values import (
    ScalarValue,
    TileValue,
    and_masks,
    and_words,
    variable_name,
)
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir

_OPERATORS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "mod": "%",
    "and": "&",
    "or": "|",
    "xor": "^",
    "shl": "<<",
    "shr": ">>",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "land": "&&",
    "lor": "||",
}
_BOOLEAN_RESULT = ("eq", "ne", "lt", "le", "gt", "ge", "land", "lor")
_NARROW_INTS = ("i8", "i16", "u8", "u16")
_CTX = {"block": "blockIdx", "grid": "gridDim"}
_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs")

Value = Union[ScalarValue, TileValue]


def emit(ctx: EmitContext, e: ir.Expr) -> Value:
    if isinstance(e.type, ir.TileT):
        return tile(ctx, e)
    return ScalarValue(e.type.dtype, scalar(ctx, e))


def scalar(ctx: EmitContext, e: ir.Expr) -> str:
    """A C expression for a block-uniform scalar (code it needs is emitted first)."""
    if isinstance(e, ir.Const):
        return literal(e.value, e.type.dtype)
    if isinstance(e, ir.ScalarArg):
        return f"a_{e.param.name}"
    if isinstance(e, ir.Extent):
        return f"e_{e.name}"
    if isinstance(e, ir.CtxValue):
        return f"{INDEX_CTYPE}({_CTX[e.group]}.{e.axis})"
    if isinstance(e, ir.Read):
        return variable_name(e.var.name)
    if isinstance(e, ir.Load):
        access = ctx.access[e.tensor.name]
        indices = [scalar(ctx, index.index) for index in e.indices]
        return memory.load_scalar(ctx, access, indices, e.type.dtype)
    if isinstance(e, ir.Reduce):
        return reductions.reduce_to_scalar(ctx, tile(ctx, e.operand), e.op, e.type.dtype)
    if isinstance(e, (ir.Unary, ir.Binary, ir.Math, ir.Select, ir.Cast)):
        operands = [scalar(ctx, o) for o in _operands(e)]
        return _elementwise(e, operands)
    raise _unsupported(e)


def tile(ctx: EmitContext, e: ir.Expr) -> TileValue:
    """A tile value in the layout of its shape."""
    assert isinstance(e.type, ir.TileT)
    layout = ctx.layout(e.type.shape)
    dtype = e.type.dtype
    if isinstance(e, ir.Read) and e.var.name in ctx.reloads:
        return tile(ctx, ctx.reloads[e.var.name])
    if isinstance(e, ir.Read):
        name = variable_name(e.var.name)
        if not e.var.type.partial:
            return TileValue(dtype, ctx.variable_layout(e.var.name), f"{name}[r][i]")
        held = ctx.variable_layout(e.var.name)
        return TileValue(dtype, held, f"{name}[r][i]", mask_lane(name), word=mask_word(name))
    if isinstance(e, ir.Load) and e in ctx.preloaded:
        return ctx.preloaded[e]
    if isinstance(e, ir.Load):
        indices = axis_indices(ctx, e.indices)
        access = ctx.access[e.tensor.name]
        return memory.load_tile(ctx, access, indices, layout, dtype, e.type.partial)
    if isinstance(e, (ir.Unary, ir.Binary, ir.Math, ir.Select, ir.Cast)):
        operands = [tile(ctx, o) for o in _operands(e)]
        operands, held = conversions.common_layout(ctx, operands, layout)
        lane = _elementwise(e, [o.lane for o in operands])
        word = and_words(*operands)
        mask = word_lane(word) if word is not None else and_masks(*(o.mask for o in operands))
        anywhere = all(o.anywhere for o in operands)
        return TileValue(dtype, held, lane, mask, anywhere, word)
    if isinstance(e, ir.Splat):
        value = ctx.fresh("s")
        ctx.line(f"const {ctype(dtype)} {value} = {scalar(ctx, e.operand)};")
        return TileValue(dtype, layout, value, anywhere=True)
    if isinstance(e, ir.Full):
        return TileValue(dtype, layout, literal(e.value, dtype), anywhere=True)
    if isinstance(e, ir.Iota):
        return TileValue(dtype, layout, f"{ctype(dtype)}(c0)", anywhere=True)
    if isinstance(e, ir.Fill):
        return _fill(ctx, e, layout)
    if isinstance(e, ir.ExpandDims):
        return conversions.expand_dims(ctx, tile(ctx, e.operand), layout, e.axis)
    if isinstance(e, ir.Broadcast):
        return conversions.broadcast(ctx, tile(ctx, e.operand), layout)
    if isinstance(e, ir.Transpose):
        return conversions.transpose(ctx, tile(ctx, e.operand), layout)
    if isinstance(e, ir.Dot):
        return dot.emit_dot(
            ctx, e, lambda o: tile(ctx, o), lambda indices: axis_indices(ctx, indices)
        )
    if isinstance(e, ir.Reduce):
        return reductions.reduce_axis(ctx, tile(ctx, e.operand), e.op, e.axis, layout, e.type)
    raise _unsupported(e)


def _fill(ctx: EmitContext, e: ir.Fill, layout: Layout) -> TileValue:
    operand = tile(ctx, e.operand)
    if isinstance(e.value.type, ir.TileT):
        (operand, fill), held = conversions.common_layout(
            ctx, [operand, tile(ctx, e.value)], layout
        )
        value = fill.lane
    else:
        held, value = operand.layout, scalar(ctx, e.value)
    if operand.mask is None:
        return operand
    lane = f"({operand.mask} ? {operand.lane} : {value})"
    return TileValue(operand.dtype, held, lane, None, operand.anywhere)


def axis_indices(ctx: EmitContext, indices: tuple[ir.TensorIndex, ...]) -> list[memory.AxisIndex]:
    """Each axis's index, hoisted into a constant so group loops reuse it."""
    out: list[memory.AxisIndex] = []
    for index in indices:
        start = index.index if isinstance(index, ir.PointIndex) else index.start
        name = ctx.fresh("s")
        ctx.line(f"const {INDEX_CTYPE} {name} = {INDEX_CTYPE}({scalar(ctx, start)});")
        length = index.length if isinstance(index, ir.WindowIndex) else None
        out.append(memory.AxisIndex(name, length, ctx.facts.multiple_of(start)))
    return out


def _operands(e: ir.Expr) -> list[ir.Expr]:
    if isinstance(e, (ir.Unary, ir.Math, ir.Cast)):
        return [e.operand]
    if isinstance(e, ir.Binary):
        return [e.left, e.right]
    assert isinstance(e, ir.Select)
    return [e.cond, e.if_true, e.if_false]


def _elementwise(e: ir.Expr, operands: list[str]) -> str:
    """The C expression of one lane (or a scalar) of an elementwise node."""
    c = ctype(e.type.dtype)
    if isinstance(e, ir.Cast):
        return f"phobos::cast<{c}>({operands[0]})"
    if isinstance(e, ir.Select):
        return f"({operands[0]} ? {operands[1]} : {operands[2]})"
    if isinstance(e, ir.Math):
        if e.fn not in _MATH:
            raise _unsupported(e)
        return f"phobos::{e.fn}({operands[0]})"
    if isinstance(e, ir.Unary):
        text = {"neg": "-", "not": "!", "bitnot": "~"}[e.op] + f"({operands[0]})"
        return _wrap(text, e.type.dtype) if e.op != "not" else f"({text})"
    assert isinstance(e, ir.Binary)
    left, right = operands
    if e.op in ("max", "min"):
        return f"phobos::{e.op}({left}, {right})"
    if e.op == "mod" and e.type.dtype in ir.FLOAT_DTYPES:
        return f"phobos::fmod({left}, {right})"
    text = f"({left} {_OPERATORS[e.op]} {right})"
    return text if e.op in _BOOLEAN_RESULT else _wrap(text, e.type.dtype)


def _wrap(text: str, dtype: str) -> str:
    """Narrow integers promote to int in C; cast the result back so it wraps."""
    return f"{ctype(dtype)}{text}" if dtype in _NARROW_INTS or dtype == "bool" else text


def _unsupported(e: ir.Expr) -> Exception:
    what = type(e).__name__
    return error(
        e.span,
        f"'{what}' is not supported by the GPU code generator yet",
        help="run this kernel in the CPU interpreter, or rewrite it without this operation",
    )
