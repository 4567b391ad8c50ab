"""The adapter from a Phobos kernel to ``phobos.autotune``: tuning keys and tuning problems.

A launch that leaves compile-time names to the tuner is described as a
``phobos.autotune.Problem``: the variants of the space (fixed names applied), how to
build one (the GPU: compile through the kernel cache, then load with the dispatcher's
memo; the host: lower to tile IR for the interpreter), and which arguments each
variant writes and reads.  What a kernel knows about tuning in this process is its
``TuningState``, which its dispatcher holds.  See docs/autotuning.md.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import phobos.compile as compiler
from phobos.autotune import (
    Candidate,
    CpuTimer,
    DeviceTimer,
    Problem,
    Report,
    Unfit,
    VariantsDisagree,
    default_shape,
    tuning_key,
)
from phobos.compile import Diagnostic, PhobosError, Specialization
from phobos.lang.definition import Definition
from phobos.lang.errors import DisagreeingVariants
from phobos.lang.variant import Grid, Lowered, Variant, extents_of, resolve_grid
from phobos.launch import (
    ArrayFields,
    CudaError,
    LaunchError,
    LoadedKernel,
    current_stream_of,
    host_view,
    library_of,
    shared_driver,
)

if TYPE_CHECKING:
    from phobos.compile import CachedKernel

HOST_ARCH = "cpu-interpreter"
BUDGET_ENV = "PHOBOS_AUTOTUNE_BUDGET"  # seconds of timing for a launch that tunes

ShapeKey = Callable[[dict[str, int], dict[str, str]], Any]  # returns JSON data
# Why a variant (its compile-time names) cannot be right for a launch's extents, or None.
Requirement = Callable[[Mapping[str, int], Mapping[str, int]], str | None]
Load = Callable[[Variant, Specialization, int, "CachedKernel"], LoadedKernel]


@dataclass
class TuningState:
    """What one kernel knows about tuning, in this process."""

    reference: Callable[..., None] | None = None
    reference_digest: str | None = None
    shape_key: ShapeKey | None = None
    requirement: Requirement | None = None
    by_launch: dict[tuple[object, ...], dict[str, int]] = field(default_factory=dict)
    by_key: dict[str, Report] = field(default_factory=dict)
    last: Report | None = None

    def set_reference(self, fn: Callable[..., None]) -> None:
        try:
            text = inspect.getsource(fn)
        except (OSError, TypeError):
            text = getattr(fn, "__qualname__", repr(fn))
        self.reference = fn
        self.reference_digest = hashlib.sha256(text.encode()).hexdigest()[:32]

    def report(self, kernel: str) -> Report:
        if self.last is None:
            raise RuntimeError(
                f"{kernel} has not been tuned in this process: launch it on GPU arrays without "
                f"fixing every compile-time name, or call {kernel}.autotune(*args, grid=...)"
            )
        return self.last


def launch_key(
    definition: Definition,
    state: TuningState,
    arrays: Sequence[ArrayFields | None],
    fixed: Mapping[str, int],
    chip: str,
) -> str:
    """The tuning key of a launch (docs/autotuning.md, "The key"); ``chip`` names the GPU
    ("sm_90a NVIDIA H200") or the CPU interpreter."""
    extents, dtypes = definition.extents_and_dtypes(arrays)
    return tuning_key(
        kernel=definition.name,
        program=definition.digest,
        arch=chip,
        fixed={name: int(value) for name, value in fixed.items()},
        shape=(state.shape_key or default_shape)(extents, dtypes),
        reference=state.reference_digest,
    )


def signature(
    args: Sequence[object],
    arrays: Sequence[ArrayFields | None],
    fixed: Mapping[str, int],
    device: int,
) -> tuple[object, ...]:
    """What a launch's key depends on, cheap to compute: shapes, dtypes and the GPU.

    The GPU is part of it because the best variant differs between chips: a process
    with an H100 and an A100 tunes once for each.
    """
    parts: list[object] = [
        type(a) if f is None else (type(a), tuple(f[1]), f[3]) for a, f in zip(args, arrays)
    ]
    parts.append(device)
    if fixed:
        parts.append(Variant.of(fixed))
    return tuple(parts)


def quick_signature(args: Sequence[object], fixed: Mapping[str, int]) -> tuple[object, ...]:
    """A launch's shapes and element types as the arguments give them, read without the
    array adapter: what a launch that leaves names to the tuner compares with the last tuned
    one before taking that variant's fast path (which checks devices, strides and alignment
    itself).  A torch tensor gives its ``shape`` and ``dtype``, any other GPU array its
    ``__cuda_array_interface__`` shape and typestr; anything else its type."""
    parts: list[object] = []
    for a in args:
        kind = type(a)
        if kind.__module__ == "torch" and hasattr(a, "data_ptr"):
            parts.append((kind, a.shape, a.dtype))  # type: ignore[attr-defined]
        elif kind in _SCALARS:
            parts.append(kind)
        else:
            cai = getattr(a, "__cuda_array_interface__", None)
            parts.append(kind if cai is None else (kind, tuple(cai["shape"]), cai["typestr"]))
    parts.append(Variant.of(fixed) if fixed else None)
    return tuple(parts)


_SCALARS = frozenset((int, float, bool))


def disagreeing_variants(definition: Definition, exc: VariantsDisagree) -> DisagreeingVariants:
    """The ``PhobosError`` for ``VariantsDisagree``, at the kernel's definition."""
    name = definition.name
    where = f" ({exc.report.describe})" if exc.report.describe else ""
    message = (
        f"the variants of {name} disagree, and it has no reference function to say which is "
        f"right{where}"
    )
    advice = (
        f"add a reference function (@kernel.reference; here @{name}.reference) that writes the "
        f"outputs every variant must match, or call {name}.autotune(..., "
        'options=Options(on_disagreement="default")) to take the default variant\'s group '
        f"(group 1) as right; {name}.tuning_report() shows every variant"
    )
    diagnostic = Diagnostic("error", message, definition.program.module.kernel(name).span)
    return DisagreeingVariants(diagnostic, exc.lines(), advice, exc.report)


@dataclass(frozen=True)
class Tuning:
    """The tuning of one launch's key: what its ``Problem`` is made of."""

    definition: Definition
    state: TuningState
    grid: Grid
    args: Sequence[Any]
    arrays: Sequence[ArrayFields | None]
    fixed: Mapping[str, int]
    key: str

    def host_problem(self, lower: Callable[[Mapping[str, int]], Lowered]) -> Problem:
        """Variants lowered to tile IR and run by the CPU interpreter on the numpy arrays."""
        views, grid, positions = [host_view(a) for a in self.args], self.grid, self.positions

        def load(values: Mapping[str, int], ir: Lowered) -> Candidate:
            # A grid no launch takes is the caller's error, not the variant's: it is raised.
            dims = resolve_grid(self.definition.name, grid, extents_of(ir.params, views), values)
            found = compiler.accesses(ir)
            written = frozenset(positions[a.tensor] for a in found if a.kind != "load")
            read = frozenset(positions[a.tensor] for a in found if a.kind != "store")
            return Candidate(lambda: compiler.run(ir, dims, views), written, read)

        return self._problem(HOST_ARCH)(
            args=views, compile=pruned_past_limits(lower), load=load, timer=CpuTimer()
        )

    def device_problem(self, target: tuple[int, str, Specialization], load: Load) -> Problem:
        """Variants compiled through the kernel cache and launched on the GPU arrays.

        ``target``: the GPU, its architecture and what the arguments allow the variants to
        assume; ``load`` the dispatcher's memo of loaded variants.
        """
        (device, arch, spec), args, grid, positions = target, self.args, self.grid, self.positions
        driver = shared_driver()
        driver.set_current_context(driver.primary_context(device))
        stream = current_stream_of(library_of(args))(device)
        module = self.definition.program.module  # translated before the compile threads start

        def load_variant(values: Mapping[str, int], compiled: CachedKernel) -> Candidate:
            try:
                loaded = load(Variant.of(values), spec, device, compiled)
                loaded.load_on(device)
            except (LaunchError, CudaError) as exc:
                raise Unfit(str(exc)) from None
            loaded.bind(args, self.arrays)  # a bad launch is refused as it would be untuned
            tensors = compiled.contract.tensors
            written = frozenset(positions[t.name] for t in tensors if t.written)
            read = frozenset(positions[t.name] for t in tensors if t.read)
            return Candidate(lambda: loaded.launch(grid, args, stream=stream), written, read)

        compile_variant = pruned_past_limits(
            partial(compiler.compile_cached, module, self.definition.name, arch=arch, spec=spec)
        )
        return self._problem(arch)(
            args=list(args), compile=compile_variant, load=load_variant, timer=DeviceTimer(stream)
        )

    @property
    def positions(self) -> dict[str, int]:
        return self.definition.positions

    def _problem(self, arch: str) -> partial[Problem]:
        """``Problem`` with the parts that the host and the GPU share."""
        definition, fixed = self.definition, self.fixed
        extents, _ = definition.extents_and_dtypes(self.arrays)
        variants: dict[Variant, dict[str, int]] = {}  # the space's, fixed applied, each once
        for values in definition.space.variants():
            variants.setdefault(Variant.of({**values, **fixed}), {**values, **fixed})
        return partial(
            Problem,
            kernel=definition.name,
            key=self.key,
            variants=list(variants.values()),
            default=definition.values_for(fixed),
            arg_names=[p.name for p in definition.params],
            reference=self.state.reference,
            extents=extents,
            exempt=frozenset({"NUM_THREADS", *fixed}),
            requirement=self.state.requirement,
            describe=", ".join([*(f"{n}={v}" for n, v in extents.items()), arch]),
        )


def pruned_past_limits(
    build: Callable[[Mapping[str, int]], Any],
) -> Callable[[Mapping[str, int]], Any]:
    """``build`` (a variant's lowering, or its compile) with a variant that only exceeds
    limits raised as ``Unfit``: pruned, with the checker's first line.

    A variant whose tiles have more lanes than ``phobos.compile``'s limits allow is too
    large to build, not a mistake in the kernel; the checker refuses it before any code
    is generated, so it is never compiled.  Any other error is raised as it is.
    """

    def build_or_prune(values: Mapping[str, int]) -> Any:
        try:
            return build(values)
        except PhobosError as exc:
            if exc.only_limits:
                raise Unfit(str(exc).splitlines()[0]) from None
            raise

    return build_or_prune
