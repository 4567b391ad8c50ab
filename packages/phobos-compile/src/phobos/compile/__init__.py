"""The Phobos compiler: ``.ph`` text → checked tile IR → GPU IR → CUDA C++ → cubin + launch contract.

The names below are the package's public API.  They are imported on first use, so
``import phobos.compile.span`` (say, from the front end) does not load the whole
compiler, and nothing here needs the CUDA toolchain until something is compiled.
"""

from __future__ import annotations

import importlib
from typing import Any

from phobos.compile import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)

_EXPORTS = {
    "parse": "phobos.compile.syntax",
    "format_module": "phobos.compile.syntax",
    "TensorType": "phobos.compile.syntax.ast",  # a parameter's type in the syntax tree, and
    "Name": "phobos.compile.syntax.ast",  # its dims: extent names and literal sizes
    "IntLit": "phobos.compile.syntax.ast",
    "check_module": "phobos.compile.check",
    "lower": "phobos.compile.check",
    "tune_space": "phobos.compile.check",
    "TuneSpace": "phobos.compile.check",
    "run": "phobos.compile.interp",  # one tile-IR variant in the CPU interpreter
    "accesses": "phobos.compile.races.footprint",
    "warn_races": "phobos.compile.races.warn",
    "format_kernel": "phobos.compile.ir",
    "generate": "phobos.compile.gpu",
    "CompiledKernel": "phobos.compile.pipeline",
    "compile_file": "phobos.compile.pipeline",
    "compile_kernel": "phobos.compile.pipeline",
    "default_specialization": "phobos.compile.pipeline",
    "parse_file": "phobos.compile.pipeline",
    "variant_values": "phobos.compile.pipeline",
    "CachedKernel": "phobos.compile.cached",
    "compile_cached": "phobos.compile.cached",
    "Contract": "phobos.compile.contract",
    "Diagnostic": "phobos.compile.diagnostics",
    "Note": "phobos.compile.diagnostics",
    "PhobosError": "phobos.compile.diagnostics",
    "Span": "phobos.compile.span",
    "SpanMap": "phobos.compile.span",
    "Specialization": "phobos.compile.specialization",
    "TensorSpecialization": "phobos.compile.specialization",
    "Build": "phobos.compile.toolchain",
    "Resources": "phobos.compile.toolchain",
    "compile_cuda": "phobos.compile.toolchain",
    "toolchain_versions": "phobos.compile.toolchain",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'phobos.compile' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
