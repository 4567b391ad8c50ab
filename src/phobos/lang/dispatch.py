"""One kernel's path from ``kernel[grid](...)`` to the driver, or to the CPU interpreter.

A ``Dispatcher`` per kernel owns which variant a launch uses (``choose``), the memo of
lowered, compiled and loaded variants, the tuning state, and the steady state the fast
path reads.  Every launch the fast path does not take comes to ``launch``: it reads the
arguments once (``phobos.launch.read_arguments``); numpy arrays run in the interpreter;
GPU arrays get the checks every variant makes (no driver needed: a wrong dtype is
reported as one anywhere), then their GPU, the variant (fixed by keyword, else tuned),
what they allow it to assume (alignment, unit last stride, index width: arguments that
allow less get a less specialised variant, never wrong results), compiled through the
kernel cache for the GPU's architecture and loaded once per process and GPU, and the launch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any

import phobos.compile as compiler
from phobos.autotune import Options, VariantsDisagree, cached_report, tune, usable
from phobos.compile import PhobosError, Specialization, TensorSpecialization
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
    row_alignment_of,
    shared_driver,
    steady_call,
    unit_stride_of,
)

if TYPE_CHECKING:
    from phobos.compile import CachedKernel

Launch = Callable[..., None]
Arrays = Sequence[ArrayFields | None]  # each argument as read_arguments read it


def device_arch(device: int) -> str:
    """The target the driver loads a cubin for: ``sm_86``, or ``sm_90a`` for an H100/H200
    (the architecture-specific target, whose cubin runs only there: it has ``wgmma``)."""
    major, minor = shared_driver().compute_capability(device)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def placement(arrays: Arrays) -> str:
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
        # By GPU: each is compiled for its GPU's architecture and pinned to that GPU, so that
        # no launch (the reference path of the last one included) runs it on another chip.
        self.loaded: dict[tuple[Variant, Specialization, int], LoadedKernel] = {}
        # The keywords and LoadedKernel of the last GPU launch that fixed every compile-time
        # name (``steady.last_launch``): read on every steady-state launch, in C.
        self.steady = SteadyState()
        # The keywords, quick signature (``tuning.quick_signature``) and LoadedKernel of the last GPU
        # launch whose variant the tuner chose: a launch with the same ones takes that
        # variant's fast path before reading its arrays.
        self.tuned: tuple[dict[str, int], tuple[object, ...], LoadedKernel] | None = None
        self.tuning = TuningState()

    def launcher(self, grid: Grid) -> Launch:
        """``kernel[grid]``: a function of the kernel's arguments (and keywords) that launches:
        phobos-launch's ``SteadyCall`` where its native path is built, else the same in
        Python.  A call whose keywords match ``steady.last_launch`` goes straight to that
        variant's fast path; any other to ``launch``."""
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

        def unsteady(*args: Any, stream: Any = None, race_check: bool = False, **values: int):
            with user_facing():  # what the steady state in C hands over, having tried it
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
        """Every launch the fast path did not take.  The last variant's reference path comes
        first (another thread's first launch, say); then, for a launch that leaves names to the
        tuner, the fast path of the variant tuned for the same signature (shapes, dtypes, GPU);
        else a variant that fits is chosen and launched, or the launcher's message raised at
        the caller's line."""
        last, tuned = self.steady.last_launch, self.tuned
        if last is not None and not race_check and last[0] == values:
            try:
                return last[1].launch(grid, args, stream=stream)
            except LaunchError:
                pass
        if (
            tuned is not None
            and not race_check
            and tuned[0] == values
            and tuned[1] == tuning.quick_signature(args, values)
            and tuned[2].try_launch(grid, args, stream) == 0
        ):
            return  # the tuned variant of the same shapes and types, on its fast path
        arrays = self._read(args, caller)
        if placement(arrays) == "host":
            with self._at(caller):  # a grid that no variant can launch on, say
                variant = self.choose(grid, args, arrays, values, "host")
            ir = self.lower(variant)
            with self._at(caller):
                dims = resolve_grid(
                    self.definition.name, grid, extents_of(ir.params, args), variant
                )
            return compiler.run(ir, dims, [host_view(a) for a in args], race_check=race_check)
        with self._at(caller):
            self.definition.checks.check_read(args, arrays)
        device = self._device(arrays, caller, strict=True) or 0
        with self._at(caller):
            variant = self.choose(grid, args, arrays, values, "device", device)
            if race_check:
                self.race_check(grid, args, variant)
        loaded = self.load(variant, self.specialization(arrays), device)
        with self._at(caller):
            loaded.launch(grid, args, stream=stream, arrays=arrays)
        if set(values) >= set(self.definition.space.names):
            self.steady.last_launch, self.tuned = (values, loaded), None
        else:
            key = tuning.quick_signature(args, values)
            self.steady.last_launch, self.tuned = None, (values, key, loaded)

    def choose(
        self,
        grid: Grid,
        args: Sequence[Any],
        arrays: Arrays,
        fixed: Mapping[str, int],
        where: str,
        device: int = 0,
    ) -> Variant:
        """The compile-time values for this launch (``where``: "host" or "device"): those fixed by
        keyword when they are all of the space; on the GPU, the choice for the launch's key,
        tuned on first use (or read from the kernel cache, or tuned by ``kernel.autotune`` in
        this process); on the host, the default unless ``kernel.autotune`` tuned the key."""
        definition, state = self.definition, self.tuning
        default = definition.values_for(fixed)
        if set(fixed) >= set(definition.space.names) or (where == "host" and not state.by_key):
            return Variant.of(default)
        if where == "host":
            found = state.by_key.get(tuning.launch_key(definition, state, arrays, fixed, HOST_ARCH))
            return Variant.of(found.choice if found else default)
        signature = tuning.signature(args, arrays, fixed, device)
        choice = state.by_launch.get(signature)
        if choice is None:
            chip = self.chip(device) if state.by_key else ""
            found = state.by_key.get(tuning.launch_key(definition, state, arrays, fixed, chip))
            if found is not None:
                choice = dict(found.choice)
            else:
                budget = os.environ.get(tuning.BUDGET_ENV)
                options = Options(budget_s=float(budget)) if budget else None
                choice = self.tune(grid, args, fixed, options, arrays, device)
            state.by_launch[signature] = choice
        return Variant.of(choice)

    def tune(
        self,
        grid: Grid,
        args: Sequence[Any],
        fixed: Mapping[str, int],
        options: Options | None = None,
        arrays: Arrays | None = None,
        device: int | None = None,
        caller: FrameType | None = None,
    ) -> dict[str, int]:
        """Tune the launch's key (or read it from the cache) and return the choice; ``arrays`` and
        ``device``: what a launch read (``kernel.autotune`` gives the arguments alone).  Variants
        that disagree, without a reference function, raise ``DisagreeingVariants`` at the
        kernel's definition unless ``options.on_disagreement`` is "default"."""
        definition, state = self.definition, self.tuning
        definition.values_for(fixed)  # unknown keywords are refused before anything runs
        fixed = {name: int(value) for name, value in fixed.items()}
        frame = caller or sys._getframe(1)
        checked, arrays = arrays is not None, arrays or self._read(args, frame)
        on_gpu = placement(arrays) == "device"
        if not checked:
            with self._at(frame):
                definition.checks.check_read(args, arrays)
        if on_gpu and device is None:
            device = self._device(arrays, frame, strict=True)
        key = tuning.launch_key(
            definition, state, arrays, fixed, HOST_ARCH if device is None else self.chip(device)
        )
        options = options or Options()
        report = None if options.retune else cached_report(key)
        if report is None or not usable(report, options):
            this = tuning.Tuning(definition, state, grid, args, arrays, fixed, key)
            if device is None:
                problem = this.host_problem(self.lower)
            else:
                target = (device, device_arch(device), self.specialization(arrays))
                problem = this.device_problem(target, self.load)
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
            module, name = self.definition.program.module, self.definition.name
            with user_facing():
                ir = self.lowered[variant] = compiler.lower(module, name, dict(variant))
            compiler.warn_races(ir)
        return ir

    def compile(self, variant: Variant, arch: str, spec: Specialization | None) -> CachedKernel:
        """One variant through the shared kernel cache (``.ptx``, ``.cubin``, ``.contract``)."""
        module, name = self.definition.program.module, self.definition.name
        return compiler.compile_cached(module, name, dict(variant), arch=arch, spec=spec)

    def load(
        self,
        variant: Variant,
        spec: Specialization,
        device: int,
        compiled: CachedKernel | None = None,
    ) -> LoadedKernel:
        """The variant compiled for ``device``'s architecture (unless given) and loaded there,
        once per process and GPU (a second GPU of the same architecture reads the kernel
        cache, not the compiler)."""
        key = (variant, spec, device)
        loaded = self.loaded.get(key)
        if loaded is None:
            compiled = compiled or self.compile(variant, device_arch(device), spec)
            contract = compiled.contract.to_json()
            loaded = load_kernel(contract, cubin=compiled.cubin, ptx=compiled.ptx, device=device)
            self.loaded[key] = loaded
        return loaded

    def specialization(self, arrays: Arrays) -> Specialization:
        """What these arguments allow a variant's code to assume."""
        tensors = {
            name: TensorSpecialization(alignment_of(f[0]), unit_stride_of(f), row_alignment_of(f))
            for name, f in zip(self.definition.tensor_params, arrays)
            if f is not None and name is not None
        }
        wide = any(index64_of(f) for f in arrays if f is not None)
        return Specialization.of(64 if wide else 32, **tensors)

    def race_check(self, grid: Grid, args: Sequence[Any], variant: Variant) -> None:
        """Run the launch in the interpreter on host copies of the arrays: ``RaceError`` naming
        both lines, or the real launch follows (the copies are discarded)."""
        host = [host_copy(a) for a in args]
        ir = self.lower(variant)
        dims = resolve_grid(self.definition.name, grid, extents_of(ir.params, host), variant)
        compiler.run(ir, dims, host, race_check=True)

    @staticmethod
    def chip(device: int) -> str:
        """The GPU a tuning result is for: its architecture and name ("sm_90a NVIDIA H200"), so
        an H100 and an H200 (one architecture, different memory) keep their own results."""
        return f"{device_arch(device)} {shared_driver().device_name(device)}"

    @contextmanager
    def _at(self, caller: FrameType) -> Iterator[None]:
        """A launcher's ``LaunchError`` raised inside, at the caller's line."""
        try:
            yield
        except LaunchError as exc:
            raise located_launch_error(self.definition.declared, exc, call_site(caller)) from None

    def _read(self, args: Sequence[Any], caller: FrameType) -> list[ArrayFields | None]:
        definition = self.definition
        with self._at(caller):
            return read_arguments(args, [p.name for p in definition.params], definition.name)

    def _device(self, arrays: Arrays, caller: FrameType, strict: bool) -> int | None:
        """The GPU of the first tensor's array (the launch checks the rest), asking the driver
        if the array does not say; None with no array, and where not ``strict`` when the
        driver cannot say (no driver, or a pointer it does not know)."""
        checks = self.definition.checks
        first = [f for t in checks.tensors[:1] if (f := arrays[t.position]) is not None]
        try:
            with self._at(caller):
                return checks.devices(
                    first, lambda pointer: shared_driver().pointer_device(pointer)
                )[0]
        except (CudaError, PhobosError):
            if strict:
                raise
            return None
