"""The back end's passes, in order: tile IR → GPU IR → ... (each dumpable with ``--emit gpuir``)."""

from __future__ import annotations

from phobos.compile.gpu import ir
from phobos.compile.gpu.lower import lower_kernel
from phobos.compile.gpu.passes.cleanup import eliminate_dead_code
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
    eliminate_dead_code(gk)
    return gk
