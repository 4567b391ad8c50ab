"""Accepted fuzz variants through the code generator and NVRTC (no GPU needed).

The checker's job ends at "accepted"; whether the CUDA C++ written for an accepted
variant compiles is the back end's.  ``known_issue`` names the back-end problems
known today (docs/fuzzing.md) from the variant's IR, so that a run can tell them
from new ones, and tests/test_fuzz_nvrtc.py marks them ``xfail(strict=True)``:
when the back end fixes one, its cases pass and the mark must go.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tools.fuzz.harness import walk_ir

# What the back end does not handle today, as the fuzzer found it (issue 15).
UNARY_SMALL_INT = "codegen: unary - and ~ on i8, i16, u8, u16"
TINY_FLOAT = "codegen: a float literal below the smallest subnormal of its type"
NON_ASCII_NAME = "codegen: names beyond ASCII are not mangled"


@dataclass(frozen=True)
class Variant:
    """One accepted variant: enough to compile it again."""

    module: object  # phobos.compile.syntax.ast.Module
    kernel: str
    values: dict[str, int]
    ir: object  # phobos.compile.ir.nodes.Kernel


def known_issue(kernel) -> str | None:
    """The known back-end problem this variant's IR runs into, or None."""
    from phobos.compile.ir import nodes as ir

    names = [kernel.name, *(p.name for p in kernel.params), *kernel.extents]
    for node, _ in walk_ir(kernel.body):
        if (
            isinstance(node, ir.Unary)
            and node.op in ("neg", "bitnot")
            and node.type.dtype in ("i8", "i16", "u8", "u16")
        ):
            return UNARY_SMALL_INT
        # f16 and bf16 constants are written as f32 literals too: below f32's subnormals,
        # the literal's text underflows to zero, which NVRTC rejects.
        if isinstance(node, ir.Const) and node.type.dtype in ("f16", "bf16", "f32"):
            value = node.value
            if isinstance(value, float) and value != 0.0 and np.float32(value) == 0.0:
                return TINY_FLOAT
        var = getattr(node, "var", None) or getattr(node, "result", None)
        if var is not None:
            names.append(var.name)
    if not all(name.isascii() for name in names):
        return NON_ASCII_NAME
    return None


def compile_variant(variant: Variant, arch: str = "sm_90") -> None:
    """Generate CUDA C++ for the variant and compile it with NVRTC and nvJitLink."""
    from phobos.compile.pipeline import compile_kernel

    compile_kernel(variant.module, variant.kernel, variant.values, arch=arch)
