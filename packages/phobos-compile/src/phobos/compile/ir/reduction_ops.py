"""The reductions along an axis (``Reduce.op``): one table that every back end reads.

For each reduction:

* ``identity``: what an absent lane counts as, and so what a row with no present lane
  gives: ``zero``, ``one``, the type's ``lowest`` value (-inf for floats) or its
  ``highest`` (+inf).  For ``bool``, zero and lowest are false, one and highest true.
* ``accepts``: the operand kinds the IR node takes (``bool``, ``int``, ``float``).
  ``any`` and ``all`` take bools; the checker makes a bool of numbers with ``!= 0``
  (``truth``), as numpy's ``any`` and ``all`` read them.
* ``widens``: f16 and bf16 accumulate in f32, i8 and i16 in i32, u8 and u16 in u32
  (``WIDER``), and the total is rounded once to the operand's type.  Integers wrap
  either way, so only the floats' rounding sees it.
* ``numpy``: the ufunc that combines two partials (the interpreter, the GPU-IR
  executor); ``c``: the C++ that does (the emitter, with ``{a}`` and ``{b}``).

The GPU back end also uses ``any`` for itself: whether some lane of a row is present.
"""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.ir.nodes import DTYPE_BYTES, FLOAT_DTYPES, INT_DTYPES

BOOL, INT, FLOAT = "bool", "int", "float"
NUMBERS = frozenset({INT, FLOAT})


@dataclass(frozen=True)
class Reduction:
    name: str
    identity: str  # "zero", "one", "lowest" or "highest"
    accepts: frozenset[str]
    widens: bool
    numpy: str
    c: str
    truth: bool = False  # numbers are accepted as ``!= 0`` (made bool by the checker)


REDUCTIONS: dict[str, Reduction] = {
    r.name: r
    for r in (
        Reduction("sum", "zero", NUMBERS, True, "add", "({a} + {b})"),
        Reduction("prod", "one", NUMBERS, True, "multiply", "({a} * {b})"),
        Reduction("max", "lowest", NUMBERS, False, "maximum", "phobos::max({a}, {b})"),
        Reduction("min", "highest", NUMBERS, False, "minimum", "phobos::min({a}, {b})"),
        Reduction("any", "zero", frozenset({BOOL}), False, "logical_or", "({a} || {b})", True),
        Reduction("all", "one", frozenset({BOOL}), False, "logical_and", "({a} && {b})", True),
        Reduction("xor_sum", "zero", frozenset({INT}), False, "bitwise_xor", "({a} ^ {b})"),
    )
}

# The type a widening reduction accumulates in (types not listed accumulate in themselves).
WIDER = {"f16": "f32", "bf16": "f32", "i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32"}


def kind(dtype: str) -> str:
    """``bool``, ``int`` (``index`` too) or ``float``."""
    if dtype == "bool":
        return BOOL
    if dtype in FLOAT_DTYPES:
        return FLOAT
    assert dtype in INT_DTYPES or dtype == "index", dtype
    return INT


def accumulator(op: str, dtype: str) -> str:
    """The type ``op`` of ``dtype`` operands accumulates in."""
    return WIDER.get(dtype, dtype) if REDUCTIONS[op].widens else dtype


def identity(op: str, dtype: str, index_bits: int = 64) -> bool | int | float:
    """The value an absent lane counts as, as a Python number of ``dtype``'s range
    (``index`` is ``index_bits`` wide: the interpreter computes it in 64 bits)."""
    which = REDUCTIONS[op].identity
    if dtype == "bool":
        return which in ("one", "highest")
    if which in ("zero", "one"):
        value = int(which == "one")
        return float(value) if dtype in FLOAT_DTYPES else value
    high = which == "highest"
    if dtype in FLOAT_DTYPES:
        return float("inf") if high else float("-inf")
    bits = index_bits if dtype == "index" else 8 * DTYPE_BYTES[dtype]
    if dtype.startswith("u"):
        return (1 << bits) - 1 if high else 0
    return (1 << (bits - 1)) - 1 if high else -(1 << (bits - 1))


def identity_is_zero(op: str) -> bool:
    """Every type's identity of ``op`` is zero (a load's zero absent lanes need no mask)."""
    return REDUCTIONS[op].identity == "zero"


def combine_c(op: str, a: str, b: str) -> str:
    """The C++ expression that combines ``a`` and ``b``."""
    return REDUCTIONS[op].c.format(a=a, b=b)
