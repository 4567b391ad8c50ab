"""Where the Python text of a decorated function's module comes from, for the front end.

A file on disk is read as the front end reads files (``translate_file``: its coding
line, cached until it changes).  Code with no file keeps its text in ``linecache`` if
anything does: IPython and Jupyter put each cell there, and so may code that runs a
string (``linecache.cache[name] = (len(text), None, text.splitlines(True), name)``, as
IPython does).  The text is taken from ``linecache`` when the function is decorated, so
a file deleted later still reads.  ``python -c`` and a plain ``exec`` keep no text:
``@ph.kernel(source=text)`` gives it, or the first use is an error that says so.

A cell does not repeat the imports of earlier cells, so for text that is not a file's,
the names the function's globals bind to ``phobos.lang`` and its names count as imported.
"""

from __future__ import annotations

import inspect
import linecache
import os
import sys
from collections.abc import Callable, Mapping

from phobos.compile import Diagnostic, PhobosError, Span
from phobos.frontend import LANG_MODULE, LangAliases, Program, translate_file, translate_source


class ModuleSource:
    """The file a function was defined in, its text as ``linecache`` had it then, and the
    text given with ``source=``."""

    def __init__(self, fn: Callable[..., object], given: str | None) -> None:
        self.name = fn.__name__
        self.file = inspect.getsourcefile(fn) or inspect.getfile(fn)
        self.line = fn.__code__.co_firstlineno
        self.namespace: Mapping[str, object] = fn.__globals__
        self.given = given
        self.lines = [] if given is not None else linecache.getlines(self.file, fn.__globals__)

    def translate(self) -> Program:
        """The front end's translation of the module (``PhobosError`` where there is no text)."""
        if self.given is None and os.path.isfile(self.file):
            return translate_file(self.file)
        text = self.given if self.given is not None else "".join(self.lines)
        if not text:
            raise self.missing()
        return translate_source(text, self.file, imported_aliases(self.namespace))

    def missing(self) -> PhobosError:
        return PhobosError(
            Diagnostic(
                "error",
                f"Phobos cannot read the source of '{self.name}': Python keeps no text for "
                f"{self.file} (code run with `python -c` or `exec` of a string)",
                Span(self.file, self.line, 1, self.line, 2),
                "define it in a file or a notebook cell, or give the module's text: "
                "`@ph.kernel(source=text)`",
            )
        )


def imported_aliases(namespace: Mapping[str, object]) -> LangAliases:
    """How ``namespace`` names ``phobos.lang`` (``ph``, ``phobos.lang``) and its names."""
    lang = sys.modules["phobos.lang"]
    members = {id(getattr(lang, name)): name for name in lang.__all__}
    prefixes: list[tuple[str, ...]] = []
    names: dict[str, str] = {}
    for name, value in namespace.items():
        if value is lang:
            prefixes.append((name,))
        elif name == LANG_MODULE[0] and getattr(value, "lang", None) is lang:
            prefixes.append(LANG_MODULE)
        elif id(value) in members and not name.startswith("_"):
            names[name] = members[id(value)]
    return LangAliases(tuple(prefixes), names)
