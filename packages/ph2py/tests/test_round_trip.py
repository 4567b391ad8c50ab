"""The Python ph2py writes spells exactly the .ph program, and converting again changes nothing."""

from __future__ import annotations

from pathlib import Path

from ph2py import convert_source
from ph2py.line_length import line_length_for
from phobos.compile.syntax import format_module, parse
from phobos.frontend import translate_source


def test_every_example_and_the_corpus_are_converted(
    repo: Path, program_sets: dict[str, list[Path]]
) -> None:
    assert repo / "examples" / "saxpy_fp32.ph" in program_sets["examples"]
    assert len(program_sets["corpus"]) >= 6
    assert program_sets["moved"]


def test_the_python_spells_the_same_program(exact_program: Path) -> None:
    text = exact_program.read_text(encoding="utf-8")
    conversion = convert_source(text, str(exact_program))
    program = translate_source(conversion.python, str(exact_program.with_suffix(".py")))
    expected = parse(text, str(exact_program))
    assert program.text == format_module(expected)
    assert program.module == expected  # comments included; spans are not compared
    assert conversion.warnings == ()


def test_converting_again_changes_nothing(any_program: Path) -> None:
    text = any_program.read_text(encoding="utf-8")
    first = convert_source(text, str(any_program)).python
    assert convert_source(text, str(any_program)).python == first
    assert convert_source(text, str(any_program), existing=first).python == first
    compile(first, str(any_program.with_suffix(".py")), "exec")


def test_the_overview_saxpy_is_written_as_the_overview_page_spells_it(repo: Path) -> None:
    """Converting saxpy_fp32.ph into the hand-written examples/saxpy.py changes no byte of it."""
    ph = repo / "examples" / "saxpy_fp32.ph"
    py = repo / "examples" / "saxpy.py"
    existing = py.read_text(encoding="utf-8")
    text = ph.read_text(encoding="utf-8")
    merged = convert_source(text, str(ph), existing, str(py), line_length=line_length_for(py))
    assert merged.python == existing
