"""The ``ph2py`` command: files, folders, --check, --stdout, and errors that name the line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ph2py import convert_source
from ph2py.cli import main
from ph2py.line_length import line_length_for
from phobos.compile.diagnostics import PhobosError

SAXPY = (
    "@autotune(BLOCK in [16, 8192])\n"
    "kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {\n"
    "    let base = ctx.block.x * BLOCK\n"
    "    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]\n"
    "}\n"
)
BROKEN = "kernel k(x: tensor<f32>[N]) {\n    let y = x[0 :+ ]\n}\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def expected(ph: Path) -> str:
    return convert_source(ph.read_text(encoding="utf-8"), str(ph)).python


def test_a_file_is_written_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ph = write(tmp_path / "saxpy.ph", SAXPY)
    assert main([str(ph)]) == 0
    assert (tmp_path / "saxpy.py").read_text(encoding="utf-8") == expected(ph)
    assert capsys.readouterr().err == f"wrote {tmp_path / 'saxpy.py'}\n"


def test_dash_o_names_the_output(tmp_path: Path) -> None:
    ph = write(tmp_path / "saxpy.ph", SAXPY)
    out = tmp_path / "kernels" / "ops.py"
    assert main([str(ph), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == expected(ph)
    assert not (tmp_path / "saxpy.py").exists()


def test_a_folder_converts_every_ph_below_it(tmp_path: Path) -> None:
    first = write(tmp_path / "a.ph", SAXPY)
    second = write(tmp_path / "deep" / "er" / "b.ph", SAXPY.replace("saxpy", "other"))
    write(tmp_path / "notes.txt", "not Phobos")
    assert main([str(tmp_path)]) == 0
    for ph in (first, second):
        assert ph.with_suffix(".py").read_text(encoding="utf-8") == expected(ph)
    assert sorted(p.name for p in tmp_path.rglob("*.py")) == ["a.py", "b.py"]


def test_check_names_the_out_of_date_files_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current = write(tmp_path / "current.ph", SAXPY)
    stale = write(tmp_path / "stale.ph", SAXPY)
    missing = write(tmp_path / "missing.ph", SAXPY)
    assert main([str(current), str(stale)]) == 0
    write(stale, SAXPY.replace("alpha *", "2.0 * alpha *"))
    before = stale.with_suffix(".py").read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["--check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out == (
        f"{missing.with_suffix('.py')} is missing: ph2py would write it from {missing}\n"
        f"{stale.with_suffix('.py')} is out of date with {stale}\n"
    )
    assert not missing.with_suffix(".py").exists()
    assert stale.with_suffix(".py").read_text(encoding="utf-8") == before
    assert main(["--check", str(current)]) == 0
    assert capsys.readouterr().out == ""


def test_check_accepts_hand_edits_outside_the_definitions(tmp_path: Path) -> None:
    ph = write(tmp_path / "saxpy.ph", SAXPY)
    assert main([str(ph)]) == 0
    py = ph.with_suffix(".py")
    write(py, py.read_text(encoding="utf-8") + '\n\nif __name__ == "__main__":\n    print(1)\n')
    assert main(["--check", str(ph)]) == 0


def test_stdout_prints_the_python_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ph = write(tmp_path / "saxpy.ph", SAXPY)
    assert main(["--stdout", str(ph)]) == 0
    assert capsys.readouterr().out == expected(ph)
    assert not (tmp_path / "saxpy.py").exists()


def test_a_syntax_error_names_the_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ph = write(tmp_path / "broken.ph", BROKEN)
    assert main([str(ph)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{ph}:2:20: error: expected an expression, found `]`\n")
    assert "        let y = x[0 :+ ]\n                       ^\n" in err
    assert "Traceback" not in err
    assert not (tmp_path / "broken.py").exists()


def test_a_name_python_cannot_spell_is_an_error_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ph = write(tmp_path / "k.ph", "kernel k(t: tensor<f32>[N]) {\n    let lambda = 1.0\n}\n")
    assert main([str(ph)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{ph}:2:5: error: `lambda` is a Python keyword")
    assert "help: rename it in the .ph file (say `lambda_`)" in err
    assert not (tmp_path / "k.py").exists()


def test_one_bad_file_in_a_folder_fails_the_run_but_not_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path / "good.ph", SAXPY)
    write(tmp_path / "bad.ph", BROKEN)
    assert main([str(tmp_path)]) == 1
    assert good.with_suffix(".py").exists()
    assert not (tmp_path / "bad.py").exists()
    assert "bad.ph:2:20: error" in capsys.readouterr().err


def test_an_existing_py_that_is_not_python_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ph = write(tmp_path / "saxpy.ph", SAXPY)
    py = write(tmp_path / "saxpy.py", "def broken(:\n")
    assert main([str(ph)]) == 1
    assert f"{py}:1:12: error: cannot convert into {py}" in capsys.readouterr().err
    assert py.read_text(encoding="utf-8") == "def broken(:\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.ph"], "missing.ph: no such file or folder"),
        (["notes.txt"], "notes.txt is not a .ph file"),
        (["a.ph", "b.ph", "-o", "out.py"], "-o names the output of one .ph file"),
        (["--stdout", "a.ph", "b.ph"], "--stdout prints the Python of one .ph file"),
        (["latin1.ph"], "latin1.ph is not UTF-8 text"),
    ],
)
def test_usage_errors_say_what_is_wrong(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    arguments: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "a.ph", SAXPY)
    write(tmp_path / "b.ph", SAXPY)
    write(tmp_path / "notes.txt", "")
    (tmp_path / "latin1.ph").write_bytes("// caf\xe9\n".encode("latin-1"))
    assert main(arguments) == 1
    err = capsys.readouterr().err
    assert err.startswith("ph2py: error: ") and message in err
    assert not list(tmp_path.glob("*.py"))


def test_check_and_stdout_cannot_be_combined(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--check", "--stdout", "a.ph"])
    assert exited.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_phobos_debug_shows_the_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOBOS_DEBUG", "1")
    ph = write(tmp_path / "broken.ph", BROKEN)
    with pytest.raises(PhobosError):
        main([str(ph)])


def test_the_command_runs_as_python_dash_m(tmp_path: Path) -> None:
    ph = write(tmp_path / "broken.ph", BROKEN)
    result = subprocess.run(
        [sys.executable, "-m", "ph2py", "--stdout", str(ph)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"{ph}:2:20: error:")
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------------- line length

LONG = (
    "kernel k(input_values: tensor<f32>[ROWS, COLUMNS], output_values: tensor<f32>[ROWS]) {\n"
    "    output_values[0] = input_values[0, 0]\n"
    "}\n"
)


def longest_line(path: Path) -> int:
    return max(len(line) for line in path.read_text(encoding="utf-8").splitlines())


def test_the_line_length_is_the_nearest_ruff_configurations(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 60\n")
    write(tmp_path / "package" / "pyproject.toml", "[project]\nname = 'package'\n")  # no ruff
    write(tmp_path / "package" / "sub" / "ruff.toml", "line-length = 100\n")
    first = write(tmp_path / "package" / "k.ph", LONG)
    second = write(tmp_path / "package" / "sub" / "k.ph", LONG)
    assert line_length_for(first.with_suffix(".py")) == 60
    assert line_length_for(second.with_suffix(".py")) == 100
    assert main([str(tmp_path)]) == 0
    assert longest_line(first.with_suffix(".py")) <= 60
    assert longest_line(second.with_suffix(".py")) == len(
        "def k(input_values: ph.tensor[ph.f32][ROWS, COLUMNS], output_values: ph.tensor[ph.f32][ROWS]):"
    )


def test_without_a_ruff_configuration_the_line_length_is_88(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[project]\nname = 'plain'\n")
    ph = write(tmp_path / "k.ph", LONG)
    if any((folder / "pyproject.toml").exists() for folder in tmp_path.parent.parents):
        pytest.skip("a pyproject.toml above the temporary folder may configure ruff")
    assert line_length_for(ph.with_suffix(".py")) == 88
    assert main([str(ph)]) == 0
    assert ph.with_suffix(".py").read_text(encoding="utf-8") == expected(ph)


def test_dash_dash_line_length_overrides_the_configuration_and_check_follows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "pyproject.toml", "[tool.ruff]\nline-length = 60\n")
    ph = write(tmp_path / "k.ph", LONG)
    assert main([str(ph), "--line-length", "120"]) == 0
    assert longest_line(ph.with_suffix(".py")) > 60
    assert main(["--check", str(ph), "--line-length", "120"]) == 0
    assert main(["--check", str(ph)]) == 1  # the configuration's 60 wraps it differently
    assert capsys.readouterr().out == f"{ph.with_suffix('.py')} is out of date with {ph}\n"


def test_a_line_length_that_is_not_a_length_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(tmp_path / "pyproject.toml", '[tool.ruff]\nline-length = "wide"\n')
    ph = write(tmp_path / "k.ph", LONG)
    assert main([str(ph)]) == 1
    assert capsys.readouterr().err == (
        f"ph2py: error: line-length in {config} is 'wide', not a positive number\n"
    )
    assert not ph.with_suffix(".py").exists()
    with pytest.raises(SystemExit) as exc:
        main([str(ph), "--line-length", "0"])
    assert exc.value.code == 2
    assert "'0' is not a positive number of columns" in capsys.readouterr().err
