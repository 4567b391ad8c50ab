"""Which lanes of a lowered tile are present, kept as factors until a mask is needed.

The tile IR's absent lanes (``ir/nodes.py``) become explicit here.  A value's
presence is the AND of

* ``Bound`` factors: the lanes whose coordinate ``c`` along ``axis`` has its tensor
  index ``start + c`` inside ``[0, extent)`` (what a window load leaves), optionally
  only ``when`` a uniform flag holds (a loop's or branch's join);
* a ``uniform`` condition (a point index inside its axis, a reduction that had at
  least one lane present);
* a ``general`` bool tile, for everything else.

Most presence never becomes a mask: a store skips the lanes outside its own window
anyway, so the factors equal to its window's bounds are dropped (``without``); a
reduction or a ``dot`` needs a mask only over the reduced axis, and not even that
where the absent lanes hold zero already (a load's) and zero is the identity.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from phobos.compile.gpu import ir
from phobos.compile.gpu.builder import Builder


@dataclass(frozen=True)
class Bound:
    """Lanes with ``0 <= start + c < extent`` (``c`` the coordinate along ``axis``)."""

    axis: int
    start: ir.Value
    extent: ir.Value
    length: int
    when: ir.Value | None = None

    def same_window(self, other: Bound) -> bool:
        return (self.axis, self.start, self.extent) == (other.axis, other.start, other.extent)


@dataclass(frozen=True)
class Presence:
    bounds: tuple[Bound, ...] = ()
    uniform: ir.Value | None = None
    general: ir.Value | None = None

    @property
    def everywhere(self) -> bool:
        return not self.bounds and self.uniform is None and self.general is None


ALL = Presence()


def both(b: Builder, *presences: Presence) -> Presence:
    """The lanes present in every one of ``presences`` (an elementwise result's)."""
    bounds: list[Bound] = []
    uniform: ir.Value | None = None
    general: ir.Value | None = None
    for p in presences:
        for bound in p.bounds:
            if bound not in bounds:
                bounds.append(bound)
        uniform = b.land(uniform, p.uniform)
        general = b.land(general, p.general)
    return Presence(tuple(bounds), uniform, general)


def in_window(b: Builder, bound: Bound, coord: ir.Value) -> ir.Value:
    """``0 <= start + coord < extent`` (one unsigned comparison), or the ``when`` escape."""
    index = bound.start.dtype
    unsigned = "u64" if index in ("i64", "u64") else "u32"
    shape = coord.type.shape if isinstance(coord.type, ir.Tile) else None
    start = bound.start if shape is None else b.splat(bound.start, shape)
    extent = bound.extent if shape is None else b.splat(bound.extent, shape)
    at = b.binary("add", start, b.cast(coord, index))
    ok = b.binary("lt", b.cast(at, unsigned), b.cast(extent, unsigned), "bool")
    if bound.when is None:
        return ok
    when = bound.when if shape is None else b.splat(bound.when, shape)
    return b.binary("lor", ok, b.unary("not", when), "bool")


def mask(
    b: Builder, p: Presence, shape: tuple[int, ...], axes: set[int] | None = None
) -> ir.Value | None:
    """A bool tile of ``shape`` that is true where ``p`` says present (None: everywhere).

    With ``axes``, only the factors that depend on those axes (bounds along them and
    the general mask); uniform factors are left out.
    """
    out: ir.Value | None = None
    for bound in p.bounds:
        if axes is None or bound.axis in axes:
            out = b.land(out, in_window(b, bound, b.coord(shape, bound.axis)))
    if axes is None and p.uniform is not None:
        out = b.land(out, b.splat(p.uniform, shape))
    if p.general is not None:
        out = b.land(out, p.general)
    return out


def depends_on(p: Presence, axis: int) -> bool:
    return p.general is not None or any(bound.axis == axis for bound in p.bounds)


def some_present(b: Builder, bounds: list[Bound]) -> ir.Value | None:
    """A uniform: some coordinate ``c`` in ``[0, length)`` satisfies every bound (all along
    one axis).  None where that always holds."""
    if not bounds:
        return None
    index = bounds[0].start.dtype
    zero, length = b.constant(0, index), b.constant(bounds[0].length, index)
    if len(bounds) == 1 and bounds[0].when is None:
        bound = bounds[0]
        ends = b.binary("add", bound.start, length)
        return b.land(
            b.land(
                b.binary("lt", bound.start, bound.extent, "bool"),
                b.binary("gt", ends, zero, "bool"),
            ),
            b.binary("gt", bound.extent, zero, "bool"),
        )
    # The intersection of the intervals: max(0, -start) <= c < min(length, extent - start).
    low, high = zero, length
    for bound in bounds:
        if bound.when is not None:
            raise NotImplementedError
        low = b.binary("max", low, b.unary("neg", bound.start))
        high = b.binary("min", high, b.binary("sub", bound.extent, bound.start))
    return b.binary("lt", low, high, "bool")


def some_present_any(b: Builder, bounds: list[Bound]) -> ir.Value | None:
    """``some_present``, also for conditional bounds (a 1-D reduction of their mask)."""
    if all(bound.when is None for bound in bounds):
        return some_present(b, bounds)
    shape = (bounds[0].length,)
    axis_mask: ir.Value | None = None
    for bound in bounds:
        axis_mask = b.land(axis_mask, in_window(b, replace(bound, axis=0), b.coord(shape, 0)))
    assert axis_mask is not None
    return b.value(ir.Reduce(op="any", axis=0, operands=[axis_mask]), ir.Uniform("bool"))


def renumber(p: Presence, mapping: dict[int, int | None], b: Builder) -> Presence:
    """Bounds moved to new axes (``mapping``: old axis → new, None: the axis is gone and its
    single coordinate 0 becomes a uniform condition)."""
    bounds: list[Bound] = []
    uniform = p.uniform
    for bound in p.bounds:
        new = mapping.get(bound.axis, bound.axis)
        if new is None:
            uniform = b.land(uniform, in_window(b, bound, b.constant(0, "i32")))
        else:
            bounds.append(replace(bound, axis=new))
    return Presence(tuple(bounds), uniform, p.general)


def without(p: Presence, covered: tuple[Bound, ...]) -> Presence:
    """``p`` less the bounds that ``covered`` (a store's own window) implies."""
    kept = tuple(x for x in p.bounds if not any(x.same_window(c) for c in covered))
    return Presence(kept, p.uniform, p.general)
