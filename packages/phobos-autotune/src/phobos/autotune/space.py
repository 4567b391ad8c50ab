"""The size rule: a tile larger than the whole problem is pruned before it is compiled.

Let ``bound`` be the largest named extent of the launch rounded up to a power of
two.  For each compile-time name, of its values at or above ``bound`` only the
smallest is kept: a larger one covers nothing more, its extra lanes are all
absent, and on the GPU it only costs registers or shared memory.  With N = 1000,
``BLOCK in [16, 8192]`` keeps 16 … 1024 and prunes 2048, 4096 and 8192.  Names the
caller exempts (the CTA size ``NUM_THREADS``, and names fixed by keyword) are
never pruned by this rule.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from phobos.autotune.key import next_power_of_two


def oversized(
    variants: Sequence[Mapping[str, int]],
    extents: Mapping[str, int],
    exempt: Collection[str] = (),
) -> dict[int, str]:
    """Index of each variant the size rule prunes → why."""
    if not extents or not variants:
        return {}
    largest = max(extents, key=lambda name: extents[name])
    bound = next_power_of_two(extents[largest])
    keep: dict[str, int] = {}
    for name in variants[0]:
        if name in exempt:
            continue
        covering = sorted({v[name] for v in variants if v[name] >= bound})
        if covering:
            keep[name] = covering[0]
    reasons: dict[int, str] = {}
    for index, variant in enumerate(variants):
        for name, smallest in keep.items():
            if variant[name] > smallest:
                reasons[index] = (
                    f"{name}={variant[name]} is larger than the problem (largest extent "
                    f"{largest}={extents[largest]}); {name}={smallest} already covers it"
                )
                break
    return reasons
