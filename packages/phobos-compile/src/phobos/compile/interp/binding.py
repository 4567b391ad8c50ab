"""Binding a launch's grid and arguments to a kernel's parameters.

Everything is checked before any block runs, so a launch that fails here has
written nothing.  Each error names the parameter, what it expects and what it was
given, at the parameter's place in the user's source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phobos.compile.diagnostics import Note
from phobos.compile.interp.dtypes import array_dtype, compute_dtype, round_to_bf16
from phobos.compile.interp.errors import launch_error
from phobos.compile.interp.memory import TensorMemory
from phobos.compile.ir import nodes as ir


@dataclass(frozen=True)
class Launch:
    """A kernel's arguments, checked: tensors, scalar values and named extents."""

    grid: tuple[int, int, int]
    tensors: dict[str, TensorMemory]
    scalars: dict[str, np.generic]
    extents: dict[str, int]


def bind(kernel: ir.Kernel, grid: object, args: Sequence[object]) -> Launch:
    """Check the grid and arguments against ``kernel``; raises ``LaunchError``."""
    grid3 = _grid(kernel, grid)
    if len(args) != len(kernel.params):
        names = ", ".join(p.name for p in kernel.params)
        raise launch_error(
            kernel.span,
            f"kernel '{kernel.name}' takes {len(kernel.params)} arguments ({names}), "
            f"got {len(args)}",
            help="pass one argument per parameter, in the kernel's parameter order",
        )
    written = written_tensors(kernel.body)
    extents = _Extents()
    tensors: dict[str, TensorMemory] = {}
    scalars: dict[str, np.generic] = {}
    for param, arg in zip(kernel.params, args):
        if isinstance(param, ir.TensorParam):
            array = _array(param, arg, param.name in written)
            for axis, (dim, size) in enumerate(zip(param.dims, array.shape)):
                extents.bind(param, axis, dim, size)
            tensors[param.name] = TensorMemory(param, array)
        else:
            scalars[param.name] = _scalar(param, arg)
    return Launch(grid3, tensors, scalars, extents.values)


def written_tensors(body: Sequence[ir.Stmt]) -> set[str]:
    """The names of the tensors some ``Store`` or atomic in ``body`` writes."""
    names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, (ir.Store, ir.AtomicAdd, ir.AtomicMax, ir.AtomicXchg, ir.AtomicCas)):
            names.add(stmt.tensor.name)
        elif isinstance(stmt, (ir.For, ir.While)):
            names |= written_tensors(stmt.body)
        elif isinstance(stmt, ir.If):
            names |= written_tensors(stmt.then) | written_tensors(stmt.orelse)
    return names


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _grid(kernel: ir.Kernel, grid: object) -> tuple[int, int, int]:
    """1 to 3 block counts, each an int of at least 0 (a zero: no block runs).

    A launch's grid is checked first by the GPU launcher's rule (``phobos.launch.grid``,
    applied by ``phobos.lang`` to interpreter launches too: ints within the hardware's
    limits); ``run`` itself only refuses what it cannot run.
    """
    sizes = tuple(grid) if isinstance(grid, (tuple, list)) else ()
    if not 1 <= len(sizes) <= 3 or not all(_is_int(s) and s >= 0 for s in sizes):
        raise launch_error(
            kernel.span,
            f"the grid of '{kernel.name}' must be 1 to 3 integers of at least 0, got {grid!r}",
            help="write the grid as a tuple of block counts, e.g. kernel[(blocks,)](...)",
        )
    x, y, z = (int(s) for s in sizes + (1,) * (3 - len(sizes)))
    return (x, y, z)


def _describe(param: ir.TensorParam) -> str:
    return f"tensor<{param.dtype}>[{', '.join(map(str, param.dims))}]"


def _array(param: ir.TensorParam, arg: object, written: bool) -> np.ndarray:
    kind = _describe(param)
    if not isinstance(arg, np.ndarray):
        raise launch_error(
            param.span,
            f"parameter '{param.name}' is a {kind}, but the argument is a {type(arg).__name__}",
            help="pass a numpy array (or a GPU array to run on the GPU)",
        )
    if arg.ndim != param.rank:
        raise launch_error(
            param.span,
            f"parameter '{param.name}' is a {kind} with {param.rank} dimension(s), but the "
            f"array has {arg.ndim} (shape {arg.shape})",
        )
    expected = array_dtype(param.dtype)
    if expected is None:
        raise launch_error(
            param.span,
            f"parameter '{param.name}' is a {kind}, and bf16 arrays need the ml_dtypes "
            f"package (numpy has no bf16); the argument is a {arg.dtype} array",
            help="pip install ml_dtypes, and pass an array of dtype ml_dtypes.bfloat16",
        )
    if arg.dtype != expected:
        raise launch_error(
            param.span,
            f"parameter '{param.name}' is a {kind}, so it needs a {expected} array, "
            f"but the argument is a {arg.dtype} array",
            help=f"convert it first, e.g. array.astype({_module(param.dtype)}.{expected})",
        )
    if written and not arg.flags.writeable:
        raise launch_error(
            param.span,
            f"parameter '{param.name}' is written by the kernel, but the array is read-only",
            help="pass a writeable array (numpy: array.copy())",
        )
    return arg


class _Extents:
    """Named extents bound so far, and which parameter bound each first."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self._bound_by: dict[str, tuple[ir.TensorParam, int]] = {}

    def bind(self, param: ir.TensorParam, axis: int, dim: str | int, size: int) -> None:
        if isinstance(dim, int):
            if size != dim:
                raise launch_error(
                    param.span,
                    f"parameter '{param.name}' is a {_describe(param)}: axis {axis} must have "
                    f"extent {dim}, but the array's is {size}",
                )
            return
        if dim not in self.values:
            self.values[dim] = size
            self._bound_by[dim] = (param, axis)
            return
        if self.values[dim] == size:
            return
        first, first_axis = self._bound_by[dim]
        raise launch_error(
            param.span,
            f"extent {dim} is {self.values[dim]} in parameter '{first.name}' "
            f"(axis {first_axis}) but {size} in parameter '{param.name}' (axis {axis})",
            help=f"every tensor that names {dim} must have the same size on that axis",
            notes=(Note(first.span, f"{dim} = {self.values[dim]} from '{first.name}' here"),),
        )


def _scalar(param: ir.ScalarParam, arg: object) -> np.generic:
    dtype = compute_dtype(param.dtype)
    is_bool = isinstance(arg, (bool, np.bool_))
    if dtype.kind == "b":
        accepted = is_bool
    elif dtype.kind == "f":
        accepted = not is_bool and isinstance(arg, (int, float, np.integer, np.floating))
    else:
        accepted = _is_int(arg)
    if not accepted:
        raise launch_error(
            param.span,
            f"parameter '{param.name}' is a scalar {param.dtype}, but the argument is "
            f"{_shown(arg)}",
            help=f"pass a Python or numpy {_kind_word(dtype)}",
        )
    if dtype.kind in "iu":
        limits = np.iinfo(dtype)
        if not limits.min <= int(arg) <= limits.max:
            raise launch_error(
                param.span,
                f"parameter '{param.name}' is a scalar {param.dtype}, which cannot hold {arg}",
                help=f"{param.dtype} holds {limits.min} to {limits.max}",
            )
        return dtype.type(int(arg))
    value = dtype.type(arg)
    return round_to_bf16(value) if param.dtype == "bf16" else value


def _module(dtype: str) -> str:
    return "ml_dtypes" if dtype == "bf16" else "numpy"


def _shown(arg: object) -> str:
    if isinstance(arg, np.ndarray):
        return f"a numpy array of shape {arg.shape}"
    return f"{arg!r} (a {type(arg).__name__})"


def _kind_word(dtype: np.dtype) -> str:
    return {"b": "bool", "f": "number", "i": "int", "u": "int"}[dtype.kind]
