"""Which variant a launch uses: the keywords the caller fixed, the rest from the space.

The autotuner (``phobos.autotune``) plugs in here: ``choose_variant`` is the one
place a launch asks for its compile-time values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from phobos.lang.kernel import Grid, Kernel


def choose_variant(
    kernel: Kernel, grid: Grid, args: Sequence[Any], fixed: Mapping[str, int], where: str
) -> dict[str, int]:
    """The compile-time values for this launch (``where`` is "host" or "device")."""
    return kernel.values_for(fixed)
