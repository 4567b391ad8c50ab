"""Element types, untyped literals and the rules for mixing them.

A literal without a suffix (and a compile-time name's value) has no type of its
own: it takes the type of the operand it meets, so ``x * 2`` keeps ``x``'s type.
Two typed operands must agree, except that ``index`` absorbs ``i32`` and ``i64``
(indices mix freely with ordinary integers).  Everything else needs a cast the
user writes, and the error names it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from phobos.compile.check.spelling import Spelling
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span

INT_RANGES = {
    "i8": (-(2**7), 2**7 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i64": (-(2**63), 2**63 - 1),
    # ``index`` may be 32 bits wide, so a literal must fit in 32 bits to become one.
    "index": (-(2**31), 2**31 - 1),
    "u8": (0, 2**8 - 1),
    "u16": (0, 2**16 - 1),
    "u32": (0, 2**32 - 1),
    "u64": (0, 2**64 - 1),
}
FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38}
INDEX_PARTNERS = ("i32", "i64")


def is_int(dtype: str) -> bool:
    return dtype in ir.INT_DTYPES or dtype == "index"


def is_float(dtype: str) -> bool:
    return dtype in ir.FLOAT_DTYPES


def is_numeric(dtype: str) -> bool:
    return is_int(dtype) or is_float(dtype)


@dataclass(frozen=True)
class Literal:
    """An untyped number: a literal without suffix, ``inf``, a const or an autotune value."""

    value: int | float
    span: Span

    @property
    def is_int(self) -> bool:
        return isinstance(self.value, int)

    @property
    def default_dtype(self) -> str:
        return "i32" if self.is_int else "f32"

    def describe(self) -> str:
        return "integer literal" if self.is_int else "float literal"


# What lowering an expression gives: a typed IR value, or a literal still open.
Value = Union[ir.Expr, Literal]


def literal_fits(lit: Literal, dtype: str) -> bool:
    """Whether ``lit`` can take ``dtype`` at all (an int literal can become a float)."""
    if dtype == "bool":
        return False
    return is_float(dtype) or lit.is_int


def make_const(lit: Literal, dtype: str, spelling: Spelling, span: Span | None = None) -> ir.Const:
    """The literal as a constant of ``dtype``; an error (spelled for the user) if out of range."""
    where = span or lit.span
    if is_int(dtype):
        low, high = INT_RANGES[dtype]
        if not low <= lit.value <= high:
            raise error(
                where,
                f"the literal {lit.value} is out of range for {dtype} ({low} to {high})",
                help=f"write a wider type's literal, e.g. `{spelling.typed_literal(lit.value, 'i64')}`, "
                "or change the operand's type",
            )
        return ir.Const(int(lit.value), ir.ScalarT(dtype), where)
    value = float(lit.value)
    limit = FLOAT_MAX.get(dtype)
    if limit is not None and math.isfinite(value) and abs(value) > limit:
        raise error(
            where,
            f"the literal {lit.value} is out of range for {dtype} (largest finite {limit:g})",
            help=f"use a wider float type such as {spelling.lang('f32')} or {spelling.lang('f64')}, "
            f"or `{spelling.lang('inf')}`",
        )
    return ir.Const(value, ir.ScalarT(dtype), where)


def common_dtype(a: str, b: str) -> str | None:
    """The type two typed operands share, or None when the user must cast."""
    if a == b:
        return a
    if {a, b} <= {"index", *INDEX_PARTNERS} and "index" in (a, b):
        return "index"
    return None


def cast_target(a: str, b: str) -> str:
    """Which of two mismatched types the help suggests casting to: the wider kind."""

    def rank(dtype: str) -> tuple[int, int]:
        kind = 2 if is_float(dtype) else 1 if is_int(dtype) else 0
        return kind, ir.DTYPE_BYTES.get(dtype, 8)

    return a if rank(a) >= rank(b) else b
