"""docs/benchmarks.md's tables are the committed results JSON, and each has its plot."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("bench_figures", ROOT / "tools/bench_figures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_figures"] = module
    spec.loader.exec_module(module)
    return module


def test_the_tables_are_the_json():
    assert _tool().main(["--check"]) == 0, "run python tools/bench_figures.py"


def test_every_figure_is_on_the_page_with_its_table():
    tool = _tool()
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for figure in tool.FIGURES:
        assert f"](img/{figure.name}.png)" in page
        assert f"<!-- table: {figure.name} -->" in page
        assert (ROOT / "docs" / "img" / f"{figure.name}.png").read_bytes().startswith(b"\x89PNG")
