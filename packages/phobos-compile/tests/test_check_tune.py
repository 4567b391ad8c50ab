"""The @autotune space: powers-of-two ranges, value sets, consts, defaults, variants."""

from __future__ import annotations

import pytest

from phobos.compile.check import TuneSpace, tune_space
from phobos.compile.diagnostics import PhobosError
from phobos.compile.syntax.parser import parse


def space(decorator: str, prelude: str = "") -> TuneSpace:
    text = f"{prelude}@autotune({decorator})\nkernel k(x: tensor<f32>[N]) {{\n}}\n"
    return tune_space(parse(text, "t.ph"), "k")


def test_power_range_and_value_set():
    got = space("B in [16, 128], S in {64, 32, 256}")
    assert got.names == ("B", "S")
    assert got.choices == {"B": (16, 32, 64, 128), "S": (64, 32, 256)}
    assert got.default() == {"B": 128, "S": 64}
    assert space("B in [16, 8192]").default() == {"B": 1024}
    assert space("B in [2048, 8192]").default() == {"B": 2048}


def test_variants_are_the_product():
    got = space("A in {1, 2}, B in [4, 8]")
    assert got.variants() == [
        {"A": 1, "B": 4},
        {"A": 1, "B": 8},
        {"A": 2, "B": 4},
        {"A": 2, "B": 8},
    ]
    plain = tune_space(parse("kernel k(x: tensor<f32>[N]) {\n}\n", "t.ph"), "k")
    assert plain.names == () and plain.variants() == [{}] and plain.default() == {}


def test_entries_may_name_module_consts():
    got = space("B in [LOW, 2 * LOW], S in {LOW, 3}", prelude="const LOW = 32\n")
    assert got.choices == {"B": (32, 64), "S": (32, 3)}


def test_range_errors():
    with pytest.raises(PhobosError) as caught:
        space("B in [16, 100]")
    assert (caught.value.span.line, caught.value.span.col) == (1, 21)
    assert "not a power of two" in caught.value.message
    assert "set" in caught.value.diagnostics[0].help
    with pytest.raises(PhobosError) as caught:
        space("B in [64, 16]")
    assert "empty" in caught.value.message
    assert caught.value.diagnostics[0].help == "write [16, 64]"
    with pytest.raises(PhobosError) as caught:
        space("B in {1}, B in {2}")
    assert "twice" in caught.value.message
    with pytest.raises(PhobosError) as caught:
        space("B in {1, 1}")
    assert "repeats" in caught.value.message


def test_unknown_kernel():
    with pytest.raises(PhobosError) as caught:
        tune_space(parse("kernel saxpy() {\n}\n", "t.ph"), "saxpi")
    assert caught.value.diagnostics[0].help == "did you mean 'saxpy'?"
