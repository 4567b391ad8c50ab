"""The back end's passes, in order: tile IR → GPU IR → ... (each dumpable with ``--emit gpuir``)."""

from __future__ import annotations

from phobos.compile.gpu import ir
from phobos.compile.gpu.lower import lower_kernel
from phobos.compile.gpu.passes.accumulate import fold_accumulation
from phobos.compile.gpu.passes.allocation import allocate_shared
from phobos.compile.gpu.passes.assign_layouts import assign_layouts
from phobos.compile.gpu.passes.barriers import insert_barriers
from phobos.compile.gpu.passes.cleanup import eliminate_dead_code
from phobos.compile.gpu.passes.conversions import expand_conversions
from phobos.compile.gpu.passes.cta import choose_cta
from phobos.compile.gpu.passes.pipeline import pipeline_copies
from phobos.compile.gpu.passes.reductions import expand_reductions
from phobos.compile.gpu.passes.select_mma import select_mma
from phobos.compile.gpu.passes.sink_loads import sink_loads
from phobos.compile.gpu.passes.vectorize import vectorize
from phobos.compile.ir import nodes as tir


def build(
    kernel: tir.Kernel,
    *,
    arch: str,
    index_width: int = 32,
    unit_stride: dict[str, bool] | None = None,
    align: dict[str, int] | None = None,
) -> ir.Kernel:
    gk = lower_kernel(
        kernel, arch=arch, index_width=index_width, unit_stride=unit_stride or {}, align=align or {}
    )
    fold_accumulation(gk)
    eliminate_dead_code(gk)
    sink_loads(gk)
    eliminate_dead_code(gk)
    choose_cta(gk)
    select_mma(gk)
    eliminate_dead_code(gk)
    pipeline_copies(gk)
    assign_layouts(gk)
    expand_reductions(gk)
    expand_conversions(gk)
    eliminate_dead_code(gk)
    vectorize(gk)
    allocate_shared(gk)
    insert_barriers(gk)
    return gk
