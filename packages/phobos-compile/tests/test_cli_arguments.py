"""phobos-compile's command line: what it refuses before compiling anything."""

from __future__ import annotations

import pytest

from phobos.compile.cli import main


def _usage_error(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2
    return capsys.readouterr().err


def test_needs_an_output_or_a_stage(capsys):
    err = _usage_error(capsys, ["k.ph", "--arch", "sm_90"])
    assert "-o DIR" in err and "--emit" in err


def test_needs_an_arch_to_generate_code(capsys):
    err = _usage_error(capsys, ["k.ph", "-o", "out"])
    assert "--arch is needed" in err


def test_an_arch_must_be_a_card_name(capsys):
    err = _usage_error(capsys, ["k.ph", "--arch", "hopper", "-o", "out"])
    assert "'hopper' is not a GPU architecture" in err


@pytest.mark.parametrize("bad", ["BLOCK", "BLOCK=x", "=4", "1B=4"])
def test_a_value_must_be_name_equals_integer(capsys, bad):
    err = _usage_error(capsys, ["k.ph", "--arch", "sm_90", "-o", "out", "-D", bad])
    assert "expected NAME=INTEGER" in err


def test_the_index_width_is_32_or_64(capsys):
    err = _usage_error(capsys, ["k.ph", "--arch", "sm_90", "-o", "out", "--index-width", "16"])
    assert "invalid choice" in err


def test_a_missing_file_is_one_line_not_a_traceback(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("PHOBOS_DEBUG", raising=False)
    missing = tmp_path / "missing.ph"
    assert main([str(missing), "--emit", "phobos"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("phobos-compile: error: ") and str(missing) in err
    assert "Traceback" not in err
