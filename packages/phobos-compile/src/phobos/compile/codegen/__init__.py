"""GPU code generation: tile IR -> layouts -> CUDA C++ calling the ``phobos_tile.cuh`` runtime.

``generate(kernel, spec, arch)`` returns the C++ source, its entry point and the
launch contract.  The toolchain compiles the source with ``--include-path``
pointing at ``RUNTIME_DIR`` and at the CUDA headers.
"""

from pathlib import Path

from phobos.compile.codegen.generate import GeneratedKernel, generate
from phobos.compile.codegen.specialization import Specialization, TensorSpecialization

RUNTIME_DIR = Path(__file__).parent / "runtime"

__all__ = ["RUNTIME_DIR", "GeneratedKernel", "Specialization", "TensorSpecialization", "generate"]
