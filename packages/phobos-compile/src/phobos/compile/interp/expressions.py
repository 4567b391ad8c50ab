"""Expressions compiled once per launch into Python closures over numpy.

Compiling the tree to closures up front keeps the per-block cost to a few
function calls per node; within a block, every tile operation is one numpy call
on the whole tile.  A node's type says whether it makes a scalar or a tile, so
each closure is specialised for that.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from phobos.compile.interp import access, elementwise, reductions
from phobos.compile.interp.binding import Launch
from phobos.compile.interp.dtypes import compute_dtype, round_to_bf16
from phobos.compile.interp.frame import Code, Frame
from phobos.compile.interp.races import RaceTracker
from phobos.compile.interp.tiles import Tile, both_valid
from phobos.compile.ir import nodes as ir

_AXES = {"x": 0, "y": 1, "z": 2}


def constant(value: int | float | bool, dtype: str) -> np.generic:
    """A Phobos constant as the numpy scalar the interpreter computes with."""
    typed = compute_dtype(dtype).type(value)
    return round_to_bf16(typed) if dtype == "bf16" else typed


class ExprCompiler:
    """Compiles expressions of one kernel for one launch (its arguments are constants here)."""

    def __init__(self, launch: Launch, tracker: RaceTracker | None) -> None:
        self.launch = launch
        self.tracker = tracker
        self._methods: dict[type, Callable[[object], Code]] = {
            ir.Const: self._const,
            ir.ScalarArg: self._scalar_arg,
            ir.Extent: self._extent,
            ir.CtxValue: self._ctx,
            ir.Read: self._read,
            ir.Load: self._load,
            ir.Unary: self._unary,
            ir.Binary: self._binary,
            ir.Math: self._math,
            ir.Select: self._select,
            ir.Cast: self._cast,
            ir.Splat: self._splat,
            ir.ExpandDims: self._expand_dims,
            ir.Broadcast: self._broadcast,
            ir.Reduce: self._reduce,
            ir.Dot: self._dot,
            ir.Transpose: self._transpose,
            ir.Iota: self._iota,
            ir.Full: self._full,
            ir.Fill: self._fill,
        }

    def __call__(self, node: ir.Expr) -> Code:
        code = self._methods[type(node)](node)
        if node.type.dtype == "bf16" and isinstance(node, (ir.Binary, ir.Math, ir.Cast)):
            return _rounded_to_bf16(code)
        return code

    # ----------------------------------------------------------------- leaves

    def _const(self, node: ir.Const) -> Code:
        value = constant(node.value, node.type.dtype)
        return lambda frame: value

    def _scalar_arg(self, node: ir.ScalarArg) -> Code:
        value = self.launch.scalars[node.param.name]
        return lambda frame: value

    def _extent(self, node: ir.Extent) -> Code:
        value = compute_dtype(node.type.dtype).type(self.launch.extents[node.name])
        return lambda frame: value

    def _ctx(self, node: ir.CtxValue) -> Code:
        axis = _AXES[node.axis]
        if node.group == "block":
            return lambda frame: frame.block[axis]
        value = compute_dtype(node.type.dtype).type(self.launch.grid[axis])
        return lambda frame: value

    def _read(self, node: ir.Read) -> Code:
        name = node.var.name
        return lambda frame: frame.variables[name]

    def _load(self, node: ir.Load) -> Code:
        return access.compile_load(node, self, self.launch, self.tracker)

    def _iota(self, node: ir.Iota) -> Code:
        (length,) = node.type.shape
        tile = Tile(np.arange(length, dtype=compute_dtype(node.type.dtype)))
        return lambda frame: tile

    def _full(self, node: ir.Full) -> Code:
        value = constant(node.value, node.type.dtype)
        tile = Tile(np.full(node.type.shape, value, dtype=compute_dtype(node.type.dtype)))
        return lambda frame: tile

    # ----------------------------------------------------------------- elementwise

    def _unary(self, node: ir.Unary) -> Code:
        return _elementwise(elementwise.UNARY[node.op], [self(node.operand)], node.type)

    def _binary(self, node: ir.Binary) -> Code:
        fn = elementwise.binary(node.op, compute_dtype(node.left.type.dtype))
        return _elementwise(fn, [self(node.left), self(node.right)], node.type)

    def _math(self, node: ir.Math) -> Code:
        operands = [self(o) for o in node.operands]
        return _elementwise(elementwise.MATH[node.fn], operands, node.type)

    def _select(self, node: ir.Select) -> Code:
        operands = [self(node.cond), self(node.if_true), self(node.if_false)]
        return _elementwise(np.where, operands, node.type)

    def _cast(self, node: ir.Cast) -> Code:
        convert = elementwise.cast(
            compute_dtype(node.type.dtype), compute_dtype(node.operand.type.dtype)
        )
        return _elementwise(convert, [self(node.operand)], node.type)

    # ----------------------------------------------------------------- shapes

    def _splat(self, node: ir.Splat) -> Code:
        operand, shape = self(node.operand), node.type.shape
        return lambda frame: Tile(np.broadcast_to(operand(frame), shape))

    def _expand_dims(self, node: ir.ExpandDims) -> Code:
        operand, axis = self(node.operand), node.axis
        return _reshaping(operand, lambda a: np.expand_dims(a, axis))

    def _broadcast(self, node: ir.Broadcast) -> Code:
        operand, shape = self(node.operand), node.type.shape
        return _reshaping(operand, lambda a: np.broadcast_to(a, shape))

    def _transpose(self, node: ir.Transpose) -> Code:
        return _reshaping(self(node.operand), np.transpose)

    # ----------------------------------------------------------------- combining lanes

    def _reduce(self, node: ir.Reduce) -> Code:
        operand, op, axis = self(node.operand), node.op, node.axis
        operand_dtype = node.operand.type.dtype
        result = compute_dtype(node.type.dtype)
        return lambda frame: reductions.reduce(op, operand(frame), axis, operand_dtype, result)

    def _dot(self, node: ir.Dot) -> Code:
        a, b, acc, dtype = self(node.a), self(node.b), self(node.acc), node.type.dtype
        return lambda frame: reductions.dot(a(frame), b(frame), acc(frame), dtype)

    def _fill(self, node: ir.Fill) -> Code:
        operand, value = self(node.operand), self(node.value)
        dtype = compute_dtype(node.type.dtype)

        def fill(frame: Frame) -> Tile:
            tile = operand(frame)
            if tile.valid is None:
                return tile
            replacement = value(frame)
            if isinstance(replacement, Tile):
                replacement = replacement.values
            return Tile(np.where(tile.valid, tile.values, replacement).astype(dtype, copy=False))

        return fill


def _elementwise(fn: Callable, operands: list[Code], type_: ir.IRType) -> Code:
    """Apply ``fn`` lane by lane; on tiles a lane is absent where any operand's is."""
    if isinstance(type_, ir.ScalarT):
        if len(operands) == 1:
            (x,) = operands
            return lambda frame: fn(x(frame))
        if len(operands) == 2:
            x, y = operands
            return lambda frame: fn(x(frame), y(frame))
        return lambda frame: fn(*(o(frame) for o in operands))[()]

    if len(operands) == 1:
        (x,) = operands

        def apply_one(frame: Frame) -> Tile:
            tile = x(frame)
            return Tile(fn(tile.values), tile.valid)

        return apply_one
    if len(operands) == 2:
        x, y = operands

        def apply_two(frame: Frame) -> Tile:
            a, b = x(frame), y(frame)
            return Tile(fn(a.values, b.values), both_valid(a.valid, b.valid))

        return apply_two

    def apply(frame: Frame) -> Tile:
        tiles = [o(frame) for o in operands]
        valid = None
        for tile in tiles:
            valid = both_valid(valid, tile.valid)
        return Tile(fn(*(t.values for t in tiles)), valid)

    return apply


def _reshaping(operand: Code, reshape: Callable[[np.ndarray], np.ndarray]) -> Code:
    """Move lanes (and their presence) around without changing them."""

    def apply(frame: Frame) -> Tile:
        tile = operand(frame)
        valid = None if tile.valid is None else reshape(tile.valid)
        return Tile(reshape(tile.values), valid)

    return apply


def _rounded_to_bf16(code: Code) -> Code:
    def rounded(frame: Frame):
        value = code(frame)
        if isinstance(value, Tile):
            return Tile(round_to_bf16(value.values), value.valid)
        return round_to_bf16(value)

    return rounded
