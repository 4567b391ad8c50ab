"""The Python front end: ``@ph.kernel`` modules read with ``ast`` into Phobos programs.

``translate_file(path)`` (or ``translate_source(text, filename)``) returns a ``Program``:
the Phobos syntax tree of the module's kernels, ``@ph.func`` functions and
``ph.const`` constants, with every span pointing at the Python file, plus its
Phobos text and span map.  The module is never imported or run.
"""

from phobos.frontend import _conflict  # noqa: F401  (raises NamespaceConflict if phobos/__init__.py exists)
from phobos.frontend.aliases import LANG_MODULE, LangAliases
from phobos.frontend.program import Program, find_kernel
from phobos.frontend.translate import translate_file, translate_source

__all__ = [
    "LANG_MODULE",
    "LangAliases",
    "Program",
    "find_kernel",
    "translate_file",
    "translate_source",
]
