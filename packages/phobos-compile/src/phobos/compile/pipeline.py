"""The compile pipeline, one stage after another.

A parsed module → the checker lowers one variant of one kernel to tile IR → the
GPU back end lowers it to GPU IR, runs its passes and prints CUDA C++ with the
launch contract → NVRTC compiles that to a cubin (and PTX) for the card.  Each
stage is a function here, so a tool can stop after any of them
(``phobos-compile --emit``).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from phobos.compile.check import NUM_THREADS, TuneSpace, lower, tune_space
from phobos.compile.contract import Contract
from phobos.compile.diagnostics import error
from phobos.compile.ir import nodes as ir
from phobos.compile.specialization import Specialization, TensorSpecialization
from phobos.compile.syntax import ast, parse
from phobos.compile.syntax.encoding import read_ph
from phobos.compile.toolchain import Resources, compile_cuda

if TYPE_CHECKING:  # the back end needs numpy (phobos-compile[cuda]); parsing and lowering do not
    from phobos.compile.gpu import GeneratedKernel
    from phobos.compile.gpu import ir as gpu_ir

# The most specialised assumption a launcher can check: 16-byte aligned tensors with unit
# last stride, 32-bit indices.  Arguments that break it are refused at launch, never misread.
DEFAULT_ALIGN = 16


@dataclass(frozen=True)
class CompiledKernel:
    """One variant of one kernel, compiled: what a launcher loads and what each stage made."""

    ptx: str
    cubin: bytes
    contract: Contract
    cuda_source: str
    ir: ir.Kernel
    gpu_ir: gpu_ir.Kernel
    resources: Resources | None  # ptxas' report, when compiled with verbose


def parse_file(path: str | Path) -> ast.Module:
    """Read and parse a ``.ph`` file; errors name the path as given."""
    path = Path(path)
    return parse(read_ph(path), str(path))


def default_specialization(
    module: ast.Module, kernel: str, index_width: int = 32
) -> Specialization:
    """Every tensor and its rows 16-byte aligned with unit last stride: the fastest code a
    launch may use."""
    facts = TensorSpecialization(align=DEFAULT_ALIGN, unit_stride=True, row_align=DEFAULT_ALIGN)
    tensors = [p.name for p in module.kernel(kernel).params if isinstance(p.type, ast.TensorType)]
    return Specialization.of(index_width, **dict.fromkeys(tensors, facts))


def variant_values(
    module: ast.Module, kernels: Sequence[str], fixed: Mapping[str, int] | None = None
) -> dict[str, dict[str, int]]:
    """Each kernel's default variant with the ``fixed`` names it takes set.

    With one kernel every fixed name goes to it, and the checker judges them.  With
    several, each takes the names it tunes (and ``NUM_THREADS``); a name that no
    kernel takes is an error.
    """
    fixed = dict(fixed or {})
    spaces = {name: tune_space(module, name) for name in kernels}

    def takes(space: TuneSpace, name: str) -> bool:
        return len(spaces) == 1 or name in space.names or name == NUM_THREADS

    unused = [n for n in fixed if not any(takes(space, n) for space in spaces.values())]
    if unused:
        tuned = sorted({n for space in spaces.values() for n in space.names})
        close = difflib.get_close_matches(unused[0], tuned, n=1)
        raise error(
            module.kernel(kernels[0]).span,
            f"no kernel of the file has a compile-time name '{unused[0]}'",
            help=f"did you mean '{close[0]}'?" if close else f"the names: {', '.join(tuned)}",
        )
    return {
        name: {**space.default(), **{n: v for n, v in fixed.items() if takes(space, n)}}
        for name, space in spaces.items()
    }


def generate_kernel(
    module: ast.Module,
    kernel: str,
    values: Mapping[str, int],
    *,
    arch: str,
    spec: Specialization | None = None,
) -> tuple[ir.Kernel, GeneratedKernel]:
    """Check and lower one variant, then run the back end's passes and print its CUDA C++."""
    ir_kernel = lower(module, kernel, values)
    spec = spec if spec is not None else default_specialization(module, kernel)
    from phobos.compile.gpu import generate

    return ir_kernel, generate(ir_kernel, spec, arch)


def compile_kernel(
    module: ast.Module,
    kernel: str,
    values: Mapping[str, int],
    *,
    arch: str,
    spec: Specialization | None = None,
    verbose: bool = False,
) -> CompiledKernel:
    """Compile one variant of ``kernel`` in ``module`` to PTX, a cubin and its contract."""
    from phobos.compile.gpu import RUNTIME_DIR

    ir_kernel, generated = generate_kernel(module, kernel, values, arch=arch, spec=spec)
    build = compile_cuda(
        generated.source,
        arch=arch,
        name=generated.entry,
        include_paths=(str(RUNTIME_DIR),),
        verbose=verbose,
    )
    return CompiledKernel(
        ptx=build.ptx,
        cubin=build.cubin,
        contract=generated.contract,
        cuda_source=generated.source,
        ir=ir_kernel,
        gpu_ir=generated.gpu_ir,
        resources=build.resources,
    )


def compile_file(
    path: str | Path,
    kernel: str | None = None,
    values: Mapping[str, int] | None = None,
    *,
    arch: str,
    spec: Specialization | None = None,
    verbose: bool = False,
) -> dict[str, CompiledKernel]:
    """Compile a ``.ph`` file's kernels (or the one named), each at its default variant.

    ``values`` fixes compile-time names, in every kernel that tunes them.
    """
    module = parse_file(path)
    names = [kernel] if kernel is not None else [k.name for k in module.kernels]
    variants = variant_values(module, names, values)
    return {
        name: compile_kernel(module, name, variants[name], arch=arch, spec=spec, verbose=verbose)
        for name in names
    }
