"""The Python spelling of Phobos: ``@ph.kernel``, ``@ph.autotune`` and the language's names.

    import phobos.lang as ph

    @ph.kernel
    @ph.autotune(BLOCK=[16, 8192])
    def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
        base: ph.let = ph.ctx.block.x * BLOCK
        out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]

A decorated function is read with ``ast``, never run; see docs/writing-kernels.md.
"""

from phobos.compile import PhobosError
from phobos.lang import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)
from phobos.lang.kernel import Kernel, autotune, func, kernel
from phobos.lang.names import *  # noqa: F403 (the language's names, names.__all__)
from phobos.lang.names import __all__ as _names

__all__ = ["Kernel", "PhobosError", "autotune", "func", "kernel", *_names]
