"""``@ph.kernel``, ``@ph.func``, ``@ph.autotune``: Python functions that spell Phobos.

A decorated function is never called.  ``Kernel`` remembers where it was defined
(its ``Definition``); the first use (``.source``, a launch, ``.compile``) translates
the module's source with the front end.  ``kernel[grid](args...)`` runs the kernel
through its ``Dispatcher``: in the CPU interpreter when the arrays are numpy arrays,
on the GPU when they offer ``__cuda_array_interface__``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from phobos.compile import PhobosError
from phobos.lang.definition import Definition
from phobos.lang.dispatch import Dispatcher, Launch
from phobos.lang.errors import user_facing
from phobos.lang.tuning import Requirement, ShapeKey
from phobos.lang.variant import Grid, Lowered, Variant

if TYPE_CHECKING:
    from phobos.autotune import Options, Report
    from phobos.compile import CachedKernel, TuneSpace
    from phobos.frontend import Program

F = TypeVar("F", bound=Callable[..., object])


def autotune(**space: object) -> Callable[[F], F]:
    """``@ph.autotune(BLOCK=[16, 8192], BN={64, 128})``: the kernel's compile-time search space.

    A list ``[a, b]`` is the powers of two from a to b; a set is exactly its values.
    The front end reads the decorator from the source; at run time it changes nothing.
    """

    def mark(target: F) -> F:
        return target

    return mark


def func(fn: F) -> F:
    """``@ph.func``: a Phobos ``fn``, inlined where a kernel calls it (never run by Python)."""
    return fn


@overload
def kernel(fn: Callable[..., object] | Kernel, *, source: str | None = None) -> Kernel: ...
@overload
def kernel(*, source: str | None = None) -> Callable[[Callable[..., object]], Kernel]: ...
def kernel(
    fn: Callable[..., object] | Kernel | None = None, *, source: str | None = None
) -> Kernel | Callable[[Callable[..., object]], Kernel]:
    """``@ph.kernel``: the function spells a Phobos kernel; ``kernel[grid](args...)`` launches it.

    ``@ph.kernel(source=text)``: ``text`` is the Python of the kernel's module (its imports,
    consts, fns and this def), for code that Python keeps no text of (``python -c``, ``exec``
    of a string); files and notebook cells need none.
    """
    if fn is None:
        return lambda f: kernel(f, source=source)
    return fn if isinstance(fn, Kernel) else Kernel(fn, source)


class Kernel:
    """A Phobos kernel spelled in Python."""

    def __init__(self, fn: Callable[..., object], source: str | None = None) -> None:
        self.name = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.definition = Definition(fn, source)
        self.file = self.definition.file
        self.dispatcher = Dispatcher(self.definition)
        self._last_indexed: Launch | None = None  # kernel[grid] of the last grid, made once

    def __repr__(self) -> str:
        return f"<phobos kernel {self.name} from {self.file}>"

    @property
    def program(self) -> Program:
        """The front end's translation of the kernel's module (``phobos.frontend.Program``)."""
        return self.definition.program

    @property
    def source(self) -> str:
        """The Phobos text of the program this kernel spells (its module's consts and fns, then it)."""
        return self.definition.source

    @property
    def space(self) -> TuneSpace:
        """The kernel's ``@autotune`` space (``phobos.compile.TuneSpace``)."""
        return self.definition.space

    def lower(self, values: Mapping[str, int]) -> Lowered:
        """The checked tile IR of one variant (memoised)."""
        return self.dispatcher.lower(values)

    def __getitem__(self, grid: Grid) -> Launch:
        launch = self._last_indexed
        if launch is not None and (
            launch.grid is grid  # type: ignore[attr-defined]
            or (grid.__class__ is tuple and launch.grid.__class__ is tuple and launch.grid == grid)  # type: ignore[attr-defined]
        ):
            return launch
        launch = self._last_indexed = self.dispatcher.launcher(grid)
        return launch

    def compile(self, arch: str = "sm_90", **values: int) -> CachedKernel:
        """Compile one variant ahead of time, no GPU needed; returns the compiled kernel."""
        with user_facing():
            variant = Variant.of(self.definition.values_for(values))
            return self.dispatcher.compile(variant, arch, None)

    def reference(self, fn: Callable[..., None]) -> Callable[..., None]:
        """``@kernel.reference``: ``fn(*args)`` writes the outputs every variant must match.

        It is called with copies of a launch's arguments (docs/autotuning.md).
        """
        self.dispatcher.tuning.set_reference(fn)
        self.dispatcher.forget_choices()
        return fn

    def tuning_key(self, fn: ShapeKey) -> ShapeKey:
        """``@kernel.tuning_key``: ``fn(extents, dtypes)`` returns the shape part of the key
        (JSON data); launches with equal keys share one tuning result."""
        self.dispatcher.tuning.shape_key = fn
        self.dispatcher.forget_choices()
        return fn

    def requires(self, fn: Requirement) -> Requirement:
        """``@kernel.requires``: ``fn(values, extents)`` says why a variant (its compile-time
        names) cannot be right for a launch's extents, or returns None; the tuner prunes such
        variants with that reason, before compiling them, and never chooses one."""
        self.dispatcher.tuning.requirement = fn
        self.dispatcher.forget_choices()
        return fn

    def tuning_report(self) -> Report:
        """The report of this kernel's latest tuning in this process (print it for a table)."""
        return self.dispatcher.tuning.report(self.name)

    def autotune(
        self, *args: Any, grid: Grid, options: Options | None = None, **fixed: int
    ) -> dict[str, int]:
        """Tune now for these arguments (numpy arrays tune in the CPU interpreter); returns the
        choice, which later launches with the same key use.  ``options``: an
        ``phobos.autotune.Options``."""
        with user_facing():
            return self.dispatcher.tune(grid, args, fixed, options, caller=sys._getframe(1))


__all__ = ["Kernel", "PhobosError", "autotune", "func", "kernel"]
