"""Accepted fuzz variants through the code generator and NVRTC (no GPU needed).

The checker's job ends at "accepted"; whether the CUDA C++ written for an accepted
variant compiles is the back end's.  ``known_issue`` names the back-end problems
known today (docs/fuzzing.md) from the variant's IR, so that a run can tell them
from new ones, and tests/test_fuzz_nvrtc.py marks them ``xfail(strict=True)``:
when the back end fixes one, its cases pass and the mark must go (none is known now).
"""

from __future__ import annotations

from dataclasses import dataclass

# What the back end does not handle today, as the fuzzer found it: nothing.  Issue 15's three
# findings (unary - and ~ on i8, i16, u8, u16; a float literal below the smallest subnormal of its
# type; names beyond ASCII) compile with the GPU back end that replaced the one they were found
# on, and compute what the interpreter does; tests/test_fuzz_nvrtc.py keeps a program for each.
# A new finding gets a reason here and a test in known_issue.


@dataclass(frozen=True)
class Variant:
    """One accepted variant: enough to compile it again."""

    module: object  # phobos.compile.syntax.ast.Module
    kernel: str
    values: dict[str, int]
    ir: object  # phobos.compile.ir.nodes.Kernel


def known_issue(kernel) -> str | None:
    """The known back-end problem this variant's IR runs into (read off ``kernel``, its
    tile IR, with ``walk_ir``), or None: there is none today."""
    del kernel
    return None


def compile_variant(variant: Variant, arch: str = "sm_90") -> None:
    """Generate CUDA C++ for the variant and compile it with NVRTC and nvJitLink."""
    from phobos.compile.pipeline import compile_kernel

    compile_kernel(variant.module, variant.kernel, variant.values, arch=arch)
