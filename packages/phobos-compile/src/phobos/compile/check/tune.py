"""A kernel's ``@autotune`` space: the names, the values each may take, the default.

``B in [16, 8192]`` is the powers of two from 16 to 8192; ``B in {64, 128}`` is
exactly those values, in order.  Entries may name module consts.  The default
variant takes, for a range, 1024 clamped into it, and for a set, its first value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from phobos.compile.check.consts import module_functions, module_scope
from phobos.compile.check.context import Context
from phobos.compile.check.scope import Scope
from phobos.compile.check.spelling import Spelling
from phobos.compile.check.stmt import StmtLowerer
from phobos.compile.diagnostics import error
from phobos.compile.limits import MAX_VARIANTS
from phobos.compile.syntax import ast

RANGE_DEFAULT = 1024


@dataclass(frozen=True)
class TuneSpace:
    """The compile-time names of one kernel and the values each may take."""

    names: tuple[str, ...]
    choices: Mapping[str, tuple[int, ...]]
    ranges: frozenset[str] = frozenset()

    def variants(self) -> list[dict[str, int]]:
        """Every combination of values, the first name varying slowest."""
        combos = itertools.product(*(self.choices[n] for n in self.names))
        return [dict(zip(self.names, combo)) for combo in combos]

    def default(self) -> dict[str, int]:
        picks: dict[str, int] = {}
        for name in self.names:
            values = self.choices[name]
            if name in self.ranges:
                picks[name] = min(max(RANGE_DEFAULT, values[0]), values[-1])
            else:
                picks[name] = values[0]
        return picks


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def tune_space(module: ast.Module, kernel: str) -> TuneSpace:
    """The ``@autotune`` space of ``kernel`` in ``module``."""
    return space_of(find_kernel(module, kernel), module_scope(module), module)


def find_kernel(module: ast.Module, name: str) -> ast.Kernel:
    try:
        return module.kernel(name)
    except KeyError:
        import difflib

        known = [k.name for k in module.kernels]
        close = difflib.get_close_matches(name, known, n=1)
        raise error(
            module.span,
            f"no kernel named '{name}'",
            help=f"did you mean '{close[0]}'?"
            if close
            else f"kernels: {', '.join(known) or 'none'}",
        ) from None


def space_of(kernel: ast.Kernel, root: Scope, module: ast.Module) -> TuneSpace:
    lowerer = StmtLowerer(Context(root, module_functions(module), Spelling.of(module)))
    choices: dict[str, tuple[int, ...]] = {}
    ranges: set[str] = set()
    for param in kernel.autotune:
        if param.name in choices:
            raise error(param.span, f"'{param.name}' appears twice in @autotune", help="drop one")
        if root.find(param.name) is not None:
            raise error(
                param.span,
                f"the @autotune name '{param.name}' is already a module const",
                help="rename one of them",
            )
        space = param.space
        if isinstance(space, ast.PowerRange):
            low = _in_i64(
                lowerer.compile_time_int(space.low, root, "an @autotune bound"), space.low
            )
            high = _in_i64(
                lowerer.compile_time_int(space.high, root, "an @autotune bound"), space.high
            )
            for bound, expr in ((low, space.low), (high, space.high)):
                if not is_power_of_two(bound):
                    raise error(
                        expr.span,
                        f"the range bound {bound} is not a power of two",
                        help="`[a, b]` is the powers of two from a to b; write a set `{...}` "
                        "for other values",
                    )
            if low > high:
                raise error(
                    space.span, f"the range [{low}, {high}] is empty", help=f"write [{high}, {low}]"
                )
            values = tuple(1 << e for e in range(low.bit_length() - 1, high.bit_length()))
            ranges.add(param.name)
        else:
            values = tuple(
                _in_i64(lowerer.compile_time_int(v, root, "an @autotune value"), v)
                for v in space.values
            )
            if not values:
                raise error(space.span, f"the set of values for '{param.name}' is empty")
            if len(set(values)) != len(values):
                raise error(space.span, f"the set of values for '{param.name}' repeats a value")
        choices[param.name] = values
    count = math.prod(len(v) for v in choices.values())
    if count > MAX_VARIANTS:
        first, last = kernel.autotune[0].span, kernel.autotune[-1].span
        raise error(
            first.to(last),
            f"the @autotune space of '{kernel.name}' has {count} variants; the limit is "
            f"{MAX_VARIANTS}",
            help="give fewer values: narrow the ranges, or fix some names at the launch",
        )
    return TuneSpace(tuple(choices), choices, frozenset(ranges))


def _in_i64(value: int, expr: ast.Expr) -> int:
    """A compile-time value is an integer of ``i64``'s range (no type can use a larger one)."""
    if not -(2**63) <= value < 2**63:
        raise error(
            expr.span,
            f"the @autotune value {value} does not fit in i64",
            help="compile-time values are integers from -2^63 to 2^63 - 1",
        )
    return value
