"""The CPU interpreter: runs one tile-IR kernel variant on numpy arrays.

It is the semantic reference for the GPU code generator (absent lanes, C integer
division, f16 rounding) and what a launch runs when its arrays are numpy arrays.
"""

from phobos.compile.interp.errors import LaunchError, RaceError
from phobos.compile.interp.run import run

__all__ = ["LaunchError", "RaceError", "run"]
