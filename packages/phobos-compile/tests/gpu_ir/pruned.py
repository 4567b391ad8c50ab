"""What the variant matrices accept as a pruned variant: a limit the variant truly passes."""

from __future__ import annotations

import re

from phobos.compile.diagnostics import PhobosError
from phobos.compile.gpu.arch import shared_bytes_per_cta
from phobos.compile.limits import MAX_THREAD_REGISTERS


def assert_a_true_limit(exc: PhobosError, values: dict[str, int], arch: str) -> None:
    """``exc`` refuses the variant for a limit only, and the variant does pass it: a product
    whose result a thread cannot hold, or a CTA past the target's shared memory."""
    assert exc.only_limits, exc
    if "registers a thread" in exc.message:
        assert values["BM"] * values["BN"] > MAX_THREAD_REGISTERS * values["NUM_THREADS"]
        return
    needed = re.search(r"needs (\d+) bytes of shared memory a CTA", exc.message)
    assert needed is not None, exc
    assert int(needed.group(1)) > shared_bytes_per_cta(arch)
