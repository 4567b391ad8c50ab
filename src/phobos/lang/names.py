"""The names a Python-spelled kernel uses: ``ph.f32``, ``ph.tensor``, ``ph.ctx``, ``ph.exp``, ...

These are real objects so that editors, type checkers and ``help()`` see them, but
a kernel body is never run: the front end reads the source with ``ast``.  Calling a
builtin from ordinary Python code raises ``OutsideKernelError`` saying so.
"""

from __future__ import annotations

from typing import Any, NoReturn


class OutsideKernelError(RuntimeError):
    """A Phobos builtin was called from Python instead of inside a kernel."""


def _outside(name: str) -> NoReturn:
    raise OutsideKernelError(
        f"ph.{name} has a meaning only inside a @ph.kernel or @ph.func body, which Phobos reads "
        "and compiles without running it; it cannot be called from Python"
    )


class DType:
    """A scalar element type (``ph.f32``); in a kernel, ``ph.f32(x)`` casts ``x``."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __call__(self, value: Any) -> NoReturn:
        _outside(self.name)

    def __repr__(self) -> str:
        return f"ph.{self.name}"


bool_ = DType("bool", "Boolean (true/false).")
i8 = DType("i8", "8-bit signed integer.")
i16 = DType("i16", "16-bit signed integer.")
i32 = DType("i32", "32-bit signed integer.")
i64 = DType("i64", "64-bit signed integer.")
u8 = DType("u8", "8-bit unsigned integer.")
u16 = DType("u16", "16-bit unsigned integer.")
u32 = DType("u32", "32-bit unsigned integer.")
u64 = DType("u64", "64-bit unsigned integer.")
f16 = DType("f16", "IEEE half precision.")
bf16 = DType("bf16", "bfloat16.")
f32 = DType("f32", "IEEE single precision.")
f64 = DType("f64", "IEEE double precision.")
index = DType("index", "Signed integer of the kernel's index width (32 or 64 bits).")


class _Shaped:
    """``ph.tensor[ph.f32][N, K]`` / ``ph.zeros[ph.f32][BM, BN]``: element type, then shape."""

    def __init__(self, kind: str, doc: str, dtype: DType | None = None) -> None:
        self.kind = kind
        self.dtype = dtype
        self.__doc__ = doc

    def __getitem__(self, item: Any) -> _Shaped:
        if self.dtype is None:
            return _Shaped(self.kind, self.__doc__ or "", item)
        return self

    def __repr__(self) -> str:
        return f"ph.{self.kind}" + (f"[{self.dtype!r}]" if self.dtype else "")


tensor = _Shaped(
    "tensor",
    "A kernel parameter in global memory: ``ph.tensor[ph.f32][N, K]``; each dim a named "
    "extent bound at launch from the array's shape, or a literal.",
)
zeros = _Shaped("zeros", "A new tile of zeros: ``ph.zeros[ph.f32][BM, BN]`` (compile-time shape).")


class _Marker:
    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __repr__(self) -> str:
        return f"ph.{self.name}"


let = _Marker("let", "``x: ph.let = e`` binds x once.")
var = _Marker("var", "``x: ph.var = e`` binds a mutable x.")
const = _Marker("const", "``C: ph.const = 4`` at module level: a compile-time constant.")


class _Axis:
    def __init__(self, group: str) -> None:
        self.group = group
        self.__doc__ = f"ctx.{group}.x, .y, .z: this launch's {group} coordinates."

    def __getattr__(self, axis: str) -> NoReturn:
        _outside(f"ctx.{self.group}.{axis}")


class _Ctx:
    """``ph.ctx.block.x``: the block's index in the grid; ``ph.ctx.grid.x``: the grid's size."""

    block = _Axis("block")
    grid = _Axis("grid")


ctx = _Ctx()

inf = float("inf")
"""Positive infinity; ``-ph.inf`` is the identity of ``ph.max``."""


def _builtin(name: str, signature: str, doc: str):
    def builtin(*args: Any, **kwargs: Any) -> NoReturn:
        _outside(name)

    builtin.__name__ = name
    builtin.__qualname__ = name
    builtin.__doc__ = f"{signature}\n\n{doc}"
    return builtin


exp = _builtin("exp", "exp(t)", "Elementwise e**t.")
exp2 = _builtin("exp2", "exp2(t)", "Elementwise 2**t.")
log = _builtin("log", "log(t)", "Elementwise natural logarithm.")
log2 = _builtin("log2", "log2(t)", "Elementwise base-2 logarithm.")
sqrt = _builtin("sqrt", "sqrt(t)", "Elementwise square root.")
rsqrt = _builtin("rsqrt", "rsqrt(t)", "Elementwise 1 / sqrt(t).")
expm1 = _builtin("expm1", "expm1(t)", "Elementwise e**t - 1, accurate near 0.")
log1p = _builtin("log1p", "log1p(t)", "Elementwise log(1 + t), accurate near 0.")
tanh = _builtin("tanh", "tanh(t)", "Elementwise hyperbolic tangent.")
sigmoid = _builtin("sigmoid", "sigmoid(t)", "Elementwise 1 / (1 + exp(-t)).")
erf = _builtin("erf", "erf(t)", "Elementwise error function.")
sin = _builtin("sin", "sin(t)", "Elementwise sine (radians).")
cos = _builtin("cos", "cos(t)", "Elementwise cosine (radians).")
pow = _builtin("pow", "pow(a, b)", "Elementwise a**b on floats (broadcasting).")
floor = _builtin("floor", "floor(t)", "Elementwise largest whole float not above t.")
ceil = _builtin("ceil", "ceil(t)", "Elementwise smallest whole float not below t.")
round = _builtin("round", "round(t)", "Elementwise nearest whole float, ties to even.")
trunc = _builtin("trunc", "trunc(t)", "Elementwise t rounded toward zero, as a float.")
abs = _builtin("abs", "abs(t)", "Elementwise absolute value.")
sign = _builtin("sign", "sign(t)", "Elementwise -1, 0 or 1; a zero and NaN stay themselves.")
clamp = _builtin(
    "clamp", "clamp(t, lo, hi)", "Elementwise minimum(maximum(t, lo), hi) (broadcasting)."
)
fma = _builtin("fma", "fma(a, b, c)", "Elementwise a * b + c rounded once (broadcasting).")
isnan = _builtin("isnan", "isnan(t)", "Elementwise: is t NaN? (bool)")
isinf = _builtin("isinf", "isinf(t)", "Elementwise: is t +inf or -inf? (bool)")
isfinite = _builtin("isfinite", "isfinite(t)", "Elementwise: is t neither inf nor NaN? (bool)")
popcount = _builtin(
    "popcount", "popcount(t)", "Elementwise number of set bits of an integer (i32)."
)
umulhi = _builtin(
    "umulhi", "umulhi(a, b)", "Elementwise high half of the exact product of u32s (or u64s)."
)
rand = _builtin(
    "rand",
    "rand(seed, offsets)",
    "Elementwise uniform f32 in [0, 1) (never 1) from Philox 4x32-10: one per lane of the "
    "integer offsets, a function of the scalar integer seed and the offset alone.",
)
randn = _builtin(
    "randn",
    "randn(seed, offsets)",
    "Elementwise standard normal f32 (Box-Muller on Philox 4x32-10): one per lane of the "
    "integer offsets, a function of the scalar integer seed and the offset alone.",
)
randint = _builtin(
    "randint",
    "randint(seed, offsets)",
    "Elementwise 32 random bits (u32) from Philox 4x32-10: one per lane of the integer "
    "offsets, a function of the scalar integer seed and the offset alone.",
)
maximum = _builtin("maximum", "maximum(a, b)", "Elementwise larger of a and b (broadcasting).")
minimum = _builtin("minimum", "minimum(a, b)", "Elementwise smaller of a and b (broadcasting).")
where = _builtin("where", "where(c, a, b)", "Elementwise a where c is true, else b (broadcasting).")
sum = _builtin("sum", "sum(t, axis=k)", "Sum along an axis; absent lanes count as 0.")
max = _builtin("max", "max(t, axis=k)", "Largest along an axis; absent lanes count as -inf.")
min = _builtin("min", "min(t, axis=k)", "Smallest along an axis; absent lanes count as +inf.")
prod = _builtin("prod", "prod(t, axis=k)", "Product along an axis; absent lanes count as 1.")
any = _builtin(
    "any",
    "any(t, axis=k)",
    "Whether some lane along an axis is true (numbers: != 0), a bool; absent lanes count as false.",
)
all = _builtin(
    "all",
    "all(t, axis=k)",
    "Whether every lane along an axis is true (numbers: != 0), a bool; absent lanes count as true.",
)
xor_sum = _builtin(
    "xor_sum",
    "xor_sum(t, axis=k)",
    "Bitwise xor of integers along an axis; absent lanes count as 0.",
)
argmax = _builtin(
    "argmax",
    "argmax(t, axis=k)",
    "Index (i32) of the first largest present lane along an axis: the first NaN if any, -1 if none.",
)
argmin = _builtin(
    "argmin",
    "argmin(t, axis=k)",
    "Index (i32) of the first smallest present lane along an axis: the first NaN if any, -1 if none.",
)
dot = _builtin("dot", "dot(a, b, acc)", "acc + a @ b on tensor cores; absent lanes count as 0.")
trans = _builtin("trans", "trans(t)", "The transpose of a 2-D tile.")
fill = _builtin("fill", "fill(t, v)", "t with its absent lanes set to v.")
arange = _builtin("arange", "arange(n)", "The 1-D tile 0, 1, ..., n-1 (n compile-time).")
atomic_add = _builtin(
    "atomic_add",
    "atomic_add(t[a:+L], v)",
    "Adds v into a window (or one element) of a tensor, each element atomically, so several "
    "blocks may add into one element. A statement: it gives no value.",
)
atomic_max = _builtin(
    "atomic_max",
    "atomic_max(t[a:+L], v)",
    "Each element of a window (or one element) of a tensor becomes the larger of itself and v, "
    "atomically. A statement: it gives no value.",
)
atomic_xchg = _builtin(
    "atomic_xchg",
    "old: ph.let = atomic_xchg(t[i], v)",
    "Sets one element of a tensor to v atomically and gives its old value (only as the whole "
    "value of a let, var or assignment; as a statement the old value is dropped).",
)
atomic_cas = _builtin(
    "atomic_cas",
    "old: ph.let = atomic_cas(t[i], compare, v)",
    "Compare and swap: sets one element of an integer tensor to v if it equals compare, "
    "atomically, and gives its old value (the swap happened when old == compare).",
)
trace = _builtin(
    "trace",
    "trace(a, b, ..., when=c)",
    "Prints each value with this line's file:line and the block, from every block (or those where "
    "the block-uniform condition c holds). A statement: it gives no value.",
)

bool = bool_  # ph.bool (bool_ above, so that this module's code sees Python's bool)

# fmt: off
__all__ = [
    "OutsideKernelError", "abs", "all", "any", "arange", "argmax", "argmin", "atomic_add", "atomic_cas", "atomic_max", "atomic_xchg",
    "bf16", "bool", "ceil", "clamp", "const", "cos", "ctx", "dot", "erf", "exp", "exp2", "expm1",
    "f16", "f32", "f64", "fill", "floor", "fma", "i8", "i16", "i32", "i64", "index", "inf",
    "isfinite", "isinf", "isnan", "let", "log", "log1p", "log2", "max", "maximum", "min",
    "minimum", "popcount", "pow", "prod", "rand", "randint", "randn", "round", "rsqrt",
    "sigmoid", "sign", "sin", "sqrt", "sum", "tanh", "tensor", "trace", "trans", "trunc", "u8", "u16", "u32", "u64", "umulhi", "var",
    "where", "xor_sum", "zeros",
]
# fmt: on
