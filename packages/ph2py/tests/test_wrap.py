"""Long lines are wrapped as ruff format wraps them, and the program stays the same."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ph2py import convert_source
from phobos.compile.syntax import ast, format_module, parse
from phobos.frontend import translate_source

RUFF = shutil.which("ruff")


def convert(ph: str, line_length: int) -> str:
    return convert_source(textwrap.dedent(ph), "t.ph", line_length=line_length).python


def round_trips(ph: str, python: str) -> bool:
    return translate_source(python, "t.py").module == parse(textwrap.dedent(ph), "t.ph")


def code_lines(python: str) -> list[str]:
    """The lines that hold code (a comment on a line of its own is never broken)."""
    return [line for line in python.splitlines() if not line.lstrip().startswith("#")]


@pytest.mark.parametrize("line_length", [100, 88, 72])
def test_every_example_fits_in_the_line_length(
    program_sets: dict[str, list[Path]], line_length: int
) -> None:
    for path in program_sets["examples"]:
        text = path.read_text(encoding="utf-8")
        python = convert_source(text, str(path), line_length=line_length).python
        too_long = [line for line in code_lines(python) if len(line) > line_length]
        assert too_long == [], path.name
        assert translate_source(python, "t.py").module == parse(text, str(path))


@pytest.mark.skipif(RUFF is None, reason="ruff is not installed")
@pytest.mark.parametrize("line_length", [100, 88, 72, 40])
def test_ruff_format_leaves_the_python_as_it_is(
    tmp_path: Path, program_sets: dict[str, list[Path]], line_length: int
) -> None:
    for path in program_sets["examples"] + program_sets["corpus"] + program_sets["moved"]:
        text = path.read_text(encoding="utf-8")
        python = convert_source(text, str(path), line_length=line_length).python
        (tmp_path / f"{path.stem}.py").write_text(python, encoding="utf-8")
    command = [RUFF, "format", "--isolated", "--line-length", str(line_length), "--diff"]
    result = subprocess.run([*command, str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_a_long_autotune_goes_on_one_line_below_or_one_name_a_line() -> None:
    ph = """\
        @autotune(BLOCK_M in {64, 128}, BLOCK_N in {32, 64}, STAGES in {2, 3}) // tuned
        kernel k(t: tensor<f32>[N]) {
            t[0] = 1.0
        }
        """
    assert (
        "@ph.autotune(\n    BLOCK_M={64, 128}, BLOCK_N={32, 64}, STAGES={2, 3}\n)  # tuned\n"
    ) in convert(ph, 72)
    python = convert(ph, 50)
    assert (
        "@ph.autotune(\n    BLOCK_M={64, 128},\n    BLOCK_N={32, 64},\n    STAGES={2, 3},\n)  # tuned\n"
    ) in python
    assert round_trips(ph, python)


def test_comments_in_a_wrapped_signature_stay_where_they_were() -> None:
    ph = """\
        kernel k(
            queries: tensor<f16>[BATCH, HEADS, SEQUENCE, HEAD_DIM], // read once per block
            // the output
            out: tensor<f16>[BATCH, HEADS, SEQUENCE, HEAD_DIM],
        ) { // the kernel
            out[0, 0, 0, 0] = queries[0, 0, 0, 0]
        }
        """
    python = convert(ph, 72)
    assert (
        "def k(\n"
        "    queries: ph.tensor[ph.f16][\n"
        "        BATCH, HEADS, SEQUENCE, HEAD_DIM\n"
        "    ],  # read once per block\n"
        "    # the output\n"
        "    out: ph.tensor[ph.f16][BATCH, HEADS, SEQUENCE, HEAD_DIM],\n"
        "):  # the kernel\n"
    ) in python
    assert round_trips(ph, python)


def test_a_lone_parameter_broken_out_gets_a_trailing_comma() -> None:
    python = convert("fn f(values: tensor<f32>[ROWS, COLUMNS]) -> f32 {\n    return 0.0\n}\n", 48)
    assert "def f(\n    values: ph.tensor[ph.f32][ROWS, COLUMNS],\n) -> ph.f32:\n" in python


@pytest.mark.parametrize(
    ("statement", "python"),
    [
        (  # a call keeps its brackets: its arguments go on one line below
            "acc = dot(f16(p), values[0 :+ BLOCK, 0 :+ HEAD_DIM], acc)",
            "    acc = ph.dot(\n        ph.f16(p), values[0:+BLOCK, 0:+HEAD_DIM], acc\n    )\n",
        ),
        (  # or one a line, with a trailing comma
            "acc = dot(f16(p), v[head, first :+ BLOCK, 0 :+ D], acc * rescale[:, newaxis])",
            "    acc = ph.dot(\n        ph.f16(p),\n        v[head, first:+BLOCK, 0:+D],\n"
            "        acc * rescale[:, None],\n    )\n",
        ),
        (  # operators outside brackets: the value goes in parentheses, broken before operators
            "let total = first_value * scale + second_value * scale - third_value",
            "    total: ph.let = (\n        first_value * scale\n        + second_value * scale\n"
            "        - third_value\n    )\n",
        ),
        (  # one operator and a call at the end: the call's brackets break
            "acc = acc * rescale + sum(exp(chunk - new_max[:, newaxis]), axis=1)",
            "    acc = acc * rescale + ph.sum(\n        ph.exp(chunk - new_max[:, None]), axis=1\n"
            "    )\n",
        ),
        (  # a store whose value cannot follow the target: the target's brackets break
            "output[first_row :+ BLOCK_ROWS, first_column :+ BLOCK_COLUMNS] += acc",
            "    output[\n        first_row:+BLOCK_ROWS, first_column:+BLOCK_COLUMNS\n    ] += acc\n",
        ),
        (  # the comment at the end of a statement ends its last line
            "acc = dot(f16(p), values[0 :+ BLOCK, 0 :+ HEAD_DIM], acc) // accumulate",
            "    acc = ph.dot(\n        ph.f16(p), values[0:+BLOCK, 0:+HEAD_DIM], acc\n"
            "    )  # accumulate\n",
        ),
    ],
)
def test_statements_break_as_ruff_breaks_them(statement: str, python: str) -> None:
    ph = f"kernel k(t: tensor<f32>[N]) {{\n    {statement}\n}}\n"
    converted = convert(ph, 60)
    assert python in converted
    assert round_trips(ph, converted)


def test_headers_of_if_elif_while_and_for_break_inside_parentheses_or_brackets() -> None:
    ph = """\
        kernel k(t: tensor<f32>[N], first_row: i32, last_row: i32) {
            if first_row + BLOCK > last_row && first_row < last_row * 2 { // the tail
                t[0] = 1.0
            } else if first_row + BLOCK > last_row * 4 && !(first_row < last_row) {
                t[0] = 2.0
            }
            while first_row < last_row && first_row > 0 || first_row == last_row {
            }
            for k in first_row .. first_row + BLOCK * last_row step BLOCK_ROWS {
            }
        }
        """
    python = convert(ph, 60)
    assert (
        "    if (\n        first_row + BLOCK > last_row\n        and first_row < last_row * 2\n"
        "    ):  # the tail\n"
    ) in python
    assert "    elif first_row + BLOCK > last_row * 4 and not (\n" in python
    assert "    while (\n        first_row < last_row and first_row > 0\n" in python
    assert (
        "    for k in range(\n        first_row, first_row + BLOCK * last_row, BLOCK_ROWS\n    ):\n"
        in (python)
    )
    assert round_trips(ph, python)


def test_what_has_nothing_to_break_stays_longer_than_the_line() -> None:
    """A long string, or a line made long only by its end comment, is not broken."""
    ph = """\
        const EPS = 1e-5 // a comment that makes this line longer than the limit
        kernel k(t: tensor<f32>[N]) {
            assert(N > 0, "a message longer than the line, which no break can shorten")
        }
        """
    python = convert(ph, 40)
    assert "EPS: ph.const = 1e-5  # a comment that makes this line" in python
    assert (
        '    assert N > 0, (\n        "a message longer than the line, which no break can shorten"\n'
        "    )\n"
    ) in python
    assert round_trips(ph, python)


_NAME_TEXTS = ("a", "b", "first_row", "a_much_longer_name")
_NAMES = st.sampled_from([ast.Name(n) for n in _NAME_TEXTS])


def _grow(children: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
    binary = st.builds(
        ast.Binary, st.sampled_from(["+", "*", "<", "&&", "||", "&"]), children, children
    )
    call = st.builds(
        ast.Call, st.sampled_from(["max", "min", "where"]), st.tuples(children, children)
    )
    unary = st.builds(ast.Unary, st.just("!"), children)
    return st.one_of(binary, call, unary)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.recursive(_NAMES, _grow, max_leaves=12), st.integers(30, 100))
def test_any_wrapped_expression_reads_back_as_the_same_program(
    expr: ast.Expr, line_length: int
) -> None:
    params = tuple(ast.Param(name, ast.ScalarType("i32")) for name in _NAME_TEXTS)
    body = (ast.Let("e", expr), ast.If(expr, ast.Block((ast.Assign(ast.Name("b"), expr),))))
    kernel = ast.Kernel("k", params, ast.Block(body))
    text = format_module(ast.Module((kernel,)))
    python = convert_source(text, "t.ph", line_length=line_length).python
    assert translate_source(python, "t.py").module == parse(text)
    assert convert_source(text, "t.ph", python, line_length=line_length).python == python


def test_a_set_breaks_one_value_a_line_and_a_return_type_under_a_long_comment_goes_below() -> None:
    """ruff puts a list or set display one item a line (never on one line below), and the
    return type after parameters one a line on a line of its own when the comment needs it."""
    ph = """\
        @autotune(BLOCK in {16, 32, 64, 128, 256, 512}, ROWS in {1, 2})
        kernel k(t: tensor<f32>[N]) {
            t[0] = 1.0
        }
        fn f(
            x: f32, // the value
            y: f32,
        ) -> f32 { // returns the sum of both
            return x + y
        }
        """
    python = convert(ph, 34)  # the width of `from __future__ import annotations`
    assert "    BLOCK={\n        16,\n        32,\n" in python
    assert "        512,\n    },\n    ROWS={1, 2},\n)\n" in python
    assert "    y: ph.f32,\n) -> (\n    ph.f32\n):  # returns the sum of both\n" in python
    assert round_trips(ph, python)
