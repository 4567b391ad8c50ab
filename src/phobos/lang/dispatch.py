"""One kernel's path from ``kernel[grid](...)`` to the driver, or to the CPU interpreter.

A ``Dispatcher`` per kernel owns what a launch needs once the kernel is defined: which
variant a launch uses (``choose``), the memo of lowered, compiled and loaded variants,
the kernel's tuning state, and the steady state that the fast path reads.

The steady-state launch is ``kernel[grid]`` remembered for the last grid (a
``SteadyCall`` in C where phobos-launch's native path is built) calling the last fixed
variant's ``try_launch``; every other launch comes to ``launch`` here, which reads the
arguments once (``phobos.launch.read_arguments``) and then:

* numpy arrays: the variant's tile IR in the interpreter;
* GPU arrays: the checks every variant makes (no driver needed, so a wrong dtype is
  reported as one anywhere), the GPU, the variant (fixed by keyword, else tuned), what
  the arguments allow it to assume (each tensor's alignment and unit last stride, the
  index width: arguments that allow less get a less specialised variant, never wrong
  results), compiled through the kernel cache and loaded once per process, launched.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

import phobos.compile as compiler
from phobos.autotune import Options, VariantsDisagree, cached_report, tune, usable
from phobos.compile import Specialization, TensorSpecialization
from phobos.lang import tuning
from phobos.lang.definition import Definition
from phobos.lang.errors import call_site, located_launch_error, user_facing
from phobos.lang.tuning import HOST_ARCH, TuningState
from phobos.lang.variant import Grid, Lowered, Variant, extents_of, resolve_grid
from phobos.launch import (
    HOST,
    ArrayFields,
    CudaError,
    LaunchError,
    LoadedKernel,
    SteadyState,
    alignment_of,
    host_copy,
    host_view,
    index64_of,
    load_kernel,
    read_arguments,
    shared_driver,
    steady_call,
    unit_stride_of,
)

if TYPE_CHECKING:
    from phobos.compile import CachedKernel

Launch = Callable[..., None]


def device_arch(device: int) -> str:
    """The target the driver loads a cubin for: ``sm_86``, or ``sm_90a`` for an H100/H200
    (the architecture-specific target, whose cubin runs only there: it has ``wgmma``)."""
    major, minor = shared_driver().compute_capability(device)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def placement(arrays: Sequence[ArrayFields | None]) -> str:
    """ "device" if any argument is a GPU array, else "host"; a mix is refused."""
    device = [i for i, f in enumerate(arrays) if f is not None and f[4] != HOST]
    host = [i for i, f in enumerate(arrays) if f is not None and f[4] == HOST]
    if device and host:
        raise TypeError(
            f"argument {host[0] + 1} is in host memory but argument {device[0] + 1} is on a GPU; "
            "pass every array on the same device (numpy arrays run in the CPU interpreter)"
        )
    return "device" if device else "host"


class Dispatcher:
    """Selection, the memo of variants, tuning state and the steady state of one kernel."""

    def __init__(self, definition: Definition) -> None:
        self.definition = definition
        self.lowered: dict[Variant, Lowered] = {}
        self.loaded: dict[tuple[Variant, Specialization], LoadedKernel] = {}
        # The keywords and LoadedKernel of the last GPU launch that fixed every compile-time
        # name (``steady.last_launch``): read on every steady-state launch, in C.
        self.steady = SteadyState()
        # The keywords, signature and LoadedKernel of the last GPU launch whose variant the
        # tuner chose: a launch with the same ones takes that variant's fast path.
        self.tuned: tuple[dict[str, int], tuple[object, ...], LoadedKernel] | None = None
        self.tuning = TuningState()

    def launcher(self, grid: Grid) -> Launch:
        """``kernel[grid]``: a function of the kernel's arguments (and keywords) that launches.

        Where phobos-launch's native path is built this is its ``SteadyCall``: a call
        whose keywords match ``steady.last_launch`` goes straight to that variant's fast
        path, in C; any other goes to ``unsteady``.  Elsewhere the Python below does the
        same.
        """
        steady = self.steady

        def launch(*args: Any, stream: Any = None, race_check: bool = False, **values: int) -> None:
            last = steady.last_launch
            if (
                last is not None
                and not race_check
                and last[0] == values
                and last[1].try_launch(grid, args, stream) == 0
            ):
                return  # the steady state: the same fixed variant on GPU arrays, its fast path
            with user_facing():  # a PhobosError shows the caller's frame, not this one
                self.launch(grid, args, stream, race_check, values, sys._getframe(1))

        def unsteady(
            *args: Any, stream: Any = None, race_check: bool = False, **values: int
        ) -> None:
            """What the steady state in C hands over (it has tried the fast path already)."""
            with user_facing():
                self.launch(grid, args, stream, race_check, values, sys._getframe(1))

        launch.grid = grid  # type: ignore[attr-defined]
        return steady_call(steady, grid, unsteady) or launch

    def launch(
        self,
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
        last = self.steady.last_launch
        if last is not None and not race_check and last[0] == values:
            try:
                last[1].launch(grid, args, stream=stream)
                return
            except LaunchError:
                pass
        arrays = self._read(args, caller)
        if placement(arrays) == "host":
            variant = self.choose(grid, args, arrays, values, "host")
            ir = self.lower(variant)
            dims = resolve_grid(grid, extents_of(ir.params, args), variant)
            compiler.run(ir, dims, [host_view(a) for a in args], race_check=race_check)
            return
        tuned = self.tuned
        if tuned is not None and not race_check and tuned[0] == values:
            device = self._device(arrays, caller, strict=False)  # its fast path checks the rest
            if (
                device is not None
                and tuned[1] == tuning.signature(args, arrays, values, device)
                and tuned[2].try_launch(grid, args, stream) == 0
            ):
                return  # the tuned variant of the same signature, on its fast path
        self._check(args, arrays, caller)
        device = self._device(arrays, caller, strict=True)
        variant = self.choose(grid, args, arrays, values, "device", device)
        if race_check:
            self.race_check(grid, args, variant)
        loaded = self.load(variant, self.specialization(arrays), device)
        try:
            loaded.launch(grid, args, stream=stream, arrays=arrays)
        except LaunchError as exc:
            raise located_launch_error(self.definition.declared, exc, call_site(caller)) from None
        if set(values) >= set(self.definition.space.names):
            self.steady.last_launch, self.tuned = (values, loaded), None
        else:
            signature = tuning.signature(args, arrays, values, device)
            self.steady.last_launch, self.tuned = None, (values, signature, loaded)

    def choose(
        self,
        grid: Grid,
        args: Sequence[Any],
        arrays: Sequence[ArrayFields | None],
        fixed: Mapping[str, int],
        where: str,
        device: int = 0,
    ) -> Variant:
        """The compile-time values for this launch (``where`` is "host" or "device").

        * every name of the ``@autotune`` space fixed by keyword: exactly those values;
        * a GPU launch: the tuned choice for the launch's key, tuning on first use (the
          result is kept in this process and in the kernel cache, so the next process
          does not tune again);
        * a host (numpy) launch: the space's default, unless ``kernel.autotune(...)``
          tuned this key in this process.
        """
        definition, state = self.definition, self.tuning
        if all(name in fixed for name in definition.space.names) or (
            where == "host" and not state.by_key
        ):
            return Variant.of(definition.values_for(fixed))
        if where == "host":
            found = state.by_key.get(tuning.launch_key(definition, state, arrays, fixed, HOST_ARCH))
            return Variant.of(found.choice if found else definition.values_for(fixed))
        signature = tuning.signature(args, arrays, fixed, device)
        choice = state.by_launch.get(signature)
        if choice is None:
            # A key this process tuned already (kernel.autotune, with its own options) is used
            # as it is, as on the host.
            found = None
            if state.by_key:
                key = tuning.launch_key(definition, state, arrays, fixed, self.chip(device))
                found = state.by_key.get(key)
            if found is not None:
                choice = dict(found.choice)
            else:
                budget = os.environ.get(tuning.BUDGET_ENV)
                options = Options(budget_s=float(budget)) if budget else None
                choice = self.tune(grid, args, fixed, options, arrays=arrays, device=device)
            state.by_launch[signature] = choice
        return Variant.of(choice)

    def tune(
        self,
        grid: Grid,
        args: Sequence[Any],
        fixed: Mapping[str, int],
        options: Options | None = None,
        *,
        arrays: Sequence[ArrayFields | None] | None = None,
        device: int | None = None,
        caller: FrameType | None = None,
    ) -> dict[str, int]:
        """Tune the launch's key (or read it from the cache) and return the choice.

        ``kernel.autotune`` calls it with the arguments alone (numpy arrays tune in the CPU
        interpreter); a launch, with what it read of them.  Without a reference function,
        variants that disagree raise a ``PhobosError`` at the kernel's definition
        (``DisagreeingVariants``), unless ``options.on_disagreement`` is "default";
        ``kernel.tuning_report()`` then shows the groups.
        """
        definition, state = self.definition, self.tuning
        definition.values_for(fixed)  # unknown keywords are refused before anything runs
        fixed = {name: int(value) for name, value in fixed.items()}
        checked = arrays is not None
        frame = caller or sys._getframe(1)
        arrays = arrays if arrays is not None else self._read(args, frame)
        where = placement(arrays)
        if not checked:
            self._check(args, arrays, frame)
        options = options or Options()
        if where == "device" and device is None:
            device = self._device(arrays, frame, strict=True)
        chip = HOST_ARCH if device is None else self.chip(device)
        key = tuning.launch_key(definition, state, arrays, fixed, chip)
        report = None if options.retune else cached_report(key)
        if report is None or not usable(report, options):
            if device is None:
                problem = tuning.host_problem(
                    definition, state, grid, args, arrays, fixed, key, self.lower
                )
            else:
                target = (device, device_arch(device), self.specialization(arrays))
                problem = tuning.device_problem(
                    definition, state, grid, args, arrays, fixed, key, target, self.load
                )
            try:
                report = tune(problem, options)
            except VariantsDisagree as exc:
                state.last = exc.report
                raise tuning.disagreeing_variants(definition, exc) from None
        state.by_key[key] = state.last = report
        self.tuned = None  # the next launch takes this choice, not the last one's variant
        return dict(report.choice)

    def forget_choices(self) -> None:
        """Launches choose again (and the tuned variant's fast path is not taken until then)."""
        self.tuning.by_launch.clear()
        self.tuned = None

    def lower(self, values: Mapping[str, int]) -> Lowered:
        """The checked tile IR of one variant (memoised; its race warnings issued once)."""
        variant = Variant.of(values)
        ir = self.lowered.get(variant)
        if ir is None:
            definition = self.definition
            with user_facing():
                ir = compiler.lower(definition.program.module, definition.name, dict(variant))
            compiler.warn_races(ir)
            self.lowered[variant] = ir
        return ir

    def compile(self, variant: Variant, arch: str, spec: Specialization | None) -> CachedKernel:
        """One variant through the shared kernel cache (``.ptx``, ``.cubin``, ``.contract``)."""
        definition = self.definition
        return compiler.compile_cached(
            definition.program.module, definition.name, dict(variant), arch=arch, spec=spec
        )

    def load(
        self,
        variant: Variant,
        spec: Specialization,
        device: int,
        compiled: CachedKernel | None = None,
    ) -> LoadedKernel:
        """The variant compiled for ``device`` (unless given) and loaded, once per process."""
        loaded = self.loaded.get((variant, spec))
        if loaded is None:
            if compiled is None:
                compiled = self.compile(variant, device_arch(device), spec)
            contract = compiled.contract.to_json()
            loaded = load_kernel(contract, cubin=compiled.cubin, ptx=compiled.ptx)
            self.loaded[(variant, spec)] = loaded
        return loaded

    def specialization(self, arrays: Sequence[ArrayFields | None]) -> Specialization:
        """What these arguments allow a variant's code to assume."""
        names = self.definition.tensor_params
        tensors = {
            names[position]: TensorSpecialization(alignment_of(f[0]), unit_stride_of(f))
            for position, f in enumerate(arrays)
            if f is not None and position < len(names) and names[position] is not None
        }
        wide = any(index64_of(f) for f in arrays if f is not None)
        return Specialization.of(64 if wide else 32, **tensors)  # type: ignore[arg-type]

    def race_check(self, grid: Grid, args: Sequence[Any], variant: Variant) -> None:
        """Run the launch in the interpreter on host copies of the arrays, checking for races.

        Raises ``RaceError`` naming both lines; the copies are discarded, and the real
        launch follows only when the check passes.
        """
        host = [host_copy(a) for a in args]
        ir = self.lower(variant)
        dims = resolve_grid(grid, extents_of(ir.params, host), variant)
        compiler.run(ir, dims, host, race_check=True)

    @staticmethod
    def chip(device: int) -> str:
        """The GPU a tuning result is for: its architecture and name ("sm_90a NVIDIA H200"), so
        an H100 and an H200 (one architecture, different memory) keep their own results."""
        return f"{device_arch(device)} {shared_driver().device_name(device)}"

    def _read(self, args: Sequence[Any], caller: FrameType) -> list[ArrayFields | None]:
        definition = self.definition
        names = [p.name for p in definition.params]
        try:
            return read_arguments(args, names, definition.name)
        except LaunchError as exc:
            raise located_launch_error(definition.declared, exc, call_site(caller)) from None

    def _check(
        self, args: Sequence[Any], arrays: Sequence[ArrayFields | None], caller: FrameType
    ) -> None:
        """The checks every variant makes, which need no driver, at the caller's line."""
        definition = self.definition
        try:
            definition.checks.check_read(args, arrays)
        except LaunchError as exc:
            raise located_launch_error(definition.declared, exc, call_site(caller)) from None

    def _device(
        self, arrays: Sequence[ArrayFields | None], caller: FrameType, strict: bool
    ) -> int | None:
        """The GPU of the first array that says, or that the driver names for its pointer (the
        launch checks the rest); 0 with no array.  Not ``strict``: None when the driver cannot
        say (no driver, or a pointer it does not know)."""
        for position, fields in enumerate(arrays):
            if fields is None:
                continue
            if fields[4] is not None:
                return fields[4]
            if fields[0]:
                try:
                    return shared_driver().pointer_device(fields[0])
                except CudaError as exc:
                    if not strict:
                        return None
                    if exc.code is None:  # no driver at all
                        raise
                    name = self.definition.params[position].name
                    error = LaunchError(
                        f"{self.definition.name}: {name}: its data pointer {fields[0]:#x} is "
                        f"not GPU memory the CUDA driver knows ({exc.name}); pass an array "
                        "allocated on a GPU",
                        name,
                    )
                    site = call_site(caller)
                    raise located_launch_error(self.definition.declared, error, site) from None
        return 0
