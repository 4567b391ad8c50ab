"""Comments, blank lines and parameter lists land where the .ph file had them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ph2py import convert_source
from ph2py.line_length import line_length_for
from phobos.compile.syntax import format_module, parse
from phobos.frontend import translate_source

HEADER = "from __future__ import annotations\n\nimport phobos.lang as ph\n"


def convert(ph: str) -> str:
    """The Python of ``ph`` at this repository's line length, 100."""
    return convert_source(textwrap.dedent(ph), "t.ph", line_length=100).python


def body(ph: str) -> str:
    """The converted module after its two imports."""
    python = convert(ph)
    assert python.startswith(HEADER)
    return python[len(HEADER) :]


@pytest.mark.parametrize(
    "name",
    [
        "odd_comments",
        "blank_lines",
        "long_params",
        "long_lines",
        "precedence",
        "literals",
        "control",
        "math",
        "reductions",
        "random",
    ],
)
def test_the_corpus_converts_to_its_expected_python(data: Path, name: str) -> None:
    ph = data / f"{name}.ph"
    expected = (data / "expected" / f"{name}.py.txt").read_text(encoding="utf-8")
    line_length = line_length_for(ph.with_suffix(".py"))  # the repository's ruff setting
    assert line_length == 100
    conversion = convert_source(ph.read_text(encoding="utf-8"), str(ph), line_length=line_length)
    assert conversion.python == expected


def test_a_comment_after_an_opening_brace_stays_on_the_header_line() -> None:
    python = body(
        """\
        kernel k(t: tensor<f32>[N], n: i32) { // kernel
            if n > 0 { // then
                t[0] = 1.0
            } else { // else
                t[0] = 2.0
            }
            for i in 0 .. n { // loop
            }
        }
        """
    )
    assert "def k(t: ph.tensor[ph.f32][N], n: ph.i32):  # kernel\n" in python
    assert "    if n > 0:  # then\n        t[0] = 1.0\n    else:  # else\n" in python
    assert "    for i in range(n):  # loop\n        pass\n" in python


def test_comments_on_consts_params_and_the_autotune_line_stay_on_their_lines() -> None:
    python = body(
        """\
        const C = 4 // four
        @autotune(B in {64, 128}) // tuned
        kernel k(
            x: tensor<f32>[N], // the input
            // the output
            y: tensor<f32>[N],
            // after the parameters
        ) {
            y[0] = x[0]
        }
        """
    )
    assert "C: ph.const = 4  # four\n" in python
    assert "@ph.autotune(B={64, 128})  # tuned\n" in python
    assert (
        "def k(\n"
        "    x: ph.tensor[ph.f32][N],  # the input\n"
        "    # the output\n"
        "    y: ph.tensor[ph.f32][N],\n"
        "    # after the parameters\n"
        "):\n"
    ) in python


def test_comments_before_else_and_in_an_empty_block_close_their_block() -> None:
    python = body(
        """\
        kernel k(t: tensor<f32>[N], n: i32) {
            if n > 0 {
                t[0] = 1.0
                // closes then
            } else {
                // nothing else to do
            }
        }
        """
    )
    assert (
        "    if n > 0:\n"
        "        t[0] = 1.0\n"
        "        # closes then\n"
        "    else:\n"
        "        # nothing else to do\n"
        "        pass\n"
    ) in python


def test_leading_comments_stand_above_the_decorators_and_the_file_ends_with_its_own() -> None:
    python = body(
        """\
        // about k

        // more about k
        kernel k(t: tensor<f32>[N]) {
            t[0] = 1.0
        }
        // the end
        """
    )
    assert python == (
        "\n\n# about k\n\n# more about k\n@ph.kernel\ndef k(t: ph.tensor[ph.f32][N]):\n"
        "    t[0] = 1.0\n\n\n# the end\n"
    )


def test_blank_lines_carry_over_one_at_most_inside_a_body_two_around_definitions() -> None:
    python = body(
        """\
        const A = 1
        const B = 2


        const C = 3
        fn f(x: f32) -> f32 {

            let y = x


            return y
        }
        const D = 4
        """
    )
    assert python == (
        "\nA: ph.const = 1\nB: ph.const = 2\n\n\nC: ph.const = 3\n\n\n"
        "@ph.func\ndef f(x: ph.f32) -> ph.f32:\n    y: ph.let = x\n\n    return y\n\n\n"
        "D: ph.const = 4\n"
    )


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("k(x: tensor<f32>[N], y: f32)", "def k(x: ph.tensor[ph.f32][N], y: ph.f32):\n"),
        (
            "saxpy_of_a_long_name(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], a: f32)",
            "def saxpy_of_a_long_name(\n"
            "    x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], a: ph.f32\n"
            "):\n",
        ),
        (
            "k(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32, beta: f32)",
            "def k(\n    x: ph.tensor[ph.f32][N],\n    y: ph.tensor[ph.f32][N],\n"
            "    out: ph.tensor[ph.f32][N],\n    alpha: ph.f32,\n    beta: ph.f32,\n):\n",
        ),
        (
            "k(x: tensor<f32>[N],\n    y: f32)",
            "def k(\n    x: ph.tensor[ph.f32][N],\n    y: ph.f32,\n):\n",
        ),
    ],
    ids=["fits", "on-one-line-below", "one-a-line", "on-several-lines-in-the-ph"],
)
def test_parameters_are_laid_out_as_ruff_would(header: str, expected: str) -> None:
    python = convert(f"kernel {header} {{\n}}\n")
    assert expected in python


def test_a_comment_after_a_closing_brace_closes_the_block(data: Path) -> None:
    """`} // c` is the block's last comment in both spellings: no warning, exact round trip."""
    path = data / "moved" / "closing_comments.ph"
    text = path.read_text(encoding="utf-8")
    conversion = convert_source(text, str(path), line_length=100)
    assert conversion.warnings == ()
    assert (
        "    for i in range(n):\n        t[i] = 0.0\n        # after a loop\n" in conversion.python
    )
    assert "        t[0] = 2.0\n        # after an else-if chain\n" in conversion.python
    assert "        # the loop's own end comment\n        # after a while\n" in conversion.python
    assert conversion.python.endswith("    # after the kernel\n")
    program = translate_source(conversion.python, "closing.py")
    assert program.text == format_module(parse(text))


def test_a_program_of_comments_only_keeps_them_after_the_imports() -> None:
    python = convert("// nothing here yet\n// but notes\n")
    assert python == HEADER + "\n# nothing here yet\n# but notes\n"
    assert convert_source("// nothing here yet\n// but notes\n", "t.ph", python).python == python
