"""Every variant of every example's ``@autotune`` space compiles with NVRTC and ptxas,
and ptxas keeps its wgmma pipelines asynchronous (no C751x "serialized" report).

A launch on an H100 or H200 may compile any variant of a kernel's space for
``sm_90a`` while tuning.  CI compiles every ``SAMPLE_90A``-th variant for it and every
``SAMPLE``-th for ``sm_80`` and ``sm_90`` (mma.sync, the other instruction paths),
so the suite stays within its time.  The whole sweep, every variant for the three
targets (1,323 compiles), is
``PHOBOS_EVERY_VARIANT=1 pytest -n 2 packages/phobos-compile/tests/test_every_variant.py``
(about 10 minutes on 2 idle cores); run it before a release and after changing the back end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phobos.compile.check import tune_space
from phobos.compile.diagnostics import PhobosError
from phobos.compile.pipeline import compile_kernel, parse_file

from .gpu_ir.pruned import assert_a_true_limit

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SAMPLE_90A = 2
SAMPLE = 9
EVERYTHING = os.environ.get("PHOBOS_EVERY_VARIANT") == "1"


def _variants():
    for path in sorted(EXAMPLES.glob("*.ph")):
        module = parse_file(path)
        for kernel in module.kernels:
            for values in tune_space(module, kernel.name).variants():
                yield path, kernel.name, values


VARIANTS = list(_variants())
CASES = [
    pytest.param(
        path, name, values, arch, id=f"{arch}-{name}-" + "-".join(map(str, values.values()))
    )
    for index, (path, name, values) in enumerate(VARIANTS)
    for arch in ("sm_90a", "sm_80", "sm_90")
    if EVERYTHING or index % (SAMPLE_90A if arch == "sm_90a" else SAMPLE) == 0
]


@pytest.mark.parametrize(("path", "name", "values", "arch"), CASES)
def test_variant_compiles(path, name, values, arch):
    try:
        compiled = compile_kernel(parse_file(path), name, values, arch=arch, verbose=True)
    except PhobosError as exc:  # a variant past a limit is refused (the tuner prunes it)
        assert_a_true_limit(exc, values, arch)
        return
    assert compiled.cubin.startswith(b"\x7fELF")
    assert compiled.contract.block[0] == compiled.gpu_ir.cta_threads
    # Products kept in flight stay in flight: ptxas neither made each wgmma wait for the
    # last nor added a wait of its own; a warp-specialised CTA's registers move as asked.
    assert compiled.resources is not None
    assert compiled.resources.wgmma_serialized is None, compiled.resources.summary()
    assert compiled.resources.wgmma_waits_injected == 0, compiled.resources.summary()
    assert not compiled.resources.registers_not_rebalanced, compiled.resources.summary()
