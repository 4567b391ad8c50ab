"""``Program``: one Python module's Phobos program, as a tree and as text with a span map."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from phobos.compile.span import SpanMap
from phobos.compile.syntax import ast as ph


@dataclass(frozen=True)
class Program:
    """The consts, fns and kernels of one Python module, translated.

    ``module``'s spans point into ``filename`` (the Python file).  ``text`` is the
    Phobos the module spells and ``span_map`` maps positions in ``text`` back to
    the Python file; both are printed on first use.
    """

    module: ph.Module
    filename: str

    @cached_property
    def _printed(self) -> tuple[str, SpanMap]:
        from phobos.compile.syntax import format_with_span_map

        return format_with_span_map(self.module)

    @property
    def text(self) -> str:
        return self._printed[0]

    @property
    def span_map(self) -> SpanMap:
        return self._printed[1]

    def for_kernel(self, name: str) -> Program:
        """The program of one kernel: the module's consts and fns, and that kernel, in order."""
        find_kernel(self, name)
        items = tuple(
            item
            for item in self.module.items
            if not isinstance(item, ph.Kernel) or item.name == name
        )
        return Program(replace(self.module, items=items), self.filename)

    def kernel_source(self, name: str) -> str:
        """The Phobos text of ``for_kernel(name)``: what ``kernel.source`` prints."""
        return self.for_kernel(name).text


def find_kernel(program: Program, name: str) -> ph.Kernel:
    """The kernel ``name`` of ``program``; a LookupError saying which kernels there are if none."""
    for kernel in program.module.kernels:
        if kernel.name == name:
            return kernel
    known = ", ".join(k.name for k in program.module.kernels) or "none"
    raise LookupError(
        f"{program.filename} has no top-level @ph.kernel named {name!r} (its kernels: {known}); "
        "Phobos reads kernels defined at module level in a module that imports phobos.lang"
    )
