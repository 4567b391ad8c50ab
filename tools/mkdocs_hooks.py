"""mkdocs hooks: make the generated pages (API reference, tutorials) before each build."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_figures
import docs_pages


def on_pre_build(config, **kwargs) -> None:
    docs_pages.generate(run=os.environ.get("PHOBOS_DOCS_RUN", "1") != "0")
    if bench_figures.main(["--check"]) != 0:
        raise SystemExit("docs/benchmarks.md: run python tools/bench_figures.py")


def on_post_build(config, **kwargs) -> None:
    """The site's plots, drawn from the results JSON, like the tables beside them."""
    for figure in bench_figures.FIGURES:
        if bench_figures.plot(figure, Path(config["site_dir"]) / "img") is None:
            raise SystemExit("the docs build draws the benchmark plots: install matplotlib")
