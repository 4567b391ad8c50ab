"""Search a kernel's ``@autotune`` space: check every variant against a reference, time those
that pass, keep the fastest in the kernel cache.

Generic over the kernel: a caller describes a ``Problem`` (the variants, how to
compile and load each, the arguments, a timer) and calls ``tune``.  Phobos kernels
are adapted by ``phobos.lang.tuning``; see docs/autotuning.md.
"""

from phobos.autotune import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)
from phobos.autotune.arrays import ArrayOps, dtype_name, ops_for, poison_patterns
from phobos.autotune.compare import Mismatch
from phobos.autotune.key import default_shape, next_power_of_two, tuning_key
from phobos.autotune.problem import (
    ON_DISAGREEMENT,
    Candidate,
    NoVariantPassed,
    Options,
    Problem,
    Unfit,
    VariantsDisagree,
)
from phobos.autotune.report import (
    COMPILE_ERROR,
    DISAGREED,
    FAULTED,
    PASSED,
    PRUNED,
    WRONG,
    Report,
    VariantResult,
)
from phobos.autotune.search import search
from phobos.autotune.space import oversized
from phobos.autotune.timing import CpuTimer, DeviceTimer, Timer
from phobos.autotune.tolerance import DEFAULT_TOLERANCES, Tolerance, tolerance_for
from phobos.autotune.tuner import NAMESPACE, cached_report, tune, usable

__all__ = [
    "COMPILE_ERROR",
    "DEFAULT_TOLERANCES",
    "DISAGREED",
    "FAULTED",
    "NAMESPACE",
    "ON_DISAGREEMENT",
    "PASSED",
    "PRUNED",
    "WRONG",
    "ArrayOps",
    "Candidate",
    "CpuTimer",
    "DeviceTimer",
    "Mismatch",
    "NoVariantPassed",
    "Options",
    "Problem",
    "Report",
    "Timer",
    "Tolerance",
    "Unfit",
    "VariantResult",
    "VariantsDisagree",
    "cached_report",
    "default_shape",
    "dtype_name",
    "next_power_of_two",
    "ops_for",
    "oversized",
    "poison_patterns",
    "search",
    "tolerance_for",
    "tune",
    "tuning_key",
    "usable",
]
