"""``@ph.kernel``, ``@ph.func``, ``@ph.autotune``: Python functions that spell Phobos.

A decorated function is never called.  ``Kernel`` remembers where it was defined;
the first use (``.source``, a launch, ``.compile``) translates the module's source
with the front end.  ``kernel[grid](args...)`` runs the kernel: in the CPU
interpreter when the arrays are numpy arrays, on the GPU when they offer
``__cuda_array_interface__``.
"""

from __future__ import annotations

import inspect
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from types import FrameType
from typing import Any

from phobos.compile.diagnostics import PhobosError
from phobos.lang import arrays
from phobos.lang.errors import call_site, located_launch_error, user_facing
from phobos.lang.tuning import choose_variant, launch_signature
from phobos.launch.errors import LaunchError

Grid = Sequence[int] | Callable[[Mapping[str, int]], Sequence[int]]


def autotune(**space: Any) -> Callable[[Any], Any]:
    """``@ph.autotune(BLOCK=[16, 8192], BN={64, 128})``: the kernel's compile-time search space.

    A list ``[a, b]`` is the powers of two from a to b; a set is exactly its values.
    The front end reads the decorator from the source; at run time it changes nothing.
    """

    def mark(target: Any) -> Any:
        return target

    return mark


def func(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@ph.func``: a Phobos ``fn``, inlined where a kernel calls it (never run by Python)."""
    return fn


def kernel(fn: Any) -> Kernel:
    """``@ph.kernel``: the function spells a Phobos kernel; ``kernel[grid](args...)`` launches it."""
    return fn if isinstance(fn, Kernel) else Kernel(fn)


class Kernel:
    """A Phobos kernel spelled in Python."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.name = fn.__name__
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._variants: dict[tuple[tuple[str, int], ...], Any] = {}
        self.loaded: dict[Any, Any] = {}  # (values, specialisation) → phobos.launch.LoadedKernel
        # The keywords and LoadedKernel of the last GPU launch that fixed every compile-time name.
        self.last_launch: tuple[dict[str, int], Any] | None = None
        # The keywords, launch signature and LoadedKernel of the last GPU launch whose variant
        # the tuner chose: a launch with the same ones takes that variant's fast path.
        self.last_tuned: tuple[dict[str, int], tuple[Any, ...], Any] | None = None
        self._last_indexed: Any = None  # kernel[grid] of the last grid, made once

    def __repr__(self) -> str:
        return f"<phobos kernel {self.name} from {self.file}>"

    @cached_property
    def program(self) -> Any:
        """The front end's translation of the kernel's module (``phobos.frontend.Program``)."""
        from phobos.frontend import translate_file

        with user_facing():
            return translate_file(self.file)

    @property
    def source(self) -> str:
        """The Phobos text of the program this kernel spells (its module's consts and fns, then it)."""
        return self.program.kernel_source(self.name)

    @cached_property
    def space(self) -> Any:
        """The kernel's ``@autotune`` space (``phobos.compile.check.TuneSpace``)."""
        from phobos.compile.check import tune_space

        with user_facing():
            return tune_space(self.program.module, self.name)

    @cached_property
    def tensor_params(self) -> tuple[str | None, ...]:
        """Each parameter's name if it is a tensor, else None, in declaration order."""
        from phobos.compile.syntax.ast import TensorType

        return tuple(
            p.name if isinstance(p.type, TensorType) else None
            for p in self.program.module.kernel(self.name).params
        )

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

    def _integer(self, name: str, value: Any) -> int:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        from phobos.compile.diagnostics import error

        raise error(
            self.program.module.kernel(self.name).span,
            f"the value of '{name}' must be an integer, got {value!r}",
            help=f"give {name}=<int>, one of the values its @autotune space allows",
        )

    def lower(self, values: Mapping[str, int]) -> Any:
        """The checked tile IR of one variant (memoised)."""
        key = tuple(sorted(values.items()))
        if key not in self._variants:
            from phobos.compile.check import lower
            from phobos.compile.races.warn import warn_races

            with user_facing():
                self._variants[key] = lower(self.program.module, self.name, values)
            warn_races(self._variants[key])
        return self._variants[key]

    def __getitem__(self, grid: Grid) -> Callable[..., None]:
        launch = self._last_indexed
        if launch is not None and (
            launch.grid is grid
            or (grid.__class__ is tuple and launch.grid.__class__ is tuple and launch.grid == grid)
        ):
            return launch
        launch = self._last_indexed = launcher(self, grid)
        return launch

    def compile(self, arch: str = "sm_90", **values: int) -> Any:
        """Compile one variant ahead of time, no GPU needed; returns the compiled kernel."""
        from phobos.lang import gpu

        with user_facing():
            return gpu.compile_variant(self, self.values_for(values), arch=arch, spec=None)

    def reference(self, fn: Callable[..., None]) -> Callable[..., None]:
        """``@kernel.reference``: ``fn(*args)`` writes the outputs every variant must match.

        It is called with copies of a launch's arguments (docs/autotuning.md).
        """
        from phobos.lang import tuning

        tuning.set_reference(self, fn)
        return fn

    def tuning_key(self, fn: Callable[[dict[str, int], dict[str, str]], Any]) -> Callable[..., Any]:
        """``@kernel.tuning_key``: ``fn(extents, dtypes)`` returns the shape part of the key
        (JSON data); launches with equal keys share one tuning result."""
        from phobos.lang import tuning

        tuning.set_shape_key(self, fn)
        return fn

    def tuning_report(self) -> Any:
        """The report of this kernel's latest tuning in this process (print it for a table)."""
        from phobos.lang import tuning

        return tuning.report_of(self)

    def autotune(self, *args: Any, grid: Grid, options: Any = None, **fixed: int) -> dict[str, int]:
        """Tune now for these arguments (numpy arrays tune in the CPU interpreter); returns the
        choice, which later launches with the same key use.  ``options``: an
        ``phobos.autotune.Options``."""
        from phobos.lang import tuning

        with user_facing():
            return tuning.tune(self, grid, args, fixed, arrays.placement(args), options)


def launcher(kernel: Kernel, grid: Grid) -> Callable[..., None]:
    """``kernel[grid]``: a function of the kernel's arguments (and optional keywords) that launches.

    The steady-state launch is the figure for host time per launch.  Once the kernel
    has launched on a GPU, the steady state runs in C where the native launch path is
    built (``phobos.launch.native.steady_call``), with this closure taking every
    other call; before that, and without it, the closure is all.
    """

    def launch(*args: Any, stream: Any = None, race_check: bool = False, **values: int) -> None:
        last = kernel.last_launch
        if (
            last is not None
            and not race_check
            and last[0] == values
            and last[1].try_launch(grid, args, stream) == 0
        ):
            return  # the steady state: the same fixed variant on GPU arrays, its fast path
        with user_facing():  # a PhobosError shows the caller's frame, not this one
            launch_fully(kernel, grid, args, stream, race_check, values, sys._getframe(1))

    launch.grid = grid  # type: ignore[attr-defined]
    if kernel.last_launch is None:
        return launch

    def launch_unsteadily(
        *args: Any, stream: Any = None, race_check: bool = False, **values: int
    ) -> None:
        """What the steady state in C hands over (it has tried the fast path already)."""
        with user_facing():
            launch_fully(kernel, grid, args, stream, race_check, values, sys._getframe(1))

    from phobos.launch.native import steady_call

    return steady_call(kernel, grid, launch_unsteadily) or launch


def launch_fully(
    kernel: Kernel,
    grid: Grid,
    args: Sequence[Any],
    stream: Any,
    race_check: bool,
    values: dict[str, int],
    caller: FrameType,
) -> None:
    """Every launch the fast path did not take: pick the variant, then interpret or launch it.

    The last variant's reference path comes first (it takes what its fast path could
    not, such as another thread's first launch); then, for a launch that leaves names
    to the tuner, the fast path of the variant tuned for the same signature (shapes,
    dtypes, GPU); what neither takes goes on to choose a variant that fits, or raises
    the launcher's message at the caller's line.
    """
    last = kernel.last_launch
    if last is not None and not race_check and last[0] == values:
        try:
            last[1].launch(grid, args, stream=stream)
            return
        except LaunchError:
            pass
    tuned = kernel.last_tuned
    if (
        tuned is not None
        and not race_check
        and tuned[0] == values
        and tuned[1] == launch_signature(args, values)
        and tuned[2].try_launch(grid, args, stream) == 0
    ):
        return  # the tuned variant of the same signature, on its fast path
    where = arrays.placement(args)
    with user_facing():
        try:
            variant = choose_variant(kernel, grid, args, values, where)
        except LaunchError as exc:  # a grid that no variant can launch on, say
            raise located_launch_error(kernel, exc, call_site(caller)) from None
    if where == "host":
        with user_facing():
            ir = kernel.lower(variant)
            from phobos.compile.interp import run

            try:
                dims = resolve_grid(kernel.name, grid, extents_of(ir, args), variant)
            except LaunchError as exc:
                raise located_launch_error(kernel, exc, call_site(caller)) from None
            run(ir, dims, [arrays.host_view(a) for a in args], race_check=race_check)
        return
    from phobos.lang import gpu

    with user_facing():
        try:
            if race_check:
                gpu.race_check(kernel, grid, args, variant)
            loaded = gpu.launch(kernel, grid, args, variant, stream=stream)
        except LaunchError as exc:
            raise located_launch_error(kernel, exc, call_site(caller)) from None
    fixes_all = set(values) >= set(kernel.space.names)
    if fixes_all and kernel.last_launch is None:
        kernel._last_indexed = None  # the next kernel[grid] can take the steady state in C
    kernel.last_launch = (values, loaded) if fixes_all else None
    kernel.last_tuned = None if fixes_all else (values, launch_signature(args, values), loaded)


def extents_of(ir: Any, args: Sequence[Any]) -> dict[str, int]:
    """Named extents read from the arrays' shapes (the launch checks that they agree)."""
    extents: dict[str, int] = {}
    for param, arg in zip(ir.params, args):
        dims = getattr(param, "dims", None)
        shape = getattr(arg, "shape", None)
        if dims is None or shape is None:
            continue
        for dim, size in zip(dims, shape):
            if isinstance(dim, str):
                extents.setdefault(dim, int(size))
    return extents


def resolve_grid(
    name: str, grid: Grid, extents: Mapping[str, int], values: Mapping[str, int]
) -> tuple[int, int, int]:
    """The block counts of an interpreter launch, by the GPU launcher's rule.

    ``grid`` is a tuple of 1 to 3 counts, or ``lambda meta: ...`` called with the
    variant's compile-time values and the named extents; ``phobos.launch.grid`` checks
    it exactly as a GPU launch does (ints only, within the hardware limits) and raises
    its ``LaunchError``.  A grid with a zero launches nothing: ``(0, 1, 1)``.
    """
    from phobos.launch.grid import call_grid, grid_dims

    if callable(grid):
        grid = call_grid(name, grid, {**values, **extents})
    dims = grid_dims(name, grid)
    return (0, 1, 1) if dims is None else dims


__all__ = ["Kernel", "PhobosError", "autotune", "func", "kernel", "launcher"]
