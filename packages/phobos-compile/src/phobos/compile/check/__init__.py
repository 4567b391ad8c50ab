"""The checker: names, types, shapes and compile-time values, lowered to the tile IR.

``lower`` checks one kernel and specialises it to one variant of its
``@autotune`` space; ``check_module`` checks every kernel at its default variant;
``tune_space`` reads a kernel's space.  The rules are in docs/language.md.
"""

from phobos.compile.check.kernel import NUM_THREADS, check_module, lower
from phobos.compile.check.tune import TuneSpace, tune_space

__all__ = ["NUM_THREADS", "TuneSpace", "check_module", "lower", "tune_space"]
