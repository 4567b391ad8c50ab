"""The size rule and the key."""

from __future__ import annotations

import json

from phobos.autotune import default_shape, next_power_of_two, oversized, tuning_key


def test_next_power_of_two():
    assert [next_power_of_two(n) for n in (0, 1, 2, 3, 1000, 1024, 1025)] == [
        1,
        1,
        2,
        4,
        1024,
        1024,
        2048,
    ]


def test_oversized_keeps_the_smallest_tile_that_covers_the_problem():
    variants = [{"BLOCK": b} for b in (16, 256, 1024, 2048, 4096)]
    pruned = oversized(variants, {"N": 1000})
    assert sorted(pruned) == [3, 4]
    assert "BLOCK=2048 is larger than the problem (largest extent N=1000)" in pruned[3]


def test_oversized_judges_each_name_and_skips_exempt_names():
    variants = [{"BM": m, "NUM_THREADS": t} for m in (32, 64, 128) for t in (128, 256)]
    pruned = oversized(variants, {"M": 40, "K": 20}, exempt={"NUM_THREADS"})
    assert {variants[i]["BM"] for i in pruned} == {128}
    assert oversized(variants, {}) == {}
    assert oversized(variants, {"M": 40}, exempt={"BM", "NUM_THREADS"}) == {}


def test_the_default_key_rounds_extents_up_and_keeps_dtypes():
    shape = default_shape({"N": 1000, "K": 64}, {"x": "f32"})
    assert shape == {"extents": {"N": 1024, "K": 64}, "dtypes": {"x": "f32"}}
    a = tuning_key(kernel="k", program="p", arch="sm_90", fixed={}, shape=shape)
    b = tuning_key(
        kernel="k",
        program="p",
        arch="sm_90",
        fixed={},
        shape=default_shape({"K": 40, "N": 600}, {"x": "f32"}),
    )
    assert a == b
    assert json.loads(a)["arch"] == "sm_90"
    for change in ({"arch": "cpu-interpreter"}, {"fixed": {"BLOCK": 64}}, {"program": "q"}):
        assert (
            tuning_key(
                **{
                    "kernel": "k",
                    "program": "p",
                    "arch": "sm_90",
                    "fixed": {},
                    "shape": shape,
                    **change,
                }
            )
            != a
        )
