"""Lowering one kernel variant, and checking a whole module.

``lower`` validates the variant's values against the ``@autotune`` space, binds
the parameters and named extents, lowers the body, and repeats while some
``var`` tile turns out to receive partial tiles (see ``Context``).  Both ``lower``
and ``check_module`` also check the fns no kernel calls (see ``uncalled``).
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Mapping

from phobos.compile.check import scope as names
from phobos.compile.check.consts import module_functions, module_scope
from phobos.compile.check.context import Context
from phobos.compile.check.limits import check_variant
from phobos.compile.check.scope import Binding, Scope
from phobos.compile.check.spelling import Spelling
from phobos.compile.check.stmt import StmtLowerer
from phobos.compile.check.tune import TuneSpace, find_kernel, space_of
from phobos.compile.check.types import Literal
from phobos.compile.check.uncalled import check_uncalled
from phobos.compile.diagnostics import Diagnostic, PhobosError, error
from phobos.compile.ir import nodes as ir
from phobos.compile.syntax import ast

# The CTA size (threads per block).  The code generator picks it unless the
# variant's values fix it, either through the @autotune space or given alone.
NUM_THREADS = "NUM_THREADS"
MAX_THREADS = 1024
WARP = 32


def lower(module: ast.Module, kernel: str, values: Mapping[str, int]) -> ir.Kernel:
    """Check ``kernel`` and specialise it to one variant of its ``@autotune`` space.

    The module's fns that no kernel calls are checked too, so a mistake in one is
    an error before any kernel calls it.
    """
    root = module_scope(module)
    try:
        lowered = _lower_kernel(module, root, kernel, values)
    except PhobosError as failure:
        raise PhobosError(*failure.diagnostics, *check_uncalled(module, root)) from None
    unchecked = check_uncalled(module, root)
    if unchecked:
        raise PhobosError(*unchecked)
    return lowered


def _lower_kernel(
    module: ast.Module, root: Scope, kernel: str, values: Mapping[str, int]
) -> ir.Kernel:
    node = find_kernel(module, kernel)
    space = space_of(node, root, module)
    chosen = _validate(node, space, values)
    functions = module_functions(module)
    forced: frozenset[str] = frozenset()
    reserved = frozenset(_interface_names(node))
    while True:
        ctx = Context(root, functions, Spelling.of(module), forced, reserved)
        lowerer = StmtLowerer(ctx)
        params, scope = _bind_params(node, root, chosen, lowerer)
        body = lowerer.block(node.body, scope)
        if ctx.errors:
            raise PhobosError(*ctx.errors)
        if ctx.wants_partial <= forced:
            lowered = ir.Kernel(node.name, params, tuple(chosen.items()), body, node.span)
            check_variant(lowered)
            return lowered
        forced = forced | frozenset(ctx.wants_partial)


def check_module(module: ast.Module) -> None:
    """Lower every kernel at its default variant and check the uncalled fns; one error
    carrying every diagnostic."""
    root = module_scope(module)
    found: list[Diagnostic] = []
    seen: set[str] = set()
    for item in module.items:
        if item.name in seen:
            message = f"'{item.name}' is defined twice"
            found.append(Diagnostic("error", message, item.span, help="rename one"))
        seen.add(item.name)
    for node in module.kernels:
        try:
            _lower_kernel(module, root, node.name, space_of(node, root, module).default())
        except PhobosError as failure:
            found += failure.diagnostics
    found += check_uncalled(module, root)
    if found:
        raise PhobosError(*found)


def _validate(node: ast.Kernel, space: TuneSpace, values: Mapping[str, int]) -> dict[str, int]:
    chosen: dict[str, int] = {}
    for name in space.names:
        options = ", ".join(map(str, space.choices[name]))
        if name not in values:
            raise error(
                node.span,
                f"kernel '{node.name}' needs a value for '{name}'",
                help=f"give {name}= one of {options}",
            )
        value = _integer(node, name, values[name])
        if value not in space.choices[name]:
            raise error(
                node.span,
                f"{name}={value} is not in the @autotune space of '{node.name}'",
                help=f"{name} may be {options}",
            )
        chosen[name] = value
    for name, value in values.items():
        if name in chosen:
            continue
        if name == NUM_THREADS:
            value = _integer(node, name, value)
            if value % WARP or not WARP <= value <= MAX_THREADS:
                raise error(
                    node.span,
                    f"{NUM_THREADS}={value} is not a valid CTA size",
                    help=f"give a multiple of {WARP} from {WARP} to {MAX_THREADS}",
                )
            chosen[name] = value
            continue
        close = difflib.get_close_matches(name, space.names, n=1)
        raise error(
            node.span,
            f"'{name}' is not a compile-time name of kernel '{node.name}'",
            help=f"did you mean '{close[0]}'?"
            if close
            else f"its compile-time names: {', '.join(space.names) or 'none'}",
        )
    return chosen


def _integer(node: ast.Kernel, name: str, value: object) -> int:
    """A variant value as a Python int (numpy integers are fine, bools and floats are not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise error(
            node.span,
            f"the value of '{name}' must be an integer, got {value!r}",
            help=f"give {name}=<int>",
        )
    return int(value)


def _bind_params(
    node: ast.Kernel, root: Scope, chosen: dict[str, int], lowerer: StmtLowerer
) -> tuple[tuple[ir.Param, ...], Scope]:
    scope = root.child()
    tune = {p.name: p for p in node.autotune}
    for name, value in chosen.items():
        span = tune[name].span if name in tune else node.span
        scope.declare(name, Binding(names.TUNE, Literal(value, span), span))
    params: list[ir.Param] = []
    for param in node.params:
        if isinstance(param.type, ast.ScalarType):
            scalar = ir.ScalarParam(param.name, param.type.name, param.span)
            scope.declare(param.name, Binding(names.SCALAR, scalar, param.span))
            params.append(scalar)
            continue
        dims = tuple(_dim(d, scope, lowerer) for d in param.type.dims)
        tensor = ir.TensorParam(param.name, param.type.dtype.name, dims, param.span)
        scope.declare(param.name, Binding(names.TENSOR, tensor, param.span))
        params.append(tensor)
    _declare_extents(node, scope)
    return tuple(params), scope


def _declare_extents(node: ast.Kernel, scope: Scope) -> None:
    """Each named extent of the tensor parameters, once; never a parameter's name."""
    for param in node.params:
        if not isinstance(param.type, ast.TensorType):
            continue
        for dim in param.type.dims:
            if not isinstance(dim, ast.Name):
                continue
            found = scope.find(dim.id)
            if found is None:
                scope.declare(dim.id, Binding(names.EXTENT, dim.id, dim.span))
            elif found.kind not in (names.EXTENT, names.CONST, names.TUNE):
                raise error(
                    dim.span,
                    f"the extent '{dim.id}' has the name of the {found.kind} '{dim.id}'",
                    help="give the extent its own name; it is bound from the tensor's shape",
                )


def _dim(dim: ast.Expr, scope: Scope, lowerer: StmtLowerer) -> str | int:
    """A tensor dim: a named extent (bound at launch), or a compile-time extent."""
    if isinstance(dim, ast.Name):
        found = scope.find(dim.id)
        if found is None or found.kind == names.EXTENT:
            return dim.id
        if found.kind not in (names.CONST, names.TUNE):
            raise error(
                dim.span,
                f"the {found.kind} '{dim.id}' cannot name a tensor extent",
                help="name the extent with a new name, such as `N`",
            )
    return lowerer.tensor_extent(dim, scope)


def _interface_names(node: ast.Kernel) -> set[str]:
    """The names of the kernel's parameters and named extents."""
    found = {p.name for p in node.params}
    for param in node.params:
        if isinstance(param.type, ast.TensorType):
            found |= {d.id for d in param.type.dims if isinstance(d, ast.Name)}
    return found
