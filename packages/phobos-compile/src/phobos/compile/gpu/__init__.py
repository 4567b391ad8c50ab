"""The GPU back end: tile IR → GPU IR → passes → CUDA C++ (``pipeline.py`` lists the passes).

``generate(kernel, spec, arch)`` runs the passes on one tile-IR variant and prints
its C++; it returns the source, its entry point, the launch contract and the
final GPU IR.  The toolchain compiles the source with ``--include-path`` pointing
at ``RUNTIME_DIR`` and at the CUDA headers.
"""

from pathlib import Path

from phobos.compile.gpu.generate import GeneratedKernel, generate

RUNTIME_DIR = Path(__file__).parent / "runtime"

__all__ = ["RUNTIME_DIR", "GeneratedKernel", "generate"]
