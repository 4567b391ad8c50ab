"""Lowering expressions: names to values, operators to typed, explicitly broadcast IR.

``value`` returns either an IR expression or a ``Literal`` whose type is still
open; the operator that meets a literal decides its type.  Arithmetic on two
literals folds here, so ``BLOCK / 2`` stays a compile-time number.
"""

from __future__ import annotations

import difflib
import math
from abc import ABC, abstractmethod

from phobos.compile.check import scope as names
from phobos.compile.check.atomics import ATOMICS, value_error
from phobos.compile.check.broadcast import broadcast_shapes, is_partial, shape_of, to_shape
from phobos.compile.check.builtins import BUILTINS, lower_cast, lower_dot
from phobos.compile.check.context import Context
from phobos.compile.check.limits import check_extent, check_tile
from phobos.compile.check.messages import describe, shown
from phobos.compile.check.scope import Scope
from phobos.compile.check.triton_names import triton_hint
from phobos.compile.check.types import (
    Literal,
    Value,
    cast_target,
    common_dtype,
    is_float,
    is_int,
    is_numeric,
    literal_fits,
    make_const,
)
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.limits import MAX_NESTING, MAX_TENSOR_EXTENT
from phobos.compile.span import Span
from phobos.compile.syntax import ast
from phobos.compile.syntax.nesting import nesting_error

ARITHMETIC = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
BITWISE = {"&": "and", "|": "or", "^": "xor"}
SHIFTS = {"<<": "shl", ">>": "shr"}
COMPARISONS = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
LOGICAL = {"&&": "land", "||": "lor"}


def with_dtype(type: ir.IRType, dtype: str) -> ir.IRType:
    if isinstance(type, ir.TileT):
        return ir.TileT(dtype, type.shape, type.partial)
    return ir.ScalarT(dtype)


def with_partial(type: ir.IRType, partial: bool) -> ir.IRType:
    if isinstance(type, ir.TileT):
        return ir.TileT(type.dtype, type.shape, partial)
    return type


class ExprLowerer(ABC):
    """Lowers expressions in a ``Context``; statements and fn inlining live in ``StmtLowerer``."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ entry points

    def value(self, expr: ast.Expr, scope: Scope) -> Value:
        """The value of ``expr``; a tile of more than ``MAX_TILE_ELEMENTS`` lanes is an error."""
        method = getattr(self, "_" + type(expr).__name__.lower(), None)
        if method is None:
            raise error(expr.span, f"unsupported expression {type(expr).__name__}")
        ctx = self.ctx
        ctx.level += 1
        try:
            if ctx.level > MAX_NESTING:
                raise self.too_deep(expr.span)
            got = method(expr, scope)
        finally:
            ctx.level -= 1
        if not isinstance(got, Literal) and isinstance(got.type, ir.TileT):
            check_tile(got.type.shape, expr.span)
        return got

    def too_deep(self, span: Span) -> Exception:
        """Lowering nests deeper than MAX_NESTING (through inlined fns: the source is checked)."""
        return nesting_error(
            span,
            f"nested too deeply once fns are inlined (more than {MAX_NESTING} levels of "
            f"blocks, expressions and fn bodies); the limit is {MAX_NESTING}",
            f"bind the values of fn calls to names first (`{self.ctx.spelling.let('x')}`), "
            "and nest fewer calls",
        )

    def typed(self, expr: ast.Expr, scope: Scope) -> ir.Expr:
        """The value of ``expr``, a lone literal taking its default type (i32 or f32)."""
        return self.materialise(self.value(expr, scope))

    def materialise(self, value: Value) -> ir.Expr:
        """A typed value: a literal takes its default type."""
        if isinstance(value, Literal):
            return make_const(value, value.default_dtype, self.ctx.spelling)
        return value

    def compile_time_int(self, expr: ast.Expr, scope: Scope, what: str) -> int:
        got = self.value(expr, scope)
        if isinstance(got, Literal) and got.is_int:
            return int(got.value)
        if isinstance(got, ir.Const) and is_int(got.type.dtype):
            return int(got.value)
        raise error(
            expr.span,
            f"{what} must be a compile-time integer",
            help=f"use a literal, a module `{self.ctx.spelling.lang('const')}` or an "
            f"`@{self.ctx.spelling.lang('autotune')}` name",
        )

    def scalar_index(self, expr: ast.Expr, scope: Scope, what: str) -> ir.Expr:
        """An integer block-uniform scalar, as ``index``."""
        got = self.value(expr, scope)
        if isinstance(got, Literal):
            if not got.is_int:
                raise error(expr.span, f"{what} must be an integer, not a float literal")
            return make_const(got, "index", self.ctx.spelling, expr.span)
        if isinstance(got.type, ir.TileT):
            raise error(
                expr.span,
                f"{what} must be a block-uniform scalar, not a {shown(got.type)}",
                help=f"index with a window `{self.ctx.spelling.window()}`; "
                "a tile cannot index a tensor",
            )
        if not is_int(got.type.dtype):
            raise error(
                expr.span,
                f"{what} must be an integer, not {shown(got.type)}",
                help=f"cast it: `{self.ctx.spelling.call('index', describe(expr))}`",
            )
        return self.convert(got, "index", expr.span)

    def convert(self, value: ir.Expr, dtype: str, span: Span) -> ir.Expr:
        if value.type.dtype == dtype:
            return value
        return ir.Cast(value, with_dtype(value.type, dtype), span)

    # ------------------------------------------------------------------ unification

    def unify(self, exprs: list[ast.Expr], values: list[Value], span: Span) -> list[ir.Expr]:
        """Give ``values`` one element type: literals adapt, index absorbs i32/i64."""
        dtype: str | None = None
        owner: ast.Expr | None = None
        for expr, got in zip(exprs, values):
            if isinstance(got, Literal):
                continue
            mine = got.type.dtype
            if dtype is None:
                dtype, owner = mine, expr
                continue
            shared = common_dtype(dtype, mine)
            if shared is None:
                target = cast_target(dtype, mine)
                culprit = expr if target == dtype else owner
                raise error(
                    span,
                    f"mismatched types {dtype} and {mine}",
                    help="convert one side explicitly, e.g. "
                    f"`{self.ctx.spelling.call(target, describe(culprit))}`",
                )
            if shared != dtype:
                owner = expr
            dtype = shared
        if dtype is None:
            lits = [v for v in values if isinstance(v, Literal)]
            dtype = "i32" if all(v.is_int for v in lits) else "f32"
        out: list[ir.Expr] = []
        for expr, got in zip(exprs, values):
            if isinstance(got, Literal):
                if not literal_fits(got, dtype):
                    raise error(
                        expr.span,
                        f"a {got.describe()} cannot take the type {dtype}",
                        help="convert the other operand, e.g. "
                        f"`{self.ctx.spelling.call('f32', describe(owner))}`"
                        if owner is not None and is_int(dtype)
                        else f"write a {dtype} value instead",
                    )
                out.append(make_const(got, dtype, self.ctx.spelling, expr.span))
            else:
                out.append(self.convert(got, dtype, expr.span))
        return out

    def elementwise(self, exprs: list[ast.Expr], values: list[Value], span: Span) -> list[ir.Expr]:
        """Unify types, then broadcast the operands to one shape."""
        typed = self.unify(exprs, values, span)
        shapes = [s for s in map(shape_of, typed) if s is not None]
        if not shapes:
            return typed
        shape = broadcast_shapes(shapes, span, self.ctx.spelling)
        return [to_shape(v, shape, v.span) for v in typed]

    # ------------------------------------------------------------------ leaves

    def _intlit(self, expr: ast.IntLit, scope: Scope) -> Value:
        if expr.suffix:
            return make_const(Literal(expr.value, expr.span), expr.suffix, self.ctx.spelling)
        return Literal(expr.value, expr.span)

    def _floatlit(self, expr: ast.FloatLit, scope: Scope) -> Value:
        if expr.suffix:
            if not is_float(expr.suffix):
                raise error(expr.span, f"a float literal cannot have the suffix {expr.suffix}")
            return make_const(Literal(expr.value, expr.span), expr.suffix, self.ctx.spelling)
        return Literal(expr.value, expr.span)

    def _boollit(self, expr: ast.BoolLit, scope: Scope) -> Value:
        return ir.Const(expr.value, ir.ScalarT("bool"), expr.span)

    def _ctx(self, expr: ast.Ctx, scope: Scope) -> Value:
        if expr.group not in ("block", "grid") or expr.axis not in ("x", "y", "z"):
            raise error(
                expr.span,
                f"unknown ctx.{expr.group}.{expr.axis}",
                help="use ctx.block.x|y|z or ctx.grid.x|y|z",
            )
        return ir.CtxValue(expr.group, expr.axis, ir.ScalarT("index"), expr.span)

    def _name(self, expr: ast.Name, scope: Scope) -> Value:
        if expr.id == "inf" and scope.find("inf") is None:
            return Literal(math.inf, expr.span)
        if expr.id == "newaxis" and scope.find("newaxis") is None:
            raise error(
                expr.span,
                "`newaxis` is only an index item",
                help=f"write `t[:, {self.ctx.spelling.newaxis}]`",
            )
        found = scope.lookup(expr.id, expr.span, self.ctx.spelling)
        value = found.value
        if found.kind == names.TENSOR:
            assert isinstance(value, ir.TensorParam)
            raise error(
                expr.span,
                f"the tensor '{expr.id}' is used as a value",
                help=f"load a window of it: `{self.ctx.spelling.windows(expr.id, value.rank)}`",
            )
        if found.kind == names.SCALAR:
            assert isinstance(value, ir.ScalarParam)
            return ir.ScalarArg(value, ir.ScalarT(value.dtype), expr.span)
        if found.kind == names.EXTENT:
            return ir.Extent(expr.id, ir.ScalarT("index"), expr.span)
        if isinstance(value, Literal):
            return Literal(value.value, expr.span)
        if isinstance(value, ir.Const):
            return ir.Const(value.value, value.type, expr.span)
        assert isinstance(value, ir.Variable)
        return ir.Read(value, value.type, expr.span)

    # ------------------------------------------------------------------ operators

    def _unary(self, expr: ast.Unary, scope: Scope) -> Value:
        operand = self.value(expr.operand, scope)
        if isinstance(operand, Literal) and expr.op == "-":
            return Literal(-operand.value, expr.span)
        if isinstance(operand, Literal) and expr.op == "~" and operand.is_int:
            return Literal(~operand.value, expr.span)
        operand = self.materialise(operand)
        dtype = operand.type.dtype
        if expr.op == "-" and is_numeric(dtype):
            return ir.Unary("neg", operand, operand.type, expr.span)
        if expr.op == "!" and dtype == "bool":
            return ir.Unary("not", operand, operand.type, expr.span)
        if expr.op == "~" and is_int(dtype):
            return ir.Unary("bitnot", operand, operand.type, expr.span)
        wants = {"-": "a number", "!": "bool", "~": "an integer"}.get(expr.op, "?")
        help = "compare it instead, e.g. `x == 0`" if expr.op == "!" else None
        op = self.ctx.spelling.operator(expr.op)
        raise error(expr.span, f"`{op}` needs {wants}, got {shown(operand.type)}", help=help)

    def _binary(self, expr: ast.Binary, scope: Scope) -> Value:
        left = self.value(expr.left, scope)
        right = self.value(expr.right, scope)
        if expr.op == "@":
            return lower_dot(self, expr, [expr.left, expr.right], [left, right], None)
        if isinstance(left, Literal) and isinstance(right, Literal):
            folded = fold(expr, left, right)
            if folded is not None:
                return folded
        if expr.op in LOGICAL:
            for side in (left, right):
                dtype = side.describe() if isinstance(side, Literal) else side.type.dtype
                self._require(expr, dtype, dtype == "bool", "bools")
        operands = self.elementwise([expr.left, expr.right], [left, right], expr.span)
        dtype = operands[0].type.dtype
        op = expr.op
        if op in ARITHMETIC:
            self._require(expr, dtype, is_numeric(dtype), "numbers")
            result = dtype
        elif op in BITWISE:
            self._require(expr, dtype, is_int(dtype) or dtype == "bool", "integers or bools")
            result = dtype
        elif op in SHIFTS:
            self._require(expr, dtype, is_int(dtype), "integers")
            result = dtype
        elif op in COMPARISONS:
            ordered = op in ("==", "!=") or dtype != "bool"
            self._require(expr, dtype, ordered, "numbers")
            result = "bool"
        elif op in LOGICAL:
            result = "bool"
        else:
            raise error(expr.span, f"unknown operator `{op}`")
        name = {**ARITHMETIC, **BITWISE, **SHIFTS, **COMPARISONS, **LOGICAL}[op]
        type = with_dtype(operands[0].type, result)
        type = with_partial(type, any(is_partial(v) for v in operands))
        return ir.Binary(name, operands[0], operands[1], type, expr.span)

    def _require(self, expr: ast.Binary, dtype: str, ok: bool, wants: str) -> None:
        if ok:
            return
        sp = self.ctx.spelling
        help = None
        if expr.op in LOGICAL:
            help = "compare to get a bool, e.g. `x != 0`"
        elif dtype == "bool":
            words = (f"`{sp.operator(op)}`" for op in ("&&", "||", "!"))
            help = "use {}, {} or {} on bools".format(*words)
        elif expr.op in SHIFTS or expr.op in BITWISE:
            help = f"cast to an integer type first, e.g. `{sp.call('i32', describe(expr.left))}`"
        raise error(expr.span, f"`{sp.operator(expr.op)}` needs {wants}, got {dtype}", help=help)

    # ------------------------------------------------------------------ calls and tiles

    def _call(self, expr: ast.Call, scope: Scope) -> Value:
        if expr.func in ast.SCALAR_TYPES:
            return lower_cast(self, expr, scope)
        if expr.func in BUILTINS:
            return BUILTINS[expr.func](self, expr, scope)
        if expr.func in ATOMICS:
            raise value_error(expr, self.ctx.spelling)
        if expr.func in self.ctx.functions:
            result = self.inline_call(self.ctx.functions[expr.func], expr, scope)
            if result is None:
                raise error(
                    expr.span,
                    f"fn '{expr.func}' returns no value",
                    help=f"declare a result type (`-> {self.ctx.spelling.lang('f32')}`) and "
                    "`return` a value",
                )
            return result
        raise self._unknown_function(expr)

    def _unknown_function(self, expr: ast.Call) -> Exception:
        """Triton's spelling of the thing where it is one (``check/triton_names.py``), else
        did-you-mean among the builtins and the module's fns, each as the user spells it."""
        sp = self.ctx.spelling
        hint = triton_hint(expr, sp)
        if hint is not None:
            return error(expr.span, f"unknown function '{sp.lang(expr.func)}'", help=hint)
        spelled = {name: sp.lang(name) for name in (*BUILTINS, *ATOMICS, *ast.SCALAR_TYPES)}
        spelled.update({name: name for name in self.ctx.functions})
        close = difflib.get_close_matches(expr.func, list(spelled), n=1)
        return error(
            expr.span,
            f"unknown function '{sp.lang(expr.func)}'",
            help=f"did you mean '{spelled[close[0]]}'?"
            if close
            else f"declare it with {sp.fn_word()}",
        )

    @abstractmethod
    def inline_call(self, fn: ast.Function, call: ast.Call, scope: Scope) -> Value | None:
        """The value of a ``fn`` call, its body emitted in place (needs statements)."""

    def _tilector(self, expr: ast.TileCtor, scope: Scope) -> Value:
        if expr.kind != "zeros":
            raise error(
                expr.span,
                f"unknown tile constructor '{expr.kind}'",
                help="start from zeros and add: "
                f"`{self.ctx.spelling.zeros(expr.dtype.name, '...')} + v`",
            )
        dtype = expr.dtype.name
        shape = tuple(self.tile_extent(e, scope) for e in expr.shape)
        zero: int | float | bool = False if dtype == "bool" else 0.0 if is_float(dtype) else 0
        return ir.Full(zero, ir.TileT(dtype, shape), expr.span)

    def tile_extent(self, expr: ast.Expr, scope: Scope) -> int:
        extent = self.compile_time_int(expr, scope, "a tile extent")
        if extent <= 0:
            raise error(expr.span, f"a tile extent must be positive, got {extent}")
        check_extent(expr.span, "a tile extent", extent)
        return extent

    def tensor_extent(self, expr: ast.Expr, scope: Scope) -> int:
        """A tensor extent fixed at compile time: positive, and an ``i64``."""
        extent = self.compile_time_int(expr, scope, "a tensor extent")
        if extent <= 0:
            raise error(expr.span, f"a tensor extent must be positive, got {extent}")
        if extent > MAX_TENSOR_EXTENT:
            raise error(
                expr.span,
                f"a tensor extent must be at most {MAX_TENSOR_EXTENT} (an i64), got {extent}",
                help="name the extent (`N`) to take it from the array at the launch",
            )
        return extent

    def _subscript(self, expr: ast.Subscript, scope: Scope) -> Value:
        if isinstance(expr.base, ast.Name):
            found = scope.find(expr.base.id)
            if found is not None and found.kind == names.TENSOR:
                assert isinstance(found.value, ir.TensorParam)
                tensor = found.value
                indices, shape = self.tensor_indices(tensor, expr, scope)
                if shape:
                    type: ir.IRType = ir.TileT(tensor.dtype, shape, partial=True)
                else:
                    type = ir.ScalarT(tensor.dtype)
                return ir.Load(tensor, indices, type, expr.span)
        base = self.materialise(self.value(expr.base, scope))
        if not isinstance(base.type, ir.TileT):
            raise error(expr.span, f"a {shown(base.type)} scalar cannot be indexed")
        return self.reshape(base, expr)

    def tensor_indices(
        self, tensor: ir.TensorParam, expr: ast.Subscript, scope: Scope
    ) -> tuple[tuple[ir.TensorIndex, ...], tuple[int, ...]]:
        """One index item per tensor axis: points and windows; the windows give the shape."""
        if len(expr.items) != tensor.rank:
            raise error(
                expr.span,
                f"'{tensor.name}' has {tensor.rank} axes but {len(expr.items)} index items",
                help=f"give one item per axis: a point `i` or a window `{self.ctx.spelling.window()}`",
            )
        indices: list[ir.TensorIndex] = []
        shape: list[int] = []
        for item in expr.items:
            if isinstance(item, ast.Point):
                indices.append(ir.PointIndex(self.scalar_index(item.index, scope, "an index")))
            elif isinstance(item, ast.Window):
                start = self.scalar_index(item.start, scope, "a window start")
                length = self.compile_time_int(item.length, scope, "a window length")
                if length <= 0:
                    raise error(item.length.span, f"a window length must be positive, got {length}")
                check_extent(item.length.span, "a window length", length)
                indices.append(ir.WindowIndex(start, length))
                shape.append(length)
            else:
                raise error(
                    item.span,
                    "`:` and `newaxis` reshape tiles; a tensor takes points and windows",
                    help=f"load a window first: `{self.ctx.spelling.windows('t')}`",
                )
        check_tile(tuple(shape), expr.span, "this window")
        return tuple(indices), tuple(shape)

    def reshape(self, base: ir.Expr, expr: ast.Subscript) -> ir.Expr:
        """``t[:, newaxis]`` on a tile: one ``:`` per axis, each ``newaxis`` a new extent-1 axis."""
        assert isinstance(base.type, ir.TileT)
        sp = self.ctx.spelling
        full = sum(isinstance(i, ast.FullAxis) for i in expr.items)
        for item in expr.items:
            if not isinstance(item, (ast.FullAxis, ast.NewAxis)):
                raise error(
                    item.span,
                    f"a tile can only be reshaped with `:` and `{sp.newaxis}`",
                    help=f"index the tensor instead, or pick lanes with `{sp.lang('where')}`",
                )
        if full != len(base.type.shape):
            raise error(
                expr.span,
                f"a rank-{len(base.type.shape)} tile needs {len(base.type.shape)} `:` items, "
                f"got {full}",
                help="write one `:` per axis of the tile",
            )
        shape = list(base.type.shape)
        for axis, item in enumerate(expr.items):
            if isinstance(item, ast.NewAxis):
                shape.insert(axis, 1)
                type = ir.TileT(base.type.dtype, tuple(shape), base.type.partial)
                base = ir.ExpandDims(base, axis, type, expr.span)
        return base


def fold(expr: ast.Binary, left: Literal, right: Literal) -> Value | None:
    """Arithmetic on two untyped numbers, done now; None where the op needs types.

    Integers follow C (division truncates, the remainder takes the dividend's
    sign); floats follow IEEE (``1.0 / 0.0`` is inf).
    """
    a, b = left.value, right.value
    op = expr.op
    if isinstance(a, int) and isinstance(b, int):
        return _fold_ints(expr, a, b)
    a, b = float(a), float(b)
    arithmetic = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "/": lambda: _float_div(a, b),
        "%": lambda: _float_mod(a, b),
    }
    if op in arithmetic:
        return Literal(arithmetic[op](), expr.span)
    return _fold_comparison(expr, a, b)


def _fold_ints(expr: ast.Binary, a: int, b: int) -> Value | None:
    op = expr.op
    if op in ("/", "%") and b == 0:
        raise error(expr.span, "integer division by zero in a compile-time expression")
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise error(expr.span, f"a shift by {b} bits; shifts take 0 to 63")
    arithmetic = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "/": lambda: _trunc_div(a, b),
        "%": lambda: a - b * _trunc_div(a, b),
        "<<": lambda: a << b,
        ">>": lambda: a >> b,
        "&": lambda: a & b,
        "|": lambda: a | b,
        "^": lambda: a ^ b,
    }
    if op in arithmetic:
        return Literal(arithmetic[op](), expr.span)
    return _fold_comparison(expr, a, b)


def _fold_comparison(expr: ast.Binary, a: float, b: float) -> Value | None:
    compare = {
        "==": a == b,
        "!=": a != b,
        "<": a < b,
        "<=": a <= b,
        ">": a > b,
        ">=": a >= b,
    }
    if expr.op in compare:
        return ir.Const(compare[expr.op], ir.ScalarT("bool"), expr.span)
    return None


def _float_div(a: float, b: float) -> float:
    if b != 0.0:
        return a / b
    if a == 0.0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _float_mod(a: float, b: float) -> float:
    if math.isinf(a) or math.isnan(a) or math.isnan(b) or b == 0.0:
        return math.nan
    return a if math.isinf(b) else math.fmod(a, b)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q
