"""The Phobos syntax tree: plain, frozen, printable values.

Every node carries a ``span`` naming the user's file (the ``.ph`` file, or the
Python file for a kernel spelled in Python).  Spans never take part in equality,
so ``parse(print(tree)) == tree`` compares meaning and comments, not positions.

Comments are kept as trivia so that the printer and ph2py can carry them over:
``leading`` comments stand on their own lines before a statement, parameter or
item; ``trailing`` is a comment at the end of the node's last line.  A block's
``end_comments`` stand before its closing brace, and a comment after the closing
brace (``} // done``) is the block's last end comment, since Python has no line
that closes a block: a construct with a block (For, If, While, Function, Kernel)
has no ``trailing`` comment in a parsed tree.  A module's ``end_comments`` close
the file.  Comment text excludes the ``//`` marker and its first space.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from phobos.compile.span import NO_SPAN, Span

# Scalar element types, in the order the reference lists them.
SCALAR_TYPES = (
    "bool",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "index",
)


def _span() -> Span:
    return field(default=NO_SPAN, compare=False, repr=False)


def _trivia() -> tuple[str, ...]:
    return field(default=())


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class ScalarType:
    """``f32``, ``i64``, ``index``, ...: one of ``SCALAR_TYPES``."""

    name: str
    span: Span = _span()


@dataclass(frozen=True)
class TensorType:
    """``tensor<f32>[N, K]``: global memory; each dim a named extent or a literal."""

    dtype: ScalarType
    dims: tuple[Expr, ...]
    span: Span = _span()


Type = Union[ScalarType, TensorType]

# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Name:
    id: str
    span: Span = _span()


@dataclass(frozen=True)
class IntLit:
    """An integer literal; ``suffix`` is a scalar type name for ``7i64``, else None."""

    value: int
    suffix: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class FloatLit:
    """A float literal; ``suffix`` is a scalar type name for ``2.5f16``, else None."""

    value: float
    suffix: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class BoolLit:
    value: bool
    span: Span = _span()


@dataclass(frozen=True)
class StrLit:
    """``"text"``: a message, the only place a string stands (``assert(c, "message")``)."""

    value: str
    span: Span = _span()


@dataclass(frozen=True)
class Ctx:
    """``ctx.block.x`` (``group`` is "block" or "grid"; ``axis`` is "x", "y" or "z")."""

    group: str
    axis: str
    span: Span = _span()


@dataclass(frozen=True)
class Unary:
    """``op`` is one of ``-``, ``!`` (logical not), ``~`` (bitwise not)."""

    op: str
    operand: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Binary:
    """``op`` is one of BINARY_PRECEDENCE's keys."""

    op: str
    left: Expr
    right: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Keyword:
    """``axis=1`` in a call."""

    name: str
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Call:
    """A call of a builtin, a cast (``f16(t)``) or a ``fn``."""

    func: str
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...] = ()
    span: Span = _span()


@dataclass(frozen=True)
class TileCtor:
    """``zeros<f32>[BM, BN]``: a new tile of a compile-time shape."""

    kind: str
    dtype: ScalarType
    shape: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True)
class Point:
    """A scalar index on one axis: ``t[i]``."""

    index: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Window:
    """``a :+ L``: the L elements from a (L compile-time)."""

    start: Expr
    length: Expr
    span: Span = _span()


@dataclass(frozen=True)
class FullAxis:
    """``:`` on a tile: the whole axis."""

    span: Span = _span()


@dataclass(frozen=True)
class NewAxis:
    """``newaxis`` on a tile: a new axis of extent 1, for broadcasting."""

    span: Span = _span()


IndexItem = Union[Point, Window, FullAxis, NewAxis]


@dataclass(frozen=True)
class Subscript:
    """``t[...]``: a tensor access (load, or store as a target) or a tile reshape."""

    base: Expr
    items: tuple[IndexItem, ...]
    span: Span = _span()


Expr = Union[Name, IntLit, FloatLit, BoolLit, StrLit, Ctx, Unary, Binary, Call, TileCtor, Subscript]

# Binding strength of the binary operators (higher binds tighter); all are left-associative.
BINARY_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    "<=": 7,
    ">": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
    "@": 10,
}
UNARY_PRECEDENCE = 11

# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Let:
    """``let x = e``: binds once."""

    name: str
    value: Expr
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Var:
    """``var x = e``: a mutable binding."""

    name: str
    value: Expr
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Assign:
    """``x = e``, ``t[a :+ L] = e``, or with ``op`` set, ``x += e`` (op "+")."""

    target: Expr
    value: Expr
    op: str | None = None
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class ExprStmt:
    """An expression evaluated for its effect (a call of an atomic, say)."""

    value: Expr
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Block:
    body: tuple[Stmt, ...]
    end_comments: tuple[str, ...] = _trivia()
    span: Span = _span()


@dataclass(frozen=True)
class For:
    """``for k in a .. b step s { }``: k takes a, a+s, ... while below b."""

    var: str
    start: Expr
    stop: Expr
    step: Expr | None
    body: Block
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class If:
    """``if c { } else { }``; ``else if`` is an ``orelse`` block holding one If."""

    cond: Expr
    then: Block
    orelse: Block | None = None
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class While:
    cond: Expr
    body: Block
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Return:
    value: Expr | None = None
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


Stmt = Union[Let, Var, Assign, ExprStmt, For, If, While, Return]

# --------------------------------------------------------------------------- items


@dataclass(frozen=True)
class Param:
    name: str
    type: Type
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class PowerRange:
    """``[a, b]`` in ``@autotune``: the powers of two from a to b inclusive."""

    low: Expr
    high: Expr
    span: Span = _span()


@dataclass(frozen=True)
class ValueSet:
    """``{64, 128, 256}`` in ``@autotune``: exactly these values, in this order."""

    values: tuple[Expr, ...]
    span: Span = _span()


@dataclass(frozen=True)
class TuneParam:
    """``BLOCK in [16, 8192]`` in ``@autotune(...)``."""

    name: str
    space: PowerRange | ValueSet
    span: Span = _span()


@dataclass(frozen=True)
class Const:
    """``const C = 4`` at module level."""

    name: str
    value: Expr
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Function:
    """``fn g(a: f32) -> f32 { }``: inlined at each call.

    A scalar parameter type names the element type only; a call may pass a tile
    of that element type, and the body is checked at the call's shapes.
    """

    name: str
    params: tuple[Param, ...]
    result: ScalarType | None
    body: Block
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


@dataclass(frozen=True)
class Kernel:
    """``@autotune(...) kernel f(...) { }``: runs once per block of the grid."""

    name: str
    params: tuple[Param, ...]
    body: Block
    autotune: tuple[TuneParam, ...] = ()
    leading: tuple[str, ...] = _trivia()
    trailing: str | None = None
    span: Span = _span()


Item = Union[Const, Function, Kernel]


@dataclass(frozen=True)
class Module:
    """A program: its items in order.

    ``python_alias`` says which spelling it came in, so that help texts show code the way
    the user writes it: None for Phobos text; for a Python module, the name it binds
    ``phobos.lang`` to (``"ph"``), or ``""`` when it imports the names themselves.
    ``host_constants`` are the Python module's plain ``NAME = number`` assignments, which
    a kernel does not see (only ``NAME: ph.const = number`` is a Phobos constant), as
    (name, value text), for the undefined-name error.  Like a span, neither takes part in
    equality.
    """

    items: tuple[Item, ...]
    end_comments: tuple[str, ...] = _trivia()
    span: Span = _span()
    python_alias: str | None = field(default=None, compare=False)
    host_constants: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def kernel(self, name: str) -> Kernel:
        for item in self.items:
            if isinstance(item, Kernel) and item.name == name:
                return item
        raise KeyError(name)

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        return tuple(i for i in self.items if isinstance(i, Kernel))
