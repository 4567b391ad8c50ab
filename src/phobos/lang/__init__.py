"""The Python spelling of Phobos: ``@ph.kernel``, ``@ph.autotune`` and the language's names.

    import phobos.lang as ph

    @ph.kernel
    @ph.autotune(BLOCK=[16, 8192])
    def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
        base: ph.let = ph.ctx.block.x * BLOCK
        out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]

A decorated function is read with ``ast``, never run; see docs/writing-kernels.md.
"""

from phobos.compile.diagnostics import PhobosError
from phobos.lang import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)
from phobos.lang.kernel import Kernel, autotune, func, kernel
from phobos.lang.names import (
    OutsideKernelError,
    abs,
    arange,
    atomic_add,
    atomic_cas,
    atomic_max,
    atomic_xchg,
    bf16,
    const,
    ctx,
    dot,
    exp,
    exp2,
    f16,
    f32,
    f64,
    fill,
    i8,
    i16,
    i32,
    i64,
    index,
    inf,
    let,
    log,
    log2,
    max,
    maximum,
    min,
    minimum,
    rsqrt,
    sqrt,
    sum,
    tensor,
    trace,
    trans,
    u8,
    u16,
    u32,
    u64,
    var,
    where,
    zeros,
)
from phobos.lang.names import bool_ as bool

__all__ = [
    "Kernel",
    "OutsideKernelError",
    "PhobosError",
    "abs",
    "arange",
    "atomic_add",
    "atomic_cas",
    "atomic_max",
    "atomic_xchg",
    "autotune",
    "bf16",
    "bool",
    "const",
    "ctx",
    "dot",
    "exp",
    "exp2",
    "f16",
    "f32",
    "f64",
    "fill",
    "func",
    "i8",
    "i16",
    "i32",
    "i64",
    "index",
    "inf",
    "kernel",
    "let",
    "log",
    "log2",
    "max",
    "maximum",
    "min",
    "minimum",
    "rsqrt",
    "sqrt",
    "sum",
    "tensor",
    "trace",
    "trans",
    "u8",
    "u16",
    "u32",
    "u64",
    "var",
    "where",
    "zeros",
]
