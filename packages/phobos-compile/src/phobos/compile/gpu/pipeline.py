"""The back end's passes, in order: tile IR → GPU IR → the IR the C++ printer prints.

Each pass is a function of the kernel that rewrites it in place; the verifier checks
the IR after each one (``verify.py``), and ``phobos-compile --emit gpuir`` prints the
result.  ``PASSES`` is the order, with the stage the IR has reached after each;
``build(..., stop_after=NAME)`` stops after the pass of that name, so a test or a
curious user can look at the IR in between.
"""

from __future__ import annotations

from collections.abc import Callable

from phobos.compile.gpu import ir
from phobos.compile.gpu.lower import lower_kernel
from phobos.compile.gpu.passes.accumulate import fold_accumulation
from phobos.compile.gpu.passes.allocation import allocate_shared
from phobos.compile.gpu.passes.assign_layouts import assign_layouts
from phobos.compile.gpu.passes.barriers import insert_barriers
from phobos.compile.gpu.passes.cleanup import eliminate_dead_code
from phobos.compile.gpu.passes.conversions import expand_conversions
from phobos.compile.gpu.passes.cta import choose_cta
from phobos.compile.gpu.passes.interior import split_interior_copies
from phobos.compile.gpu.passes.mma_waits import schedule_mma_waits
from phobos.compile.gpu.passes.pipeline import pipeline_copies
from phobos.compile.gpu.passes.reductions import expand_reductions
from phobos.compile.gpu.passes.select_mma import select_mma
from phobos.compile.gpu.passes.sink_loads import sink_loads
from phobos.compile.gpu.passes.vectorize import vectorize
from phobos.compile.gpu.passes.warp_specialize import specialize_warps
from phobos.compile.gpu.verify import Stage, verify
from phobos.compile.ir import nodes as tir

_LAID_OUT = Stage(layouts=True)
_EXPANDED = Stage(layouts=True, conversions=True, reductions=True)

PASSES: tuple[tuple[str, Callable[[ir.Kernel], None], Stage], ...] = (
    ("accumulate", fold_accumulation, Stage()),
    ("cleanup", eliminate_dead_code, Stage()),
    ("sink_loads", sink_loads, Stage()),
    ("cleanup", eliminate_dead_code, Stage()),
    ("cta", choose_cta, Stage()),
    ("select_mma", select_mma, Stage()),
    ("cleanup", eliminate_dead_code, Stage()),
    ("pipeline", pipeline_copies, Stage()),
    ("mma_waits", schedule_mma_waits, Stage()),
    ("assign_layouts", assign_layouts, _LAID_OUT),
    ("reductions", expand_reductions, Stage(layouts=True, reductions=True)),
    ("conversions", expand_conversions, _EXPANDED),
    ("cleanup", eliminate_dead_code, _EXPANDED),
    ("vectorize", vectorize, _EXPANDED),
    ("interior", split_interior_copies, _EXPANDED),
    ("allocation", allocate_shared, _EXPANDED),
    ("barriers", insert_barriers, _EXPANDED),
    ("warp_specialize", specialize_warps, _EXPANDED),
    ("cleanup", eliminate_dead_code, _EXPANDED),
)


def build(
    kernel: tir.Kernel,
    *,
    arch: str,
    index_width: int = 32,
    unit_stride: dict[str, bool] | None = None,
    align: dict[str, int] | None = None,
    row_align: dict[str, int] | None = None,
    stop_after: str | None = None,
) -> ir.Kernel:
    """The GPU IR of one tile-IR variant, after every pass (or after ``stop_after``'s last)."""
    gk = lower_kernel(
        kernel,
        arch=arch,
        index_width=index_width,
        unit_stride=unit_stride or {},
        align=align or {},
        row_align=row_align or {},
    )
    verify(gk, Stage(), "lowering")
    last = max((i for i, (name, _, _) in enumerate(PASSES) if name == stop_after), default=None)
    if stop_after is not None and last is None:
        raise ValueError(f"no pass named {stop_after!r}: {', '.join(n for n, _, _ in PASSES)}")
    for index, (name, run, stage) in enumerate(PASSES):
        run(gk)
        verify(gk, stage, name)
        if index == last:
            break
    return gk
