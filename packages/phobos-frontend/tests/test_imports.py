"""``from phobos.lang import exp``: names imported from phobos.lang spell what ``ph.exp`` spells."""

from __future__ import annotations

import importlib
import pkgutil
import textwrap

import pytest

from phobos.compile.diagnostics import PhobosError
from phobos.frontend import translate_source
from phobos.frontend.aliases import LANG_NAMES, LangAliases

FILE = "/work/project/kernels.py"

WITH_PH = """\
import phobos.lang as ph


@ph.kernel
def k(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f16][N]):
    b: ph.let = ph.ctx.block.x * 16
    y[b:+16] = ph.f16(ph.exp(x[b:+16]) + -ph.inf)
"""

IMPORTED = """\
from phobos.lang import ctx, exp, f16, f32, inf, kernel, let, tensor


@kernel
def k(x: tensor[f32][N], y: tensor[f16][N]):
    b: let = ctx.block.x * 16
    y[b:+16] = f16(exp(x[b:+16]) + -inf)
"""

RENAMED = """\
from phobos.lang import ctx as c, exp as e, f16 as half, f32, inf, kernel as kern, let, tensor


@kern
def k(x: tensor[f32][N], y: tensor[half][N]):
    b: let = c.block.x * 16
    y[b:+16] = half(e(x[b:+16]) + -inf)
"""


@pytest.mark.parametrize("source", [IMPORTED, RENAMED], ids=["imported", "renamed"])
def test_imported_names_spell_what_ph_names_spell(source: str):
    expected = translate_source(WITH_PH, FILE)
    program = translate_source(source, FILE)
    assert program.module == expected.module
    assert program.text == expected.text


def test_imported_names_mix_with_the_module_alias():
    source = WITH_PH.replace(
        "import phobos.lang as ph\n", "import phobos.lang as ph\nfrom phobos.lang import exp\n"
    )
    source = source.replace("ph.exp(", "exp(")
    assert translate_source(source, FILE).module == translate_source(WITH_PH, FILE).module


def test_an_imported_name_used_as_a_value_is_an_error_at_its_use():
    source = (
        "from phobos.lang import f32, kernel, let\n\n@kernel\ndef k(a: f32):\n    v: let = f32\n"
    )
    with pytest.raises(PhobosError) as caught:
        translate_source(source, FILE)
    assert (caught.value.span.line, caught.value.span.col) == (5, 14)
    assert "is not a value" in caught.value.message


def error_of(source: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        translate_source(textwrap.dedent(source), FILE)
    return caught.value


def test_an_unknown_name_is_an_error_at_the_import_with_close_matches():
    err = error_of("import numpy as np\nfrom phobos.lang import kernel, exq as e, f32\n")
    assert str(err.span) == f"{FILE}:2:33"
    assert (err.span.end_line, err.span.end_col) == (2, 41)
    assert err.message == "phobos.lang has no name 'exq'"
    assert err.diagnostics[0].help == "did you mean 'exp'?"
    rendered = err.render().splitlines()
    assert rendered[1:3] == [
        "    from phobos.lang import kernel, exq as e, f32",
        "                                    ^^^^^^^^",
    ]


def test_close_matches_are_listed():
    err = error_of("from phobos.lang import atomic_ad\n")
    assert err.diagnostics[0].help == "did you mean 'atomic_add', 'atomic_max' or 'atomic_cas'?"


def test_a_name_with_no_close_match_points_at_the_table():
    err = error_of("from phobos.lang import numpy\n")
    assert "docs/reference.md" in err.diagnostics[0].help


def test_a_star_import_is_an_error():
    err = error_of("from phobos.lang import *\n")
    assert str(err.span) == f"{FILE}:1:25"
    assert "import phobos.lang as ph" in err.diagnostics[0].help


def test_other_modules_and_nested_imports_are_left_to_python():
    source = "from phobos.lang.kernel import Kernel\nfrom phobos.lang import tuning\n"
    source += "def host():\n    from phobos.lang import nothing_here\n"
    assert translate_source(source, FILE).module.items == ()


@pytest.mark.parametrize(
    ("imports", "alias"),
    [
        ("import phobos.lang as ph", "ph"),
        ("import phobos.lang", "phobos.lang"),
        ("from phobos import lang", "lang"),
        ("from phobos.lang import exp", ""),
    ],
)
def test_the_module_records_how_it_names_phobos_lang(imports: str, alias: str):
    assert translate_source(imports + "\n", FILE).module.python_alias == alias


def test_the_known_names_are_phobos_lang_and_its_modules():
    lang = pytest.importorskip("phobos.lang")
    modules = {m.name for m in pkgutil.iter_modules(lang.__path__) if not m.name.startswith("_")}
    assert set(lang.__all__) | modules == LANG_NAMES
    for name in LANG_NAMES:
        assert hasattr(lang, name) or importlib.util.find_spec(f"phobos.lang.{name}")


def test_names_imported_outside_the_text_count_as_imported():
    """A notebook cell uses what earlier cells imported (phobos.lang.source finds them)."""
    cell = IMPORTED.replace(
        "from phobos.lang import ctx, exp, f16, f32, inf, kernel, let, tensor\n", ""
    )
    imported = LangAliases(
        (), {n: n for n in ("ctx", "exp", "f16", "f32", "inf", "kernel", "let", "tensor")}
    )
    program = translate_source(cell, FILE, imported)
    assert program.text == translate_source(WITH_PH, FILE).text
    alias_only = WITH_PH.replace("import phobos.lang as ph\n", "")
    assert translate_source(alias_only, FILE, LangAliases((("ph",),))).text == program.text


def test_a_kernel_may_give_its_source():
    given = WITH_PH.replace("@ph.kernel\n", "@ph.kernel(source=TEXT)\n")
    assert translate_source(given, FILE).module == translate_source(WITH_PH, FILE).module
