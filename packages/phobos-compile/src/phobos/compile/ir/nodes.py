"""The tile IR: one kernel, fully specialised for one variant.

The checker lowers a checked kernel to this form: compile-time names are
replaced by their values, ``fn`` calls are inlined, every value has a concrete
type, and broadcasting is explicit (``Splat``, ``ExpandDims``, ``Broadcast``), so
the operands of an elementwise op always have one shape.  The CPU interpreter
and the GPU code generator both consume exactly this, which is what keeps their
semantics the same.

Absent lanes: a tile value may have lanes that are absent (a window that hangs
over the end of its tensor).  ``TileT.partial`` is a static over-approximation
("may have absent lanes"); a code generator may skip masks where it is False.
Semantics, which both back ends implement:

* ``Load`` of a window: lanes outside the tensor are absent and never read.
* elementwise ops: a lane is absent where any operand's lane is absent.
* ``Reduce`` and ``Dot``: absent lanes count as the op's identity (0 for sum,
  xor_sum and dot, 1 for prod, -inf for max, +inf for min, false for any, true
  for all: ``reduction_ops.py``); a result lane is absent only when every lane it
  reduces is absent.
* ``Fill``: absent lanes take a value; the result has none absent.
* ``Store``: absent lanes (of the value, or outside the tensor) are skipped.

Every node has a ``span`` into the user's file for diagnostics and ``#line``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from phobos.compile.span import NO_SPAN, Span


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


# --------------------------------------------------------------------------- types

FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
SIGNED_DTYPES = ("i8", "i16", "i32", "i64")
UNSIGNED_DTYPES = ("u8", "u16", "u32", "u64")
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
# ``index`` is a signed integer whose width is the contract's index width (32 or 64).
ALL_DTYPES = ("bool", *INT_DTYPES, *FLOAT_DTYPES, "index")

DTYPE_BYTES = {
    "bool": 1,
    "i8": 1,
    "u8": 1,
    "i16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "i32": 4,
    "u32": 4,
    "f32": 4,
    "i64": 8,
    "u64": 8,
    "f64": 8,
}


@dataclass(frozen=True)
class ScalarT:
    """A block-uniform scalar: every thread of the block holds the same value."""

    dtype: str

    def __str__(self) -> str:
        return self.dtype


@dataclass(frozen=True)
class TileT:
    """A tile of a compile-time shape; ``partial``: may have absent lanes."""

    dtype: str
    shape: tuple[int, ...]
    partial: bool = False

    def __str__(self) -> str:
        dims = ", ".join(map(str, self.shape))
        return f"tile<{self.dtype}>[{dims}]" + ("?" if self.partial else "")


IRType = Union[ScalarT, TileT]

# --------------------------------------------------------------------------- kernel interface


@dataclass(frozen=True)
class TensorParam:
    """A ``tensor<T>[D0, ...]`` parameter; each dim is an extent name or a literal."""

    name: str
    dtype: str
    dims: tuple[str | int, ...]
    span: Span = _span()

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: str
    span: Span = _span()


Param = Union[TensorParam, ScalarParam]

# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Variable:
    """A ``let``/``var``/loop variable; ``name`` is unique within the kernel."""

    name: str
    type: IRType
    mutable: bool = False
    span: Span = _span()


@dataclass(frozen=True)
class Const:
    """A scalar constant (a literal or a compile-time name's value)."""

    value: int | float | bool
    type: ScalarT
    span: Span = _span()


@dataclass(frozen=True)
class ScalarArg:
    """The value of a scalar kernel parameter."""

    param: ScalarParam
    type: ScalarT
    span: Span = _span()


@dataclass(frozen=True)
class Extent:
    """The run-time value of a named extent (``N``), of type ``index``."""

    name: str
    type: ScalarT
    span: Span = _span()


@dataclass(frozen=True)
class CtxValue:
    """``ctx.block.x`` etc., of type ``index``."""

    group: str
    axis: str
    type: ScalarT
    span: Span = _span()


@dataclass(frozen=True)
class Read:
    """The current value of a variable."""

    var: Variable
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class PointIndex:
    """A scalar index on one tensor axis (the axis is dropped from the result)."""

    index: Expr


@dataclass(frozen=True)
class WindowIndex:
    """``start :+ length`` on one tensor axis (``length`` compile-time)."""

    start: Expr
    length: int


TensorIndex = Union[PointIndex, WindowIndex]


@dataclass(frozen=True)
class Load:
    """Read a window (or one element) of a tensor; a tile unless every index is a point."""

    tensor: TensorParam
    indices: tuple[TensorIndex, ...]
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class Unary:
    """``op``: "neg", "not" (logical), "bitnot"."""

    op: str
    operand: Expr
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class Binary:
    """Elementwise binary op on operands of one type (both scalar, or both tiles of one shape).

    ``op``: "add", "sub", "mul", "div", "mod", "and", "or", "xor", "shl", "shr",
    "eq", "ne", "lt", "le", "gt", "ge", "land", "lor", "max", "min".
    Integer "div" truncates toward zero and "mod" takes the dividend's sign.
    """

    op: str
    left: Expr
    right: Expr
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class Math:
    """Elementwise math function ``fn`` ("exp", "pow", "fma", ...; docs/language.md section 5)
    of one or more operands of one shape, or all scalars.  Their types may differ: "rand",
    "randn" and "randint" take a u64 seed (splat to the offsets' shape) and integer offsets."""

    fn: str
    operands: tuple[Expr, ...]
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class Select:
    """``where(cond, a, b)``: operands of one shape (or all scalars)."""

    cond: Expr
    if_true: Expr
    if_false: Expr
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class Cast:
    operand: Expr
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class Splat:
    """A block-uniform scalar made a tile of ``type.shape`` (no lane absent)."""

    operand: Expr
    type: TileT
    span: Span = _span()


@dataclass(frozen=True)
class ExpandDims:
    """Insert an axis of extent 1 at ``axis`` (``t[:, newaxis]``)."""

    operand: Expr
    axis: int
    type: TileT
    span: Span = _span()


@dataclass(frozen=True)
class Broadcast:
    """Repeat extent-1 axes of a tile to ``type.shape`` (same rank)."""

    operand: Expr
    type: TileT
    span: Span = _span()


@dataclass(frozen=True)
class Reduce:
    """``op`` (``reduction_ops.REDUCTIONS``) along ``axis``; a 1-D tile reduces to a scalar."""

    op: str
    operand: Expr
    axis: int
    type: IRType
    span: Span = _span()


@dataclass(frozen=True)
class Dot:
    """``acc + a @ b`` for a [M, K] and b [K, N]; ``acc`` is [M, N] (zeros when not given)."""

    a: Expr
    b: Expr
    acc: Expr
    type: TileT
    span: Span = _span()


@dataclass(frozen=True)
class Transpose:
    operand: Expr
    type: TileT
    span: Span = _span()


@dataclass(frozen=True)
class Iota:
    """``arange(n)``: the tile [0, 1, ..., n-1]."""

    type: TileT
    span: Span = _span()


@dataclass(frozen=True)
class Full:
    """A tile whose lanes are all ``value`` (``zeros<f32>[BM, BN]`` is Full 0)."""

    value: int | float | bool
    type: TileT
    span: Span = _span()


@dataclass(frozen=True)
class Fill:
    """The operand with its absent lanes set to ``value``: nothing absent after."""

    operand: Expr
    value: Expr
    type: TileT
    span: Span = _span()


Expr = Union[
    Const,
    ScalarArg,
    Extent,
    CtxValue,
    Read,
    Load,
    Unary,
    Binary,
    Math,
    Select,
    Cast,
    Splat,
    ExpandDims,
    Broadcast,
    Reduce,
    Dot,
    Transpose,
    Iota,
    Full,
    Fill,
]

# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Define:
    """First binding of a variable."""

    var: Variable
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Assign:
    """A new value for a mutable variable (same type as its definition)."""

    var: Variable
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Store:
    """Write a tile (or scalar) into a window of a tensor; absent lanes are skipped."""

    tensor: TensorParam
    indices: tuple[TensorIndex, ...]
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class AtomicAdd:
    """``atomic_add(t[...], v)``: add a tile (or scalar) into a window of a tensor.

    Each element's update is atomic, so several blocks may add into one element
    (not a race).  ``value`` has the window's shape and the tensor's type; absent
    lanes (of the value, or outside the tensor) are skipped.
    """

    tensor: TensorParam
    indices: tuple[TensorIndex, ...]
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class AtomicMax:
    """``atomic_max(t[...], v)``: each element becomes the larger of itself and the value.

    Like ``AtomicAdd``: a window or one element, absent lanes skipped.  The
    larger is ``Binary`` "max"'s: NaN if either is NaN.
    """

    tensor: TensorParam
    indices: tuple[TensorIndex, ...]
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class AtomicXchg:
    """``atomic_xchg(t[i], v)``: one element (point indices only) set to ``value``, atomically.

    ``result``, when given, is a new variable the statement defines as the old
    value; nothing is written outside the tensor, where the old value reads 0.
    """

    tensor: TensorParam
    indices: tuple[PointIndex, ...]
    value: Expr
    span: Span = _span()
    result: Variable | None = None


@dataclass(frozen=True)
class AtomicCas:
    """``atomic_cas(t[i], compare, value)``: one element set to ``value`` if it equals ``compare``.

    Compare and swap, atomically, on one element (point indices only; integer
    types).  ``result``, when given, is a new variable the statement defines as
    the old value, so the swap happened exactly when it equals ``compare``.
    """

    tensor: TensorParam
    indices: tuple[PointIndex, ...]
    compare: Expr
    value: Expr
    span: Span = _span()
    result: Variable | None = None


# The atomic read-modify-write statements; several blocks may update one element.
Atomic = Union[AtomicAdd, AtomicMax, AtomicXchg, AtomicCas]


@dataclass(frozen=True)
class Trace:
    """``trace(v, when=c)``: print a value, with the user's file:line and the block.

    ``name`` is the value's source text (``trace(a, b)`` is one Trace per
    value).  Only blocks where ``when`` (a block-uniform bool) holds print; None
    means every block.  Absent lanes of a tile print as ``_`` (the interpreter)
    or not at all (the GPU).
    """

    value: Expr
    name: str
    when: Expr | None = None
    span: Span = _span()


@dataclass(frozen=True)
class DeviceAssert:
    """``assert(c, "message")``: stop the launch with an error where ``c`` is false.

    ``cond`` is a bool scalar or tile; absent lanes of a tile are not checked.
    """

    cond: Expr
    message: str
    span: Span = _span()


@dataclass(frozen=True)
class For:
    """``var`` takes start, start+step, ... while below ``stop`` (step > 0, block-uniform)."""

    var: Variable
    start: Expr
    stop: Expr
    step: Expr
    body: tuple[Stmt, ...]
    span: Span = _span()


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()
    span: Span = _span()


@dataclass(frozen=True)
class While:
    cond: Expr
    body: tuple[Stmt, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Return:
    """Block-uniform early exit of the kernel."""

    span: Span = _span()


Stmt = Union[
    Define,
    Assign,
    Store,
    AtomicAdd,
    AtomicMax,
    AtomicXchg,
    AtomicCas,
    Trace,
    DeviceAssert,
    For,
    If,
    While,
    Return,
]


@dataclass(frozen=True)
class Kernel:
    """One variant of one kernel: its interface, compile-time values and body."""

    name: str
    params: tuple[Param, ...]
    values: tuple[tuple[str, int], ...]
    body: tuple[Stmt, ...]
    span: Span = _span()

    @property
    def tensors(self) -> tuple[TensorParam, ...]:
        return tuple(p for p in self.params if isinstance(p, TensorParam))

    @property
    def extents(self) -> tuple[str, ...]:
        """The named extents, in order of first appearance."""
        seen: list[str] = []
        for t in self.tensors:
            for d in t.dims:
                if isinstance(d, str) and d not in seen:
                    seen.append(d)
        return tuple(seen)
