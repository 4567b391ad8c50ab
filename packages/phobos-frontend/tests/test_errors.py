"""Python with no Phobos meaning is a PhobosError at its own file:line:col, saying what to write."""

from __future__ import annotations

import textwrap

import pytest

from phobos.compile.diagnostics import PhobosError
from phobos.frontend import translate_source

FILE = "/work/project/kernels.py"


def error_of(body: str) -> PhobosError:
    """Translate a kernel whose body is ``body``; lines 1-4 are the import and the def."""
    source = "import phobos.lang as ph\n\n@ph.kernel\ndef k(x: ph.tensor[ph.f32][N]):\n"
    source += textwrap.indent(textwrap.dedent(body), "    ")
    with pytest.raises(PhobosError) as caught:
        translate_source(source, FILE)
    return caught.value


# (kernel body, where the error is (line:col), words the message holds, words the help holds)
CASES = [
    ("v: ph.let = [t for t in x]\n", "5:17", "list comprehension", "ph.zeros"),
    ("f: ph.let = lambda a: a\n", "5:17", "lambda", "@ph.func"),
    ("try:\n    x[0] = 1.0\nexcept Exception:\n    pass\n", "5:5", "try", "remove"),
    ("a: ph.let = 1\nprint(a)\n", "6:5", "`print` is not a Phobos function", "cannot print"),
    ("x[0] = abs(x[0])\n", "5:12", "`abs` is not a Phobos function", "ph.abs(x)"),
    ("x[0] = math.exp(x[0])\n", "5:12", "`math.exp` is not a Phobos", "phobos.lang builtin"),
    ("acc: ph.var = x[0]\nacc @= x[0]\n", "6:5", "`@=`", "ph.dot(a, b, acc)"),
    ("v: ph.let = x[0:16]\n", "5:19", "plain slice", "t[a:+L]"),
    ("v: ph.let = x[:+16]\n", "5:19", "needs its start", "t[0:+L]"),
    ("v: ph.let = x[()]\n", "5:17", "empty subscript", None),
    ("v: ph.let = {1: 2}\n", "5:17", "a dict", None),
    ("with open('f') as f:\n    pass\n", "5:5", "with statement", None),
    ("v: ph.let = f'{x}'\n", "5:17", "f-string", None),
    ("v: ph.let = x is None\n", "5:17", "`is`", "=="),
    ("v: ph.let = 1 in x\n", "5:17", "`in`", None),
    ("v: ph.let = 0 < 1 < 2\n", "5:17", "chained comparison", "and"),
    ("if (n := 3) > 2:\n    pass\n", "5:9", "assignment expression", "ph.let"),
    ("v: ph.let = ph.where(*x)\n", "5:26", "*args", None),
    ("for k in range(4):\n    break\n", "6:9", "break", "not in the language yet"),
    ("for k in range(4):\n    continue\n", "6:9", "continue", "not in the language yet"),
    ("a, b = 1, 2\n", "5:5", "unpacking", None),
    ("v: int = 3\n", "5:8", "annotation `int`", "ph.let"),
    ("def inner():\n    pass\n", "5:5", "nested def", "@ph.func"),
    ("class C:\n    pass\n", "5:5", "class", None),
    ("global g\n", "5:5", "global", "ph.const"),
    ("v: ph.let = x if x else x\n", "5:17", "conditional expression", "ph.where"),
    ("v: ph.let = 2 ** 3\n", "5:17", "`**`", "ph.pow(a, b)"),
    ("x[0] = pow(x[0], 2.0)\n", "5:12", "`pow` is not a Phobos function", "ph.pow(a, b)"),
    ("x[0] = round(x[0])\n", "5:12", "`round` is not a Phobos function", "ties to even"),
    ("v: ph.let = +x[0]\n", "5:17", "unary `+`", None),
    ("v: ph.let = 'text'\n", "5:17", "string", None),
    ("v: ph.let = x.shape\n", "5:17", "attribute `.shape`", "N in ph.tensor[ph.f32][N]"),
    ("v: ph.let = x[0:+16].T\n", "5:17", "attribute `.T`", "ph.trans(x[0:+16])"),
    ("v: ph.let = x[0:+16].to(ph.f16)\n", "5:17", "`x[0:+16].to`", "ph.f16(x[0:+16])"),
    ("v: ph.let = x[0:+16].sum()\n", "5:17", "`x[0:+16].sum`", "phobos.lang builtin"),
    ("v: ph.let = ph.zeros((16,), ph.f32)\n", "5:17", "ph.zeros cannot", "ph.zeros[ph.f32]"),
    ("for i, j in range(4):\n    pass\n", "5:9", "one name", None),
    ("for i in x:\n    pass\n", "5:14", "range", "range(a, b, step)"),
    ("while True:\n    pass\nelse:\n    pass\n", "8:9", "loop's else", None),
    ("let: ph.let = 1\n", "5:5", "`let` is a Phobos keyword", "rename"),
    ("v: ph.const = 1\n", "5:8", "module level", "ph.let"),
    ("v: ph.let = ph.f32\n", "5:17", "the type ph.f32 is not a value", "ph.f32(value)"),
    ("v: ph.let = ph.ctx.warp.x\n", "5:17", "launch coordinate", "ph.ctx.block"),
]


@pytest.mark.parametrize(("body", "where", "message", "help"), CASES, ids=[c[0] for c in CASES])
def test_error_at_its_own_position(body: str, where: str, message: str, help: str | None) -> None:
    err = error_of(body)
    assert str(err.span) == f"{FILE}:{where}"
    assert message in err.message
    if help is not None:
        assert help in (err.diagnostics[0].help or "")


def test_the_rendered_error_shows_the_python_line_and_a_caret() -> None:
    err = error_of("v: ph.let = [t for t in x]\n")
    lines = str(err).splitlines()
    assert lines[0] == f"{FILE}:5:17: error: a list comprehension has no Phobos meaning"
    assert lines[1] == "        v: ph.let = [t for t in x]"
    assert lines[2] == "                    " + "^" * 14


def module_error(source: str) -> PhobosError:
    with pytest.raises(PhobosError) as caught:
        translate_source("import phobos.lang as ph\n" + textwrap.dedent(source), FILE)
    return caught.value


MODULE_CASES = [
    ("@ph.kernel\ndef k(x):\n    pass\n", "3:7", "parameter `x` needs a type"),
    ("@ph.kernel\ndef k(x: ph.f32 = 1.0):\n    pass\n", "3:19", "default"),
    ("@ph.kernel\ndef k(*xs: ph.f32):\n    pass\n", "3:8", "plain named parameters"),
    ("@ph.kernel\ndef k(x: list):\n    pass\n", "3:10", "not a Phobos parameter type"),
    ("@ph.kernel\ndef k(x: ph.tensor[int][N]):\n    pass\n", "3:20", "not an element type"),
    ("@ph.kernel\ndef k(x: ph.f32) -> ph.f32:\n    pass\n", "3:21", "returns nothing"),
    ("@ph.autotune(B=[1, 2])\ndef k(x: ph.f32):\n    pass\n", "2:2", "applies to kernels"),
    ("@ph.kernel\n@ph.autotune(B=(1, 2))\ndef k(x: ph.f32):\n    pass\n", "3:16", "autotune space"),
    (
        "@ph.kernel\n@ph.autotune(B=[1, 2, 4])\ndef k(x: ph.f32):\n    pass\n",
        "3:16",
        "autotune space",
    ),
    ("@ph.kernel\n@ph.autotune([1, 2])\ndef k(x: ph.f32):\n    pass\n", "3:14", "named spaces"),
    ("@ph.kernel()\ndef k(x: ph.f32):\n    pass\n", "2:2", "takes no arguments"),
    ("@ph.kernel(text)\ndef k(x: ph.f32):\n    pass\n", "2:2", "but `source=`"),
    ("@ph.func(source=t)\ndef k(x: ph.f32):\n    pass\n", "2:2", "takes no arguments"),
    ("@ph.kernel\n@ph.func\ndef k(x: ph.f32):\n    pass\n", "3:2", "not both"),
    (
        "import functools\n@functools.cache\n@ph.kernel\ndef k(x: ph.f32):\n    pass\n",
        "3:2",
        "only ph",
    ),
    ("@ph.kernel\nasync def k(x: ph.f32):\n    pass\n", "3:1", "async"),
    ("C: ph.let = 4\n", "2:4", "module-level name is a constant"),
    ("@ph.kernel\ndef k(x: ph.f32)\n    pass\n", "3:17", "Python syntax error"),
]


@pytest.mark.parametrize(
    ("source", "where", "message"), MODULE_CASES, ids=[c[0] for c in MODULE_CASES]
)
def test_definition_errors(source: str, where: str, message: str) -> None:
    err = module_error(source)
    assert str(err.span) == f"{FILE}:{where}"
    assert message in err.message


def test_a_triton_constexpr_parameter_points_to_the_tuned_names() -> None:
    err = module_error("@ph.kernel\ndef k(x: ph.f32, BLOCK: ph.constexpr):\n    pass\n")
    assert str(err.span) == f"{FILE}:3:25"
    assert "not a Phobos parameter type" in err.message
    assert "@ph.autotune(...)" in (err.diagnostics[0].help or "")
