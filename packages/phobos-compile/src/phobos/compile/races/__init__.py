"""The static race check: which stores may meet another block's accesses (DESIGN.md §6).

``check_races(kernel)`` analyses one lowered variant and returns warnings; the
dynamic check (``race_check=True`` on a launch, ``phobos.compile.interp.races``)
tests one launch on real arguments.
"""

from phobos.compile.races.check import check_races

__all__ = ["check_races"]
