"""``generate``: one tile-IR variant through the passes to CUDA C++ and its launch contract."""

from __future__ import annotations

from dataclasses import dataclass

from phobos.compile.contract import Contract, ScalarSpec, TensorSpec
from phobos.compile.gpu import ir
from phobos.compile.gpu.emit import STATIC_SMEM_LIMIT, emit_kernel
from phobos.compile.gpu.pipeline import build
from phobos.compile.ir import nodes as tir
from phobos.compile.specialization import Specialization


@dataclass(frozen=True)
class GeneratedKernel:
    source: str  # CUDA C++ including the runtime header
    entry: str  # the extern "C" __global__ function's name
    contract: Contract
    gpu_ir: ir.Kernel  # the final GPU IR the source prints


def generate(kernel: tir.Kernel, spec: Specialization, arch: str) -> GeneratedKernel:
    """CUDA C++ for one variant, specialised by ``spec``, and its launch contract for ``arch``."""
    tensors = [p.name for p in kernel.params if isinstance(p, tir.TensorParam)]
    gpu = build(
        kernel,
        arch=arch,
        index_width=spec.index_width,
        unit_stride={t: spec.tensor(t).unit_stride for t in tensors},
        align={t: spec.tensor(t).align for t in tensors},
        row_align={t: spec.tensor(t).row_align for t in tensors},
    )
    emitted = emit_kernel(gpu)
    return GeneratedKernel(
        emitted.source, emitted.entry, _contract(kernel, gpu, spec, emitted), gpu
    )


def _contract(kernel: tir.Kernel, gpu: ir.Kernel, spec: Specialization, emitted) -> Contract:
    written = {
        op.tensor for op in gpu.walk() if isinstance(op, (ir.Store, ir.StoreUniform, ir.Atomic))
    }
    read = {
        op.tensor
        for op in gpu.walk()
        if isinstance(op, (ir.Load, ir.LoadUniform, ir.CopyAsync, ir.Atomic))
    }
    dynamic = gpu.shared_bytes > STATIC_SMEM_LIMIT
    return Contract(
        kernel=kernel.name,
        entry=emitted.entry,
        arch=gpu.arch,
        index_width=spec.index_width,
        block=(gpu.cta_threads, 1, 1),
        dynamic_smem=gpu.shared_bytes if dynamic else 0,
        static_smem=0 if dynamic else gpu.shared_bytes,
        values=dict(kernel.values),
        params=tuple(p.name for p in kernel.params),
        tensors=tuple(
            TensorSpec(
                name=t.name,
                dtype=t.dtype,
                dims=t.dims,
                read=t.name in read,
                written=t.name in written,
                align=spec.tensor(t.name).align,
                unit_stride=spec.tensor(t.name).unit_stride,
                row_align=spec.tensor(t.name).row_align,
            )
            for t in kernel.tensors
        ),
        scalars=tuple(
            ScalarSpec(p.name, p.dtype) for p in kernel.params if isinstance(p, tir.ScalarParam)
        ),
        slots=emitted.signature.slots,
        source_file=kernel.span.file,
    )
