"""Help texts show code in the kernel's own spelling: Phobos text for .ph, Python for @ph.kernel.

Each case is one mistake written both ways; the checker's help must suggest the
fix as that spelling writes it (``f32(x)`` in a .ph file, ``ph.f32(x)`` in Python).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import pytest

from phobos.compile.check import check_module
from phobos.compile.diagnostics import Diagnostic, PhobosError
from phobos.compile.syntax import ast
from phobos.compile.syntax.parser import parse
from phobos.frontend import translate_source

PH_HEADER = """\
const C = 4
fn g(b: f32) -> f32 {
    return b
}
fn nothing(b: f32) {
}
@autotune(B in [16, 64])
kernel k(x: tensor<f32>[N], h: tensor<f16>[N], m: tensor<f32>[N, N], lock: tensor<i32>[N], a: f32, i: i32) {
"""

PY_HEADER = """\
import phobos.lang as ph

C: ph.const = 4


@ph.func
def g(b: ph.f32) -> ph.f32:
    return b


@ph.func
def nothing(b: ph.f32):
    pass


@ph.kernel
@ph.autotune(B=[16, 64])
def k(
    x: ph.tensor[ph.f32][N],
    h: ph.tensor[ph.f16][N],
    m: ph.tensor[ph.f32][N, N],
    lock: ph.tensor[ph.i32][N],
    a: ph.f32,
    i: ph.i32,
):
"""


@dataclass(frozen=True)
class Case:
    """One mistake as a .ph kernel body and a Python one, and the help each must get."""

    name: str
    ph: str
    py: str
    ph_help: str
    py_help: str
    items_ph: str = ""  # extra items before the kernel
    items_py: str = ""


def ph_error(case: Case) -> Diagnostic:
    text = case.items_ph + PH_HEADER + textwrap.indent(case.ph, "    ") + "\n}\n"
    return first_error(parse(text, "k.ph"))


def py_error(case: Case) -> Diagnostic:
    header = PY_HEADER.replace("@ph.kernel\n", case.items_py + "@ph.kernel\n")
    text = header + textwrap.indent(case.py, "    ") + "\n"
    return first_error(translate_source(text, "/work/spelled/k.py").module)


def first_error(module: ast.Module) -> Diagnostic:
    with pytest.raises(PhobosError) as caught:
        check_module(module)
    return caught.value.diagnostics[0]


BAD_FN_PH = "fn bad(b: f32) {{\n    {}\n}}\n"
BAD_FN_PY = "@ph.func\ndef bad(b: ph.f32){}:\n    {}\n\n\n"

CASES = [
    # literals and types
    Case(
        "int literal out of range",
        "let v = i + 3000000000",
        "v: ph.let = i + 3000000000",
        "write a wider type's literal, e.g. `3000000000i64`, or change the operand's type",
        "write a wider type's literal, e.g. `ph.i64(3000000000)`, or change the operand's type",
    ),
    Case(
        "float literal out of range",
        "let v = f16(a) + 1e10",
        "v: ph.let = ph.f16(a) + 1e10",
        "use a wider float type such as f32 or f64, or `inf`",
        "use a wider float type such as ph.f32 or ph.f64, or `ph.inf`",
    ),
    Case(
        "mismatched types",
        "let v = a + f16(a)",
        "v: ph.let = a + ph.f16(a)",
        "convert one side explicitly, e.g. `f32(f16(a))`",
        "convert one side explicitly, e.g. `ph.f32(ph.f16(a))`",
    ),
    Case(
        "float literal with an integer",
        "let v = i + 0.5",
        "v: ph.let = i + 0.5",
        "convert the other operand, e.g. `f32(i)`",
        "convert the other operand, e.g. `ph.f32(i)`",
    ),
    Case(
        "a compile-time integer",
        "let v = zeros<f32>[i]",
        "v: ph.let = ph.zeros[ph.f32][i]",
        "use a literal, a module `const` or an `@autotune` name",
        "use a literal, a module `ph.const` or an `@ph.autotune` name",
    ),
    # names and bindings
    Case(
        "undefined name",
        "let v = qqqqq",
        "v: ph.let = qqqqq",
        "declare it with `let` or `var` first",
        "declare it with `x: ph.let = ...` or `x: ph.var = ...` first",
    ),
    Case(
        "let assigned twice",
        "let t = a\nt = 2.0",
        "t: ph.let = a\nt = 2.0",
        "declare it with var: `var t = ...`",
        "declare it with var: `t: ph.var = ...`",
    ),
    Case(
        "tensor assigned",
        "x = 1.0",
        "x = 1.0",
        "store into a window of it instead: `x[a :+ L] = ...`",
        "store into a window of it instead: `x[a:+L] = ...`",
    ),
    Case(
        "scalar parameter assigned",
        "a = 1.0",
        "a = 1.0",
        "copy it into a var first: `var a_v = a`",
        "copy it into a var first: `a_v: ph.var = a`",
    ),
    Case(
        "constant assigned",
        "C = 1",
        "C = 1",
        "constants never change; use a `var` for a value that does",
        "constants never change; use a `ph.var` for a value that does",
    ),
    Case(
        "compile-time value assigned",
        "B = 1",
        "B = 1",
        "compile-time values never change; use a `var` for a value that does",
        "compile-time values never change; use a `ph.var` for a value that does",
    ),
    Case(
        "var given another type",
        "var t = 0.0\nt = i",
        "t: ph.var = 0.0\nt = i",
        "convert it: `f32(i)`",
        "convert it: `ph.f32(i)`",
    ),
    Case(
        "tensor used as a value",
        "let v = m",
        "v: ph.let = m",
        "load a window of it: `m[a :+ L, a :+ L]`",
        "load a window of it: `m[a:+L, a:+L]`",
    ),
    Case(
        "unused value",
        "exp(a)",
        "ph.exp(a)",
        "bind it with `let x = ...` or store it into a tensor",
        "bind it with `x: ph.let = ...` or store it into a tensor",
    ),
    # tensors, windows and tiles
    Case(
        "a tile as an index",
        "let v = x[x[0 :+ 4]]",
        "v: ph.let = x[x[0:+4]]",
        "index with a window `a :+ L`; a tile cannot index a tensor",
        "index with a window `a:+L`; a tile cannot index a tensor",
    ),
    Case(
        "a float index",
        "let v = x[a]",
        "v: ph.let = x[a]",
        "cast it: `index(a)`",
        "cast it: `ph.index(a)`",
    ),
    Case(
        "index items per axis",
        "let v = m[0 :+ 4]",
        "v: ph.let = m[0:+4]",
        "give one item per axis: a point `i` or a window `a :+ L`",
        "give one item per axis: a point `i` or a window `a:+L`",
    ),
    Case(
        "a full axis of a tensor",
        "let v = x[:]",
        "v: ph.let = x[:]",
        "load a window first: `t[a :+ L]`",
        "load a window first: `t[a:+L]`",
    ),
    Case(
        "a tile indexed by a point",
        "let t = x[0 :+ 4]\nlet v = t[0]",
        "t: ph.let = x[0:+4]\nv: ph.let = t[0]",
        "index the tensor instead, or pick lanes with `where`",
        "index the tensor instead, or pick lanes with `ph.where`",
    ),
    Case(
        "shapes that do not broadcast",
        "let v = m[0 :+ 4, 0 :+ 8] + x[0 :+ 4]",
        "v: ph.let = m[0:+4, 0:+8] + x[0:+4]",
        "extents must be equal or 1; reshape with `t[:, newaxis]` or transpose with `trans(t)`",
        "extents must be equal or 1; reshape with `t[:, None]` or transpose with `ph.trans(t)`",
    ),
    Case(
        "stored into a tile",
        "let t = x[0 :+ 4]\nt[0 :+ 2] = 1.0",
        "t: ph.let = x[0:+4]\nt[0:+2] = 1.0",
        "tiles are values: build a new one, e.g. with `where(c, a, b)`",
        "tiles are values: build a new one, e.g. with `ph.where(c, a, b)`",
    ),
    Case(
        "a tile stored into one element",
        "x[0] = x[0 :+ 4]",
        "x[0] = x[0:+4]",
        "store into a window: `t[a :+ L] = ...`, or reduce the tile first",
        "store into a window: `t[a:+L] = ...`, or reduce the tile first",
    ),
    Case(
        "stored value of another type",
        "h[0 :+ 4] = x[0 :+ 4]",
        "h[0:+4] = x[0:+4]",
        "convert it: `f16(x[0 :+ 4])`",
        "convert it: `ph.f16(x[0:+4])`",
    ),
    Case(
        "an integer and a bool",
        "let w = i + (a > 0.0)",
        "w: ph.let = i + (a > 0.0)",
        "convert one side explicitly, e.g. `i32(a > 0.0)`",
        "convert one side explicitly, e.g. `ph.i32(a > 0.0)`",
    ),
    # operators
    Case(
        "logical operator on numbers",
        "let v = a && a",
        "v: ph.let = a and a",
        "compare to get a bool, e.g. `x != 0`",
        "compare to get a bool, e.g. `x != 0`",
    ),
    Case(
        "arithmetic on bools",
        "let v = (a > 0.0) + (a > 0.0)",
        "v: ph.let = (a > 0.0) + (a > 0.0)",
        "use `&&`, `||` or `!` on bools",
        "use `and`, `or` or `not` on bools",
    ),
    Case(
        "shift of a float",
        "let v = a << 1",
        "v: ph.let = a << 1",
        "cast to an integer type first, e.g. `i32(a)`",
        "cast to an integer type first, e.g. `ph.i32(a)`",
    ),
    Case(
        "not of a number",
        "let v = !a",
        "v: ph.let = not a",
        "compare it instead, e.g. `x == 0`",
        "compare it instead, e.g. `x == 0`",
    ),
    # builtins
    Case(
        "math on an integer",
        "let v = exp(i)",
        "v: ph.let = ph.exp(i)",
        "cast it: `exp(f32(i))`",
        "cast it: `ph.exp(ph.f32(i))`",
    ),
    Case(
        "umulhi of signed integers",
        "let v = umulhi(i, 7)",
        "v: ph.let = ph.umulhi(i, 7)",
        "cast them: `umulhi(u32(i), u32(7))`",
        "cast them: `ph.umulhi(ph.u32(i), ph.u32(7))`",
    ),
    Case(
        "rand of float offsets",
        "let v = rand(i, x[0 :+ 16])",
        "v: ph.let = ph.rand(i, x[0:+16])",
        "an offset numbers a random value (one per lane), such as `base + arange(BLOCK)`; to use "
        "a float's whole part, cast it: `rand(i, i64(x[0 :+ 16]))`",
        "an offset numbers a random value (one per lane), such as `base + ph.arange(BLOCK)`; to "
        "use a float's whole part, cast it: `ph.rand(i, ph.i64(x[0:+16]))`",
    ),
    Case(
        "randn of a float seed",
        "let v = randn(a, i)",
        "v: ph.let = ph.randn(a, i)",
        "cast it: `randn(i64(a), i)`",
        "cast it: `ph.randn(ph.i64(a), i)`",
    ),
    Case(
        "triton randint4x",
        "let v = randint4x(i, i)",
        "v: ph.let = ph.randint4x(i, i)",
        "Phobos draws one value a call: `randint(seed, offsets)`; for four streams give each its "
        "own offsets, such as `4 * offsets + k` for k in 0 to 3",
        "Phobos draws one value a call: `ph.randint(seed, offsets)`; for four streams give each "
        "its own offsets, such as `4 * offsets + k` for k in 0 to 3",
    ),
    Case(
        "a where condition that is not bool",
        "let v = where(a, a, a)",
        "v: ph.let = ph.where(a, a, a)",
        "compare it, e.g. `a != 0`",
        "compare it, e.g. `a != 0`",
    ),
    Case(
        "max of two values",
        "let v = max(a, a)",
        "v: ph.let = ph.max(a, a)",
        "for the elementwise maximum write `maximum(a, b)`",
        "for the elementwise maximum write `ph.maximum(a, b)`",
    ),
    Case(
        "reduction without an axis",
        "let v = sum(m[0 :+ 4, 0 :+ 4])",
        "v: ph.let = ph.sum(m[0:+4, 0:+4])",
        "write `sum(m[0 :+ 4, 0 :+ 4], axis=0)`",
        "write `ph.sum(m[0:+4, 0:+4], axis=0)`",
    ),
    Case(
        "dot of two types",
        "let p = m[0 :+ 16, 0 :+ 16]\nlet q = f16(p)\nlet v = dot(p, q)",
        "p: ph.let = m[0:+16, 0:+16]\nq: ph.let = ph.f16(p)\nv: ph.let = ph.dot(p, q)",
        "cast one, e.g. `f32(q)`",
        "cast one, e.g. `ph.f32(q)`",
    ),
    Case(
        "dot of integers",
        "let p = i32(m[0 :+ 16, 0 :+ 16])\nlet v = dot(p, p)",
        "p: ph.let = ph.i32(m[0:+16, 0:+16])\nv: ph.let = ph.dot(p, p)",
        "cast them, e.g. `f16(p)`",
        "cast them, e.g. `ph.f16(p)`",
    ),
    Case(
        "dot with inner extents that differ",
        "let p = m[0 :+ 8, 0 :+ 16]\nlet v = dot(p, p)",
        "p: ph.let = m[0:+8, 0:+16]\nv: ph.let = ph.dot(p, p)",
        "the first operand's columns must match the second's rows; `trans(b)` may help",
        "the first operand's columns must match the second's rows; `ph.trans(b)` may help",
    ),
    Case(
        "dot accumulator of another shape",
        "let p = m[0 :+ 16, 0 :+ 16]\nlet v = dot(p, p, zeros<f32>[8, 8])",
        "p: ph.let = m[0:+16, 0:+16]\nv: ph.let = ph.dot(p, p, ph.zeros[ph.f32][8, 8])",
        "start it with `zeros<f32>[16, 16]`",
        "start it with `ph.zeros[ph.f32][16, 16]`",
    ),
    Case(
        "dot accumulator of another type",
        "let p = m[0 :+ 16, 0 :+ 16]\nlet v = dot(p, p, zeros<i32>[16, 16])",
        "p: ph.let = m[0:+16, 0:+16]\nv: ph.let = ph.dot(p, p, ph.zeros[ph.i32][16, 16])",
        "start it with `zeros<f32>[16, 16]`",
        "start it with `ph.zeros[ph.f32][16, 16]`",
    ),
    Case(
        "fill with another type",
        "let v = fill(x[0 :+ 4], i)",
        "v: ph.let = ph.fill(x[0:+4], i)",
        "cast it: `f32(i)`",
        "cast it: `ph.f32(i)`",
    ),
    Case(
        "unknown function, close to a builtin",
        "let v = exq(a)",
        "v: ph.let = ph.exq(a)",
        "did you mean 'exp'?",
        "did you mean 'ph.exp'?",
    ),
    Case(
        "unknown function, close to nothing",
        "let v = qqqqqq(a)",
        "v: ph.let = ph.qqqqqq(a)",
        "declare it with `fn`",
        "declare it with `@ph.func`",
    ),
    # atomics
    Case(
        "atomic with a missing value",
        "atomic_add(x[0 :+ 4])",
        "ph.atomic_add(x[0:+4])",
        "write `atomic_add(t[a :+ L], v)`",
        "write `ph.atomic_add(t[a:+L], v)`",
    ),
    Case(
        "atomic on a scalar",
        "atomic_add(a, 1.0)",
        "ph.atomic_add(a, 1.0)",
        "index the tensor: `atomic_add(t[a :+ L], 1.0)`",
        "index the tensor: `ph.atomic_add(t[a:+L], 1.0)`",
    ),
    Case(
        "atomic_add as a value",
        "let v = atomic_add(x[0 :+ 4], 1.0)",
        "v: ph.let = ph.atomic_add(x[0:+4], 1.0)",
        "write it on its own line: `atomic_add(t[a :+ L], v)`",
        "write it on its own line: `ph.atomic_add(t[a:+L], v)`",
    ),
    Case(
        "atomic_cas inside an expression",
        "let v = 1 + atomic_cas(lock[0], 0, 1)",
        "v: ph.let = 1 + ph.atomic_cas(lock[0], 0, 1)",
        "write `let old = atomic_cas(lock[0], 0, 1)` on its own line, then use `old`",
        "write `old: ph.let = ph.atomic_cas(lock[0], 0, 1)` on its own line, then use `old`",
    ),
    Case(
        "atomic_cas old value of another type",
        "var f = 0.0\nf = atomic_cas(lock[0], 0, 1)",
        "f: ph.var = 0.0\nf = ph.atomic_cas(lock[0], 0, 1)",
        "declare a new name for it: `let old = atomic_cas(lock[0], 0, 1)`",
        "declare a new name for it: `old: ph.let = ph.atomic_cas(lock[0], 0, 1)`",
    ),
    Case(
        "atomic_cas on a window",
        "atomic_cas(lock[0 :+ 4], 0, 1)",
        "ph.atomic_cas(lock[0:+4], 0, 1)",
        "index one element: `lock[i]` (a point on every axis)",
        "index one element: `lock[i]` (a point on every axis)",
    ),
    # control flow
    Case(
        "float loop bounds",
        "for k in 0 .. a {\n}",
        "for k in range(0, a):\n    pass",
        "use an integer expression such as `0 .. N step BLOCK`",
        "use an integer expression such as `range(0, N, BLOCK)`",
    ),
    Case(
        "a tile condition",
        "if x[0 :+ 4] > 0.0 {\n}",
        "if x[0:+4] > 0.0:\n    pass",
        "choose per lane with `where(c, a, b)`, or reduce the tile first",
        "choose per lane with `ph.where(c, a, b)`, or reduce the tile first",
    ),
    Case(
        "a number as a condition",
        "if i {\n}",
        "if i:\n    pass",
        "compare it, e.g. `i != 0`",
        "compare it, e.g. `i != 0`",
    ),
    Case(
        "a kernel returning a value",
        "return 1",
        "return 1",
        "store results into a tensor parameter; write a bare `return` to exit early",
        "store results into a tensor parameter; write a bare `return` to exit early",
    ),
    # debugging
    Case(
        "trace of nothing",
        "trace()",
        "ph.trace()",
        "write `trace(x, y)`, or `trace(x, when=ctx.block.x == 0)` for one block",
        "write `ph.trace(x, y)`, or `ph.trace(x, when=ph.ctx.block.x == 0)` for one block",
    ),
    Case(
        "trace with an unknown keyword",
        "trace(a, at=1)",
        "ph.trace(a, at=1)",
        "choose the blocks that print with `when=ctx.block.x == 0`",
        "choose the blocks that print with `when=ph.ctx.block.x == 0`",
    ),
    Case(
        "assert of a number",
        'assert(i, "odd")',
        'assert i, "odd"',
        "compare it, e.g. `i != 0`",
        "compare it, e.g. `i != 0`",
    ),
    # fns
    Case(
        "fn argument of another type",
        "let v = g(i)",
        "v: ph.let = g(i)",
        "convert it: `f32(i)`",
        "convert it: `ph.f32(i)`",
    ),
    Case(
        "fn without a result used as a value",
        "let v = nothing(a)",
        "v: ph.let = nothing(a)",
        "declare a result type (`-> f32`) and `return` a value",
        "declare a result type (`-> ph.f32`) and `return` a value",
    ),
    Case(
        "fn returning a value it does not declare",
        "bad(a)",
        "bad(a)",
        "declare it: `fn bad(...) -> f32`",
        "declare it: `def bad(...) -> ph.f32:`",
        items_ph=BAD_FN_PH.format("return b"),
        items_py=BAD_FN_PY.format("", "return b"),
    ),
    Case(
        "fn returning another type",
        "let v = bad(a)",
        "v: ph.let = bad(a)",
        "convert it: `f16(b)`",
        "convert it: `ph.f16(b)`",
        items_ph=BAD_FN_PH.replace("{{", "-> f16 {{").format("return b"),
        items_py=BAD_FN_PY.format(" -> ph.f16", "return b"),
    ),
    Case(
        "fn with a tensor parameter",
        "let v = tensor_fn(x)",
        "v: ph.let = tensor_fn(x)",
        "fn parameters are element types (`a: f32`); pass loaded tiles",
        "fn parameters are element types (`a: ph.f32`); pass loaded tiles",
        items_ph="fn tensor_fn(t: tensor<f32>[N]) -> f32 {\n    return 1.0\n}\n",
        items_py="@ph.func\ndef tensor_fn(t: ph.tensor[ph.f32][N]) -> ph.f32:\n    return 1.0\n\n\n",
    ),
    # Triton's spellings (check/triton_names.py)
    Case(
        "triton program_id",
        "let p = program_id(1)",
        "p: ph.let = ph.program_id(1)",
        "a block's index is `ctx.block.y` (axes 0, 1, 2 are `.x`, `.y`, `.z`)",
        "a block's index is `ph.ctx.block.y` (axes 0, 1, 2 are `.x`, `.y`, `.z`)",
    ),
    Case(
        "triton num_programs",
        "let n = num_programs(0)",
        "n: ph.let = ph.num_programs(0)",
        "the grid's size is `ctx.grid.x` (axes 0, 1, 2 are `.x`, `.y`, `.z`)",
        "the grid's size is `ph.ctx.grid.x` (axes 0, 1, 2 are `.x`, `.y`, `.z`)",
    ),
    Case(
        "triton load",
        "let v = load(x)",
        "v: ph.let = ph.load(x)",
        "read a window of the tensor itself: `x[a :+ L]`; lanes past its end are absent, so "
        "no mask is needed (`fill(t, 0.0)` gives them a value)",
        "read a window of the tensor itself: `x[a:+L]`; lanes past its end are absent, so "
        "no mask is needed (`ph.fill(t, 0.0)` gives them a value)",
    ),
    Case(
        "triton store, a statement",
        "store(x, a)",
        "ph.store(x, a)",
        "assign to a window of the tensor: `y[a :+ L] = value`; absent lanes are not stored",
        "assign to a window of the tensor: `y[a:+L] = value`; absent lanes are not stored",
    ),
    Case(
        "triton cumsum, not yet",
        "let v = cumsum(x[0 :+ 16], axis=0)",
        "v: ph.let = ph.cumsum(x[0:+16], axis=0)",
        "'cumsum' is not in the language yet (docs/language.md lists what is)",
        "'ph.cumsum' is not in the language yet (docs/language.md lists what is)",
    ),
    Case(
        "arange from a start",
        "let r = arange(4, 16)",
        "r: ph.let = ph.arange(4, 16)",
        "arange(n) counts 0 to n - 1; from a start, write `a + arange(n)`",
        "ph.arange(n) counts 0 to n - 1; from a start, write `a + ph.arange(n)`",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_help_is_spelled_as_the_kernel_is(case: Case):
    ph, py = ph_error(case), py_error(case)
    assert ph.help == case.ph_help
    assert py.help == case.py_help
    assert py.span.file == "/work/spelled/k.py"


PH_ONLY = [
    ('assert(a > 0.0, "x", "y")', 'write `assert(c, "what went wrong")`'),
    ("assert(a > 0.0, 1)", 'write `assert(c, "what went wrong")`'),
    ("let v = ones<f32>[4]", "start from zeros and add: `zeros<f32>[...] + v`"),
]


@pytest.mark.parametrize(("body", "help"), PH_ONLY)
def test_help_for_mistakes_only_phobos_text_can_make(body: str, help: str):
    """Python's ``assert`` always has one or two parts and a literal message, and its only
    tile constructor is zeros."""
    case = Case("", body, "", "", "")
    assert ph_error(case).help == help


def test_operators_in_messages_are_spelled_too():
    case = CASES[[c.name for c in CASES].index("logical operator on numbers")]
    assert ph_error(case).message == "`&&` needs bools, got f32"
    assert py_error(case).message == "`and` needs bools, got f32"
    case = CASES[[c.name for c in CASES].index("not of a number")]
    assert py_error(case).message == "`not` needs bool, got f32"


def test_unknown_function_message_names_it_as_written():
    case = CASES[[c.name for c in CASES].index("unknown function, close to a builtin")]
    assert ph_error(case).message == "unknown function 'exq'"
    assert py_error(case).message == "unknown function 'ph.exq'"


@pytest.mark.parametrize(
    ("imports", "prefix"),
    [
        ("import phobos.lang as pl", "pl"),
        ("import phobos.lang", "phobos.lang"),
        ("from phobos import lang", "lang"),
    ],
)
def test_help_uses_the_modules_own_name_for_phobos_lang(imports: str, prefix: str):
    source = f"{imports}\n\n\n@{prefix}.kernel\n"
    source += f"def k(x: {prefix}.tensor[{prefix}.f32][N], h: {prefix}.tensor[{prefix}.f16][N]):\n"
    source += "    h[0:+4] = x[0:+4]\n"
    diagnostic = first_error(translate_source(source, "/work/spelled/k.py").module)
    assert diagnostic.help == f"convert it: `{prefix}.f16(x[0:+4])`"


def test_help_uses_bare_names_when_the_module_imports_them():
    source = "from phobos.lang import f16, f32, kernel, tensor\n\n\n@kernel\n"
    source += "def k(x: tensor[f32][N], h: tensor[f16][N]):\n    h[0:+4] = x[0:+4]\n"
    diagnostic = first_error(translate_source(source, "/work/spelled/k.py").module)
    assert diagnostic.help == "convert it: `f16(x[0:+4])`"


def test_a_python_variable_of_the_module_is_named_as_one():
    """``BLOCK = 64`` beside a kernel is Python the kernel does not see; the error says so
    and writes the constant the kernel would see."""
    text = PY_HEADER.replace("@ph.kernel\n", "BLOCK = 64\n\n\n@ph.kernel\n")
    text += "    x[0:+BLOCK] = x[0:+BLOCK]\n"
    found = first_error(translate_source(text, "/work/spelled/k.py").module)
    assert found.message == "undefined name 'BLOCK'"
    assert found.help == (
        "'BLOCK' is a Python variable of the module, which a kernel does not see; "
        "declare it `BLOCK: ph.const = 64`"
    )
