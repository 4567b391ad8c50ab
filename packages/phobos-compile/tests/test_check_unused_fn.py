"""A fn no kernel calls is checked anyway: its errors point at its own lines, in both spellings.

Only errors that no caller's shapes could avoid are reported; a fn that works for
some shapes of its parameters is left to be checked at its calls.
"""

from __future__ import annotations

import textwrap

import pytest

from phobos.compile.check import check_module, lower
from phobos.compile.diagnostics import Diagnostic, PhobosError
from phobos.compile.syntax import ast
from phobos.compile.syntax.parser import parse
from phobos.frontend import translate_source

KERNEL_PH = "kernel k(x: tensor<f32>[N]) {\n    x[0 :+ 4] = x[0 :+ 4] * 2.0\n}\n"
KERNEL_PY = "@ph.kernel\ndef k(x: ph.tensor[ph.f32][N]):\n    x[0:+4] = x[0:+4] * 2.0\n"


def ph_module(fns: str) -> ast.Module:
    """``fns`` (lines 1 on) and a kernel that calls none of them."""
    return parse(textwrap.dedent(fns) + KERNEL_PH, "fns.ph")


def py_module(fns: str) -> ast.Module:
    """``fns`` from line 3 on (after the import), then a kernel that calls none of them."""
    source = "import phobos.lang as ph\n\n" + textwrap.dedent(fns) + "\n\n" + KERNEL_PY
    return translate_source(source, "/work/fns.py").module


def errors(module: ast.Module) -> tuple[Diagnostic, ...]:
    with pytest.raises(PhobosError) as caught:
        check_module(module)
    return caught.value.diagnostics


def where(diagnostic: Diagnostic) -> tuple[int, int]:
    return diagnostic.span.line, diagnostic.span.col


# (.ph fns, Python fns, where the error is in each (line, col), words in its message)
CASES = [
    (
        "fn g(b: f32) -> f32 {\n    return b * scale\n}\n",
        "@ph.func\ndef g(b: ph.f32) -> ph.f32:\n    return b * scale\n",
        (2, 16),
        (5, 16),
        "undefined name 'scale'",
    ),
    (
        "fn g(b: f32) -> f32 {\n    let h = f16(b)\n    return b + h\n}\n",
        "@ph.func\ndef g(b: ph.f32) -> ph.f32:\n    h: ph.let = ph.f16(b)\n    return b + h\n",
        (3, 12),
        (6, 12),
        "mismatched types f32 and f16",
    ),
    (
        "fn g(b: f32) -> f16 {\n    return b\n}\n",
        "@ph.func\ndef g(b: ph.f32) -> ph.f16:\n    return b\n",
        (2, 12),
        (5, 12),
        "fn 'g' returns f16, but this value is f32",
    ),
    (
        "fn g(b: f32) {\n    return b\n}\n",
        "@ph.func\ndef g(b: ph.f32):\n    return b\n",
        (2, 5),
        (5, 5),
        "declares no result type but returns a value",
    ),
    (
        "fn g(b: f32) -> f32 {\n    let c = b\n}\n",
        "@ph.func\ndef g(b: ph.f32) -> ph.f32:\n    c: ph.let = b\n",
        (1, 1),
        (4, 1),
        "must end with `return <value>`",
    ),
    (
        "fn g(b: f32) -> f32 {\n    return g(b)\n}\n",
        "@ph.func\ndef g(b: ph.f32) -> ph.f32:\n    return g(b)\n",
        (2, 12),
        (5, 12),
        "fn 'g' calls itself (through g -> g)",
    ),
    (
        "fn g(b: f32) -> f32 {\n    return exq(b)\n}\n",
        "@ph.func\ndef g(b: ph.f32) -> ph.f32:\n    return ph.exq(b)\n",
        (2, 12),
        (5, 12),
        "unknown function",
    ),
    (
        "fn g(t: tensor<f32>[N]) -> f32 {\n    return 1.0\n}\n",
        "@ph.func\ndef g(t: ph.tensor[ph.f32][N]) -> ph.f32:\n    return 1.0\n",
        (1, 6),
        (4, 7),
        "fn parameter 't' has a tensor type",
    ),
    (
        "fn g(b: f32) -> f32 {\n    var r = b\n    for k in 0 .. 4 {\n        r = r + 1i64\n    }\n"
        "    return r\n}\n",
        "@ph.func\ndef g(b: ph.f32) -> ph.f32:\n    r: ph.var = b\n    for k in range(4):\n"
        "        r = r + ph.i64(1)\n    return r\n",
        (4, 13),
        (7, 13),
        "mismatched types f32 and i64",
    ),
]


@pytest.mark.parametrize(("ph", "py", "ph_at", "py_at", "words"), CASES)
def test_an_uncalled_fn_is_checked_at_its_own_lines(ph, py, ph_at, py_at, words):
    (ph_error,) = errors(ph_module(ph))
    assert ph_error.span.file == "fns.ph" and where(ph_error) == ph_at
    assert words in ph_error.message
    assert ph_error.notes == ()
    (py_error,) = errors(py_module(py))
    assert py_error.span.file == "/work/fns.py" and where(py_error) == py_at
    assert words in py_error.message


def test_the_help_is_in_the_fns_spelling():
    ph = "fn g(b: f32) -> f16 {\n    return b\n}\n"
    py = "@ph.func\ndef g(b: ph.f32) -> ph.f16:\n    return b\n"
    assert errors(ph_module(ph))[0].help == "convert it: `f16(b)`"
    assert errors(py_module(py))[0].help == "convert it: `ph.f16(b)`"


def test_lowering_any_kernel_reports_the_uncalled_fn():
    module = ph_module("fn g(b: f32) -> f32 {\n    return b * scale\n}\n")
    with pytest.raises(PhobosError) as caught:
        lower(module, "k", {})
    assert [where(d) for d in caught.value.diagnostics] == [(2, 16)]


def test_a_kernels_own_errors_come_first():
    text = "fn g(b: f32) -> f32 {\n    return b * scale\n}\n"
    text += "kernel k(x: tensor<f32>[N]) {\n    x[0] = nope\n}\n"
    with pytest.raises(PhobosError) as caught:
        lower(parse(text, "fns.ph"), "k", {})
    assert [d.message for d in caught.value.diagnostics] == [
        "undefined name 'nope'",
        "undefined name 'scale'",
    ]


# Fns that are right for some shapes of their parameters: nothing to report until a call.
SHAPE_GENERIC = [
    "fn row_max(t: f32) -> f32 {\n    return max(t, axis=0)\n}\n",
    "fn outer(a: f32, b: f32) -> f32 {\n    return sum(a[:, newaxis] * b[newaxis, :], axis=1)\n}\n",
    "fn flip(t: f32) -> f32 {\n    return sum(trans(t), axis=0)\n}\n",
    "fn deep(t: f32) -> f32 {\n    return sum(t, axis=2)\n}\n",
    "fn clamp(v: f32) -> f32 {\n    var r = v\n    if v > 1.0 {\n        r = 1.0\n    }\n"
    "    return r\n}\n",
    "fn widen(v: f32) -> f32 {\n    return v + zeros<f32>[64]\n}\n",
    "fn square(v: f32) -> f32 {\n    let m = v[:, newaxis] + zeros<f32>[1, 16]\n"
    "    return sum(m, axis=1)\n}\n",
    "fn per_row(v: f32) -> f32 {\n    var acc = zeros<f32>[16]\n    acc = acc + v\n"
    "    return sum(acc, axis=0)\n}\n",
]


@pytest.mark.parametrize("fns", SHAPE_GENERIC)
def test_an_uncalled_fn_right_for_some_shapes_is_not_an_error(fns: str):
    check_module(ph_module(fns))


def test_a_called_fns_errors_come_from_the_call_once():
    text = "fn g(b: f32) -> f32 {\n    return b * scale\n}\n"
    text += "kernel k(x: tensor<f32>[N]) {\n    x[0] = g(x[0])\n}\n"
    (diagnostic,) = errors(parse(text, "fns.ph"))
    assert where(diagnostic) == (2, 16)
    assert [n.message for n in diagnostic.notes] == ["in this call of 'g'"]


def test_a_fn_called_only_by_an_uncalled_fn_reports_its_error_once_and_plainly():
    text = "fn g(b: f32) -> f32 {\n    return h(b)\n}\n"
    text += "fn h(b: f32) -> f32 {\n    return b * scale\n}\n"
    (diagnostic,) = errors(ph_module(text))
    assert where(diagnostic) == (5, 16)
    assert diagnostic.notes == ()


def test_fns_that_call_each_other_and_no_kernel_calls_are_checked():
    text = "fn g(b: f32) -> f32 {\n    return h(b)\n}\n"
    text += "fn h(b: f32) -> f32 {\n    return g(b)\n}\n"
    messages = {d.message for d in errors(ph_module(text))}
    assert "fn 'g' calls itself (through g -> h -> g)" in messages


def test_a_fn_reached_through_another_from_a_kernel_is_not_checked_on_its_own():
    # h works only on tiles; g passes it one, and the kernel calls g.
    text = "fn h(t: f32) -> f32 {\n    return max(t, axis=0)\n}\n"
    text += "fn g(t: f32) -> f32 {\n    return h(t)\n}\n"
    text += "kernel k(x: tensor<f32>[N]) {\n    x[0] = g(x[0 :+ 4])\n}\n"
    check_module(parse(text, "fns.ph"))
