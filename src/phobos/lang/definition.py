"""What a ``@ph.kernel`` function declares: its module's program, its parameters, its space.

A ``Definition`` remembers where the function was defined.  The first use translates
the module's source with the front end (``phobos.frontend``); the parameters and the
``@autotune`` space are read from that syntax tree, never by running the function.
"""

from __future__ import annotations

import hashlib
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import phobos.compile as compiler
from phobos.compile import Diagnostic, PhobosError, Span
from phobos.frontend import Program
from phobos.lang.errors import user_facing
from phobos.lang.source import ModuleSource
from phobos.launch import ArgumentBinder, ArrayFields

if TYPE_CHECKING:
    from phobos.compile import TuneSpace


@dataclass(frozen=True)
class Parameter:
    """One declared parameter: a tensor's element type and dims, or a scalar's type.

    ``dims``: per axis an extent name, a literal size, or None for a compile-time
    expression (its size depends on the variant); None for a scalar.
    """

    name: str
    dtype: str
    dims: tuple[str | int | None, ...] | None
    span: Span


class Definition:
    """Where a kernel was defined, and what its definition declares (each read once).

    ``source``: the Python text of the kernel's module, where Python keeps none
    (``phobos.lang.source``)."""

    def __init__(self, fn: Callable[..., object], source: str | None = None) -> None:
        self.name = fn.__name__
        self.module_source = ModuleSource(fn, source)
        self.file = self.module_source.file

    @cached_property
    def program(self) -> Program:
        """The front end's translation of the kernel's module."""
        with user_facing():
            return self.module_source.translate()

    @cached_property
    def source(self) -> str:
        """The Phobos text of the program this kernel spells (its module's consts and fns, then it)."""
        return self.program.kernel_source(self.name)

    @cached_property
    def digest(self) -> str:
        """What identifies the kernel's code in a tuning key."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:32]

    @cached_property
    def space(self) -> TuneSpace:
        """The kernel's ``@autotune`` space."""
        with user_facing():
            return compiler.tune_space(self.program.module, self.name)

    @cached_property
    def params(self) -> tuple[Parameter, ...]:
        def dim(d: object) -> str | int | None:
            if isinstance(d, compiler.Name):
                return d.id
            return d.value if isinstance(d, compiler.IntLit) else None

        params = []
        for p in self.program.module.kernel(self.name).params:
            if isinstance(p.type, compiler.TensorType):
                dims = tuple(dim(d) for d in p.type.dims)
                params.append(Parameter(p.name, p.type.dtype.name, dims, p.span))
            else:
                params.append(Parameter(p.name, p.type.name, None, p.span))
        return tuple(params)

    @cached_property
    def tensor_params(self) -> tuple[str | None, ...]:
        """Each parameter's name if it is a tensor, else None, in declaration order."""
        return tuple(p.name if p.dims is not None else None for p in self.params)

    @cached_property
    def positions(self) -> dict[str, int]:
        """Each tensor parameter's position."""
        return {name: i for i, name in enumerate(self.tensor_params) if name is not None}

    @cached_property
    def declared(self) -> dict[str, Span]:
        """Where each parameter is declared."""
        return {p.name: p.span for p in self.params}

    @cached_property
    def checks(self) -> ArgumentBinder:
        """The argument checks every variant makes (dtypes, ranks, extents), before one is
        chosen; a size only a variant knows (None) is left to that variant's contract."""
        return ArgumentBinder.declared(
            self.name,
            [
                (p.name, p.dtype, p.dims and [f"{p.name}[{a}]" if d is None else d
                                              for a, d in enumerate(p.dims)])
                for p in self.params
            ],
        )  # fmt: skip

    def values_for(self, fixed: Mapping[str, int]) -> dict[str, int]:
        """The variant used when ``fixed`` names are given and the rest take the space's default.

        A fixed value must be an integer (a Python or numpy int; not a bool, a float or a
        string): ``BLOCK=16.9`` is an error at the kernel's line, never truncated.
        """
        unknown = sorted(set(fixed) - set(self.space.names) - {"NUM_THREADS"})
        if unknown:
            names = ", ".join(self.space.names) or "none"
            raise TypeError(
                f"{self.name}[grid](...) got {', '.join(unknown)}, which the kernel's @autotune space "
                f"does not name (its compile-time names: {names})"
            )
        return {**self.space.default(), **{k: self._integer(k, v) for k, v in fixed.items()}}

    def _integer(self, name: str, value: object) -> int:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        raise PhobosError(
            Diagnostic(
                "error",
                f"the value of '{name}' must be an integer, got {value!r}",
                self.program.module.kernel(self.name).span,
                f"give {name}=<int>, one of the values its @autotune space allows",
            )
        )

    def extents_and_dtypes(
        self, arrays: Sequence[ArrayFields | None]
    ) -> tuple[dict[str, int], dict[str, str]]:
        """The named extents as the arrays give them, and each parameter's declared dtype."""
        extents: dict[str, int] = {}
        for param, fields in zip(self.params, arrays):
            for dim, size in zip(param.dims or (), fields[1] if fields is not None else ()):
                if isinstance(dim, str):
                    extents.setdefault(dim, int(size))
        return extents, {p.name: p.dtype for p in self.params}
