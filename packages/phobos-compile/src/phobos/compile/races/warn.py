"""Issue the static race check's warnings through Python's ``warnings``, each once.

Each warning is issued at the user's own file and line (``warn_explicit``), so
Python's report names the kernel's line rather than a compiler frame.
"""

from __future__ import annotations

import warnings

from phobos.compile.diagnostics import PhobosWarning
from phobos.compile.ir import nodes as ir
from phobos.compile.races.check import check_races

_ISSUED: set[str] = set()


def warn_races(kernel: ir.Kernel) -> None:
    """``warnings.warn`` each race warning of ``kernel`` not issued before in this process."""
    for diagnostic in check_races(kernel):
        text = diagnostic.render()
        if text in _ISSUED:
            continue
        _ISSUED.add(text)
        span = diagnostic.span
        warnings.warn_explicit(text, PhobosWarning, span.file, span.line, module="phobos")
