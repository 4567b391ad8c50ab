"""The GPU path of ``kernel[grid](...)``: pick the variant, compile it once, launch it.

A variant is the kernel's compile-time values plus what the arguments allow the
code to assume (each tensor's alignment and unit last stride, the index width).
Arguments that allow less get a less specialised variant, never wrong results:
a strided view gets strided code, more than 2^31 elements get 64-bit indices.

Compiled variants come from the shared kernel cache (``phobos.compile.cached``)
and are loaded once per process; the steady-state launch is a dictionary hit
and ``LoadedKernel.launch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from phobos.compile.codegen import Specialization, TensorSpecialization
from phobos.launch import load_kernel, needs_index64, shared_driver, specialization_of

if TYPE_CHECKING:
    from phobos.compile.cached import CachedKernel
    from phobos.lang.kernel import Grid, Kernel
    from phobos.launch import LoadedKernel


def device_arch(device: int) -> str:
    """The target the driver loads a cubin for: ``sm_86``, or ``sm_90a`` for an H100/H200
    (the architecture-specific target, whose cubin runs only there: it has ``wgmma``)."""
    major, minor = shared_driver().compute_capability(device)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def specialization(kernel: Kernel, args: Sequence[Any]) -> Specialization:
    """What these arguments allow the code to assume."""
    facts = specialization_of(args)
    names = kernel.tensor_params
    tensors = {
        names[position]: TensorSpecialization(align=f["align"], unit_stride=f["unit_stride"])
        for position, f in facts.items()
        if position < len(names) and names[position] is not None
    }
    return Specialization.of(64 if needs_index64(args) else 32, **tensors)


def compile_variant(
    kernel: Kernel, values: Mapping[str, int], *, arch: str, spec: Specialization | None
) -> CachedKernel:
    """One variant through the shared cache (``.ptx``, ``.cubin``, ``.contract``, ``.from_cache``)."""
    from phobos.compile.cached import compile_cached

    return compile_cached(kernel.program.module, kernel.name, values, arch=arch, spec=spec)


def launch(
    kernel: Kernel,
    grid: Grid,
    args: Sequence[Any],
    values: Mapping[str, int],
    *,
    stream: Any,
) -> LoadedKernel:
    """Launch the variant ``values`` (compiled and loaded on first use) on GPU arrays."""
    spec = specialization(kernel, args)
    key = (tuple(sorted(values.items())), spec)
    loaded = kernel.loaded.get(key)
    if loaded is None:
        device = device_of(args)
        compiled = compile_variant(kernel, values, arch=device_arch(device), spec=spec)
        loaded = load_kernel(compiled.contract.to_json(), cubin=compiled.cubin, ptx=compiled.ptx)
        kernel.loaded[key] = loaded
    loaded.launch(grid, args, stream=stream)
    return loaded


def device_of(args: Sequence[Any]) -> int:
    """The ordinal of the GPU holding the first device array (the launch checks the rest)."""
    for arg in args:
        if type(arg).__module__.startswith("torch") and getattr(arg, "is_cuda", False):
            return arg.device.index or 0
        cai = getattr(arg, "__cuda_array_interface__", None)
        if cai is not None and cai["data"][0]:
            return shared_driver().pointer_device(cai["data"][0])
    return 0


def race_check(kernel: Kernel, grid: Grid, args: Sequence[Any], values: Mapping[str, int]) -> None:
    """Run the launch in the interpreter on host copies of the arrays, checking for races.

    Raises ``RaceError`` naming both lines; the copies are discarded, and the real
    launch follows only when the check passes.
    """
    from phobos.compile.interp import run
    from phobos.lang.kernel import extents_of, resolve_grid

    host = [to_host(a) for a in args]
    ir = kernel.lower(values)
    run(ir, resolve_grid(kernel.name, grid, extents_of(ir, host), values), host, race_check=True)


def to_host(arg: Any) -> Any:
    """A numpy copy of a GPU array (torch, CuPy, Numba); scalars pass through."""
    if type(arg).__module__.startswith("torch"):
        return arg.detach().cpu().numpy()
    if hasattr(arg, "copy_to_host"):
        return arg.copy_to_host()
    if hasattr(arg, "get") and hasattr(arg, "__cuda_array_interface__"):
        return arg.get()
    return arg
