"""phobos-compile end to end: files, stages, values, errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from phobos.compile.cli import main
from phobos.compile.diagnostics import PhobosError
from phobos.compile.syntax import format_module, parse
from phobos.compile.toolchain import INSTALL_HINT

SAXPY = Path(__file__).resolve().parents[3] / "examples" / "saxpy_fp32.ph"
BAD = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * BLOK
    out[base :+ BLOCK] = x[base :+ BLOCK]
}
"""


@pytest.fixture(autouse=True)
def no_debug(monkeypatch):
    monkeypatch.delenv("PHOBOS_DEBUG", raising=False)


def test_writes_ptx_cubin_and_contract(tmp_path, capsys):
    assert main([str(SAXPY), "--arch", "sm_90", "-o", str(tmp_path / "build")]) == 0
    build = tmp_path / "build"
    assert sorted(p.name for p in build.iterdir()) == [
        "saxpy.contract.json",
        "saxpy.cubin",
        "saxpy.ptx",
    ]
    contract = json.loads((build / "saxpy.contract.json").read_text())
    assert (contract["kernel"], contract["arch"], contract["values"]) == (
        "saxpy",
        "sm_90",
        {"BLOCK": 1024},
    )
    assert (build / "saxpy.cubin").read_bytes().startswith(b"\x7fELF")
    assert f".entry {contract['entry']}(" in (build / "saxpy.ptx").read_text()
    assert capsys.readouterr() == ("", "")


def test_values_and_index_width_reach_the_contract(tmp_path):
    argv = [str(SAXPY), "--arch", "sm_80", "-o", str(tmp_path), "-D", "BLOCK=0x100"]
    assert main([*argv, "--index-width", "64", "--kernel", "saxpy"]) == 0
    contract = json.loads((tmp_path / "saxpy.contract.json").read_text())
    assert contract["values"] == {"BLOCK": 256}
    assert contract["index_width"] == 64


def test_emit_phobos_prints_the_formatted_program(capsys):
    assert main([str(SAXPY), "--emit", "phobos"]) == 0
    assert capsys.readouterr().out == format_module(parse(SAXPY.read_text(), str(SAXPY)))


def test_emit_ir_prints_the_variant(capsys):
    assert main([str(SAXPY), "--emit", "ir", "-D", "BLOCK=128"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("kernel saxpy(") and "[BLOCK=128]" in out


def test_emit_cuda_and_ptx(capsys):
    assert main([str(SAXPY), "--arch", "sm_90", "--emit", "cuda"]) == 0
    assert f'#line 4 "{SAXPY}"' in capsys.readouterr().out
    assert main([str(SAXPY), "--arch", "sm_90a", "--emit", "ptx"]) == 0
    assert ".target sm_90a" in capsys.readouterr().out


def test_verbose_reports_registers_and_spills(tmp_path, capsys):
    assert main([str(SAXPY), "--arch", "sm_90", "-o", str(tmp_path), "--verbose"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("saxpy (sm_90): ") and " registers, 0 bytes spill stores, " in err


def test_an_unknown_kernel_lists_the_file_s_kernels(capsys):
    with pytest.raises(SystemExit) as raised:
        main([str(SAXPY), "--arch", "sm_90", "--emit", "ptx", "--kernel", "saxpyy"])
    assert raised.value.code == 2
    assert "has no kernel 'saxpyy' (it has: saxpy)" in capsys.readouterr().err


def test_a_program_error_is_rendered_without_a_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.ph"
    bad.write_text(BAD)
    assert main([str(bad), "--arch", "sm_90", "-o", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"{bad}:3:30: error: undefined name 'BLOK'",
        "        let base = ctx.block.x * BLOK",
        "                                 ^^^^",
        "help: did you mean 'BLOCK'?",
    ]
    assert not (tmp_path / "out").exists()


def test_phobos_debug_shows_the_traceback(tmp_path, monkeypatch):
    bad = tmp_path / "bad.ph"
    bad.write_text(BAD)
    monkeypatch.setenv("PHOBOS_DEBUG", "1")
    with pytest.raises(PhobosError):
        main([str(bad), "--emit", "ir"])


def test_a_missing_toolchain_names_the_install_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    assert main([str(SAXPY), "--arch", "sm_90", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert INSTALL_HINT in err and "Traceback" not in err


def test_runs_as_a_module_from_the_source_tree(tmp_path):
    """Where nothing is installed (PYTHONPATH=packages/*/src), `python -m` is the command."""
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-m", "phobos.compile.cli", str(SAXPY), "--emit", "phobos"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("@autotune(BLOCK in [16, 8192])")


def test_cache_compiles_once(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PHOBOS_CACHE_DIR", str(tmp_path / "cache"))
    argv = [str(SAXPY), "--arch", "sm_80", "--cache", "--verbose", "-D", "BLOCK=64"]
    assert main([*argv, "-o", str(tmp_path / "first")]) == 0
    assert "saxpy (sm_80): compiled into the kernel cache, key " in capsys.readouterr().err
    assert main([*argv, "-o", str(tmp_path / "second")]) == 0
    assert "saxpy (sm_80): from the kernel cache, key " in capsys.readouterr().err
    for name in ("saxpy.ptx", "saxpy.cubin", "saxpy.contract.json"):
        assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes()


def test_cache_needs_compiled_output(capsys):
    with pytest.raises(SystemExit):
        main([str(SAXPY), "--arch", "sm_90", "--emit", "cuda", "--cache"])
    assert "use it with -o DIR or --emit ptx" in capsys.readouterr().err


def test_cache_without_phobos_cache_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "phobos.cache", None)
    assert main([str(SAXPY), "--arch", "sm_90", "-o", str(tmp_path), "--cache"]) == 1
    assert "pip install phobos-cache" in capsys.readouterr().err
