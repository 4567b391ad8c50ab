"""mkdocs hooks: make the generated pages (API reference, tutorials) before each build."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docs_pages


def on_pre_build(config, **kwargs) -> None:
    docs_pages.generate(run=os.environ.get("PHOBOS_DOCS_RUN", "1") != "0")
