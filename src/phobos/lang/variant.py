"""A variant's compile-time values (``Variant``), and the grid a launch of it resolves to."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from phobos.launch import call_grid, grid_dims

Grid = Sequence[int] | Callable[[Mapping[str, int]], Sequence[int]]


class Lowered(Protocol):
    """A variant's checked tile IR (what ``phobos.compile.lower`` returns), as used here."""

    @property
    def params(self) -> Sequence[object]: ...


@dataclass(frozen=True, repr=False, eq=False)
class Variant(Mapping[str, int]):
    """One variant of a kernel: its compile-time values, in name order (``BLOCK=128 NUM_THREADS=64``).

    A mapping (it goes where the values do: ``compile_cached``, ``lower``, a grid's ``meta``;
    it equals a dict of the same values) that is hashable, so it keys the memo of lowered,
    compiled and loaded variants.
    """

    pairs: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, values: Mapping[str, int]) -> Variant:
        if isinstance(values, Variant):
            return values
        return cls(tuple(sorted((str(name), int(value)) for name, value in values.items())))

    def __getitem__(self, name: str) -> int:
        for known, value in self.pairs:
            if known == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Variant):
            return self.pairs == other.pairs
        return isinstance(other, Mapping) and dict(self.pairs) == dict(other)

    def __hash__(self) -> int:
        return hash(self.pairs)

    def __str__(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.pairs) or "the only variant"

    def __repr__(self) -> str:
        return f"Variant({', '.join(f'{name}={value}' for name, value in self.pairs)})"


def extents_of(params: Sequence[object], args: Sequence[Any]) -> dict[str, int]:
    """Named extents read from the arrays' shapes (the launch checks that they agree).

    ``params`` have ``dims`` (names or literal sizes) where they are tensors: a variant's
    tile-IR parameters, or a kernel's declared ones.
    """
    extents: dict[str, int] = {}
    for param, arg in zip(params, args):
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
    """The block counts of an interpreter launch of kernel ``name``, by the GPU launcher's rule.

    ``grid`` is a tuple of 1 to 3 counts, or ``lambda meta: ...`` called with the
    variant's compile-time values and the named extents; ``phobos.launch``'s ``call_grid``
    and ``grid_dims`` check it exactly as a GPU launch does (ints only, within the hardware
    limits) and raise its ``LaunchError``.  A grid with a zero launches nothing: ``(0, 1, 1)``.
    """
    if callable(grid):
        grid = call_grid(name, grid, {**values, **extents})
    dims = grid_dims(name, grid)
    return (0, 1, 1) if dims is None else dims
