"""Which variant a launch uses, and the adapter from a Phobos kernel to ``phobos.autotune``.

``choose_variant`` is the one place a launch asks for its compile-time values:

* every name of the ``@autotune`` space fixed by keyword: exactly those values;
* a GPU launch: the tuned choice for the launch's key, tuning on first use (the
  result is kept in this process and in the kernel cache, so the next process
  does not tune again);
* a host (numpy) launch: the space's default, unless ``kernel.autotune(...)``
  tuned this key in this process.

The adapter describes a kernel as a ``phobos.autotune.Problem``: the variants of
the space (fixed names applied), how to build one (the GPU: compile through the
kernel cache and load; the host: lower to tile IR for the interpreter), and which
arguments each variant writes and reads.  See docs/autotuning.md.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from phobos.autotune import Options, Problem, Report
    from phobos.lang.kernel import Grid, Kernel

HOST_ARCH = "cpu-interpreter"
BUDGET_ENV = "PHOBOS_AUTOTUNE_BUDGET"  # seconds of timing for a launch that tunes


@dataclass
class TuningState:
    """What one kernel knows about tuning, in this process."""

    reference: Callable[..., None] | None = None
    shape_key: Callable[[dict[str, int], dict[str, str]], Any] | None = None
    by_launch: dict[tuple[Any, ...], dict[str, int]] = field(default_factory=dict)
    by_key: dict[str, Report] = field(default_factory=dict)
    last: Report | None = None
    program_digest: str = ""
    reference_digest: str | None = None


_states: weakref.WeakKeyDictionary[Kernel, TuningState] = weakref.WeakKeyDictionary()


def state_of(kernel: Kernel) -> TuningState:
    state = _states.get(kernel)
    if state is None:
        state = _states[kernel] = TuningState()
    return state


def set_reference(kernel: Kernel, fn: Callable[..., None]) -> None:
    state = state_of(kernel)
    state.reference = fn
    state.reference_digest = _digest(_source_of(fn))
    _forget_choices(kernel, state)


def set_shape_key(kernel: Kernel, fn: Callable[[dict[str, int], dict[str, str]], Any]) -> None:
    state = state_of(kernel)
    state.shape_key = fn
    _forget_choices(kernel, state)


def _forget_choices(kernel: Kernel, state: TuningState) -> None:
    """Launches choose again (and the tuned variant's fast path is not taken until then)."""
    state.by_launch.clear()
    kernel.last_tuned = None


def report_of(kernel: Kernel) -> Report:
    state = _states.get(kernel)
    if state is None or state.last is None:
        raise RuntimeError(
            f"{kernel.name} has not been tuned in this process: launch it on GPU arrays without "
            f"fixing every compile-time name, or call {kernel.name}.autotune(*args, grid=...)"
        )
    return state.last


def choose_variant(
    kernel: Kernel, grid: Grid, args: Sequence[Any], fixed: Mapping[str, int], where: str
) -> dict[str, int]:
    """The compile-time values for this launch (``where`` is "host" or "device")."""
    names = kernel.space.names
    values = kernel.values_for(fixed)  # unknown names and values that are not ints: refused
    if all(name in fixed for name in names):
        return values
    state = _states.get(kernel)
    if where == "host":
        if state is None or not state.by_key:
            return values
        found = state.by_key.get(launch_key(kernel, args, fixed, HOST_ARCH))
        return dict(found.choice) if found is not None else values
    state = state or state_of(kernel)
    signature = launch_signature(args, fixed)
    choice = state.by_launch.get(signature)
    if choice is None:
        budget = os.environ.get(BUDGET_ENV)
        options = _options(budget_s=float(budget)) if budget else None
        choice = state.by_launch[signature] = tune(kernel, grid, args, fixed, "device", options)
    return choice


def tune(
    kernel: Kernel,
    grid: Grid,
    args: Sequence[Any],
    fixed: Mapping[str, int],
    where: str,
    options: Options | None = None,
) -> dict[str, int]:
    """Tune the launch's key (or read it from the cache) and return the choice."""
    from phobos.autotune import cached_report
    from phobos.autotune import tune as search_or_load

    kernel.values_for(fixed)  # unknown keywords are refused before anything runs
    fixed = {name: int(value) for name, value in fixed.items()}
    options = options or _options()
    arch = _arch(args) if where == "device" else HOST_ARCH
    key = launch_key(kernel, args, fixed, _chip(args) if where == "device" else HOST_ARCH)
    report = None if options.retune else cached_report(key)
    if report is None:
        build = _device_problem if where == "device" else _host_problem
        report = search_or_load(build(kernel, grid, args, fixed, key, arch), options)
    state = state_of(kernel)
    state.by_key[key] = state.last = report
    kernel.last_tuned = None  # the next launch takes this choice, not the last one's variant
    return dict(report.choice)


def launch_key(kernel: Kernel, args: Sequence[Any], fixed: Mapping[str, int], chip: str) -> str:
    """The tuning key of a launch (docs/autotuning.md, "The key"); ``chip`` names the GPU
    (``_chip``) or the CPU interpreter."""
    from phobos.autotune import default_shape, tuning_key

    state = state_of(kernel)
    if not state.program_digest:
        state.program_digest = _digest(kernel.source)
    extents, dtypes = _extents_and_dtypes(kernel, args)
    shape_of = state.shape_key or default_shape
    return tuning_key(
        kernel=kernel.name,
        program=state.program_digest,
        arch=chip,
        fixed={name: int(value) for name, value in fixed.items()},
        shape=shape_of(extents, dtypes),
        reference=state.reference_digest,
    )


def _options(**overrides: Any) -> Options:
    from phobos.autotune import Options

    return Options(**overrides)


def launch_signature(args: Sequence[Any], fixed: Mapping[str, int]) -> tuple[Any, ...]:
    """What a launch's key depends on, cheap to compute: shapes, dtypes and the GPU.

    The GPU is part of it because the best variant differs between chips: a process
    with an H100 and an A100 tunes once for each.
    """
    from phobos.lang.gpu import device_of

    signature: list[Any] = [
        (type(a), a.shape, a.dtype) if hasattr(a, "shape") else type(a) for a in args
    ]
    signature.append(device_of(args))
    if fixed:
        signature.append(tuple(sorted(fixed.items())))
    return tuple(signature)


def _extents_and_dtypes(
    kernel: Kernel, args: Sequence[Any]
) -> tuple[dict[str, int], dict[str, str]]:
    """The named extents as the arguments give them, and each parameter's declared dtype."""
    from phobos.compile.syntax.ast import Name, TensorType

    extents: dict[str, int] = {}
    dtypes: dict[str, str] = {}
    for param, arg in zip(kernel.program.module.kernel(kernel.name).params, args):
        if isinstance(param.type, TensorType):
            dtypes[param.name] = param.type.dtype.name
            for dim, size in zip(param.type.dims, getattr(arg, "shape", ())):
                if isinstance(dim, Name):
                    extents.setdefault(dim.id, int(size))
        else:
            dtypes[param.name] = param.type.name
    return extents, dtypes


def _variants(kernel: Kernel, fixed: Mapping[str, int]) -> list[dict[str, int]]:
    """The space's variants with the fixed names applied, each once, in the space's order."""
    seen: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}
    for values in kernel.space.variants():
        variant = {**values, **fixed}
        seen.setdefault(tuple(sorted(variant.items())), variant)
    return list(seen.values())


def _common(
    kernel: Kernel, args: Sequence[Any], fixed: Mapping[str, int], key: str, arch: str
) -> dict[str, Any]:
    """The parts of a Problem that the host and the GPU share."""
    extents, _ = _extents_and_dtypes(kernel, args)
    state = state_of(kernel)
    names = [p.name for p in kernel.program.module.kernel(kernel.name).params]
    return {
        "kernel": kernel.name,
        "key": key,
        "variants": _variants(kernel, fixed),
        "default": kernel.values_for(fixed),
        "arg_names": names,
        "reference": state.reference,
        "extents": extents,
        "exempt": frozenset({"NUM_THREADS", *fixed}),
        "describe": ", ".join([*(f"{n}={v}" for n, v in extents.items()), arch]),
    }


def _host_problem(
    kernel: Kernel, grid: Grid, args: Sequence[Any], fixed: Mapping[str, int], key: str, arch: str
) -> Problem:
    """Variants lowered to tile IR and run by the CPU interpreter on the numpy arrays."""
    from phobos.autotune import Candidate, CpuTimer, Problem
    from phobos.compile.interp import run
    from phobos.compile.interp.binding import bind
    from phobos.lang.arrays import host_view
    from phobos.lang.kernel import extents_of, resolve_grid

    views = [host_view(a) for a in args]

    def load(values: Mapping[str, int], ir: Any) -> Candidate:
        bind(ir, (1,), views)  # arguments that do not fit are the caller's error, not the variant's
        dims = resolve_grid(kernel.name, grid, extents_of(ir, views), values)  # so is the grid
        written, read = _accesses(ir, _positions(kernel))
        return Candidate(lambda: run(ir, dims, views), written, read)

    return Problem(
        **_common(kernel, args, fixed, key, arch),
        args=views,
        compile=lambda values: lower_or_prune(kernel, values),
        load=load,
        timer=CpuTimer(),
    )


def _device_problem(
    kernel: Kernel, grid: Grid, args: Sequence[Any], fixed: Mapping[str, int], key: str, arch: str
) -> Problem:
    """Variants compiled through the kernel cache and launched on the GPU arrays."""
    from phobos.autotune import Candidate, DeviceTimer, Problem, Unfit
    from phobos.lang import gpu
    from phobos.launch import CudaError, LaunchError, load_kernel, shared_driver
    from phobos.launch.streams import current_stream_of, library_of

    device = gpu.device_of(args)
    spec = gpu.specialization(kernel, args)
    driver = shared_driver()
    driver.set_current_context(driver.primary_context(device))
    stream = current_stream_of(library_of(args))(device)
    positions = _positions(kernel)  # also translates the module, before the compile threads

    def compile_variant(values: Mapping[str, int]) -> Any:
        ir = lower_or_prune(kernel, values)  # before NVRTC: a variant past a limit is not built
        return ir, gpu.compile_variant(kernel, values, arch=arch, spec=spec)

    def load(values: Mapping[str, int], built: Any) -> Candidate:
        ir, compiled = built
        memo = (tuple(sorted(values.items())), spec)
        loaded = kernel.loaded.get(memo)
        if loaded is None:
            loaded = load_kernel(
                compiled.contract.to_json(), cubin=compiled.cubin, ptx=compiled.ptx
            )
            try:
                loaded.load_on(device)
            except (LaunchError, CudaError) as exc:
                raise Unfit(str(exc)) from None
            kernel.loaded[memo] = loaded
        loaded.bind(args)  # a bad launch is refused as it would be without tuning
        written, read = _accesses(ir, positions)
        contract = compiled.contract
        written |= {positions[t.name] for t in contract.tensors if t.written}
        read |= {positions[t.name] for t in contract.tensors if t.read}
        return Candidate(lambda: loaded.launch(grid, args, stream=stream), written, read)

    return Problem(
        **_common(kernel, args, fixed, key, arch),
        args=list(args),
        compile=compile_variant,
        load=load,
        timer=DeviceTimer(stream),
    )


def lower_or_prune(kernel: Kernel, values: Mapping[str, int]) -> Any:
    """The variant's tile IR; ``Unfit`` (pruned, with the reason) when it only exceeds limits.

    A variant whose tiles have more lanes than ``phobos.compile.limits`` allows is too
    large to build, not a mistake in the kernel: the tuner reports it as pruned with the
    checker's first line and never compiles it.  Any other error is raised as it is.
    """
    from phobos.autotune import Unfit
    from phobos.compile.diagnostics import PhobosError

    try:
        return kernel.lower(values)
    except PhobosError as exc:
        if exc.only_limits:
            raise Unfit(str(exc).splitlines()[0]) from None
        raise


def _arch(args: Sequence[Any]) -> str:
    from phobos.lang import gpu

    return gpu.device_arch(gpu.device_of(args))


def _chip(args: Sequence[Any]) -> str:
    """The GPU a tuning result is for: its architecture and name ("sm_90a NVIDIA H200"), so an
    H100 and an H200 (one architecture, different memory) keep their own results."""
    from phobos.lang import gpu
    from phobos.launch import shared_driver

    device = gpu.device_of(args)
    return f"{gpu.device_arch(device)} {shared_driver().device_name(device)}"


def _positions(kernel: Kernel) -> dict[str, int]:
    return {name: i for i, name in enumerate(kernel.tensor_params) if name is not None}


def _accesses(ir: Any, positions: Mapping[str, int]) -> tuple[frozenset[int], frozenset[int]]:
    """The argument positions the IR writes (stores, atomic adds) and reads (loads, atomic adds)."""
    from phobos.compile.ir import nodes

    written: set[str] = set()
    read: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, (tuple, list)):
            for item in node:
                visit(item)
            return
        if not is_dataclass(node) or isinstance(node, nodes.TensorParam):
            return
        if isinstance(node, (nodes.Store, nodes.AtomicAdd)):
            written.add(node.tensor.name)
        if isinstance(node, (nodes.Load, nodes.AtomicAdd)):
            read.add(node.tensor.name)
        for f in fields(node):
            visit(getattr(node, f.name))

    visit(ir.body)
    return (
        frozenset(positions[n] for n in written if n in positions),
        frozenset(positions[n] for n in read if n in positions),
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _source_of(fn: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return getattr(fn, "__qualname__", repr(fn))
