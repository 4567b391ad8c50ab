"""Generate the site's pages that are made from the code: the API reference and the tutorials.

    python tools/docs_pages.py [--no-run]

- ``docs/api/*.md``: one page per package, an entry for every name in its ``__all__``, each
  rendered by mkdocstrings from the docstrings where the name is defined.
- ``docs/tutorials/*.md``: one page per tutorial script: its docstring as prose, its code, what
  it prints when run here (the CPU interpreter without a GPU; ``--no-run`` leaves the output out)
  and its figures from the H200 runs.

mkdocs runs this before each build (``tools/mkdocs_hooks.py``); the pages are not committed.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# (import name, distribution, the folder of its __init__.py)
PACKAGES = [
    ("phobos.lang", "phobos-lang", "src/phobos/lang"),
    ("phobos.compile", "phobos-compile", "packages/phobos-compile/src/phobos/compile"),
    ("phobos.frontend", "phobos-frontend", "packages/phobos-frontend/src/phobos/frontend"),
    ("phobos.launch", "phobos-launch", "packages/phobos-launch/src/phobos/launch"),
    ("phobos.cache", "phobos-cache", "packages/phobos-cache/src/phobos/cache"),
    ("phobos.autotune", "phobos-autotune", "packages/phobos-autotune/src/phobos/autotune"),
    ("ph2py", "ph2py", "packages/ph2py/src/ph2py"),
]

# Figures of each tutorial (docs/img/) and the section of benchmarks.md with its table.
TUTORIAL_FIGURES = {
    "01_vector_add": (["01_vector_add.png"], "01-vector-add-fp32-gbs"),
    "02_fused_softmax": (["02_softmax.png"], "02-fused-softmax-fp32-m4096-gbs"),
    "03_matmul": (["03_matmul.png"], "03-matmul-fp16-tflops"),
    "05_layer_norm": (
        ["05_layer_norm_forward.png", "05_layer_norm_backward.png"],
        "05-layer-norm-fp16-m4096-gbs",
    ),
    "06_fused_attention": (
        ["06_attention_forward.png", "06_attention_backward.png"],
        "06-fused-attention-fp16-b4-h32-s4096-tflops",
    ),
    "08_cross_entropy": (
        [
            "08_cross_entropy_forward.png",
            "08_cross_entropy_backward.png",
            "08_cross_entropy_fused.png",
        ],
        "08-cross-entropy-fp32-t8192-gbs",
    ),
    "07_rms_norm": (
        ["07_rms_norm_forward.png", "07_rms_norm_backward.png"],
        "07-rms-norm-bf16-m4096-gbs",
    ),
}

KERNEL_OBJECT = """
## The `Kernel` object

`@ph.kernel` returns a `Kernel`. What it offers, each entry below in full:

| use | what it is |
|---|---|
| `kernel.source` | the Phobos text of the program the kernel spells (its module's consts and fns, then it) |
| `kernel.space` | the `@ph.autotune` space: its names, their candidate values and the default variant |
| `kernel[grid](*args, stream=None, race_check=False, NAME=value, ...)` | launch: `grid` is a tuple or `lambda meta: (...)` of the extents and compile-time values; keywords fix compile-time names; `stream` is a CUDA stream (torch, CuPy or a handle); `race_check=True` checks the launch for races in the CPU interpreter |
| `kernel.autotune(*args, grid=..., options=None, NAME=value)` | tune now for these arguments; returns the chosen values |
| `@kernel.reference` | a function that writes the outputs every variant must match when tuned |
| `@kernel.tuning_key` | the shape part of the tuning key, so that launches with equal keys share one result |
| `kernel.tuning_report` | the report of the latest tuning in this process (print it for a table) |
| `kernel.compile(arch="sm_90", NAME=value)` | compile one variant ahead of time, no GPU needed |

See [Writing kernels](../writing-kernels.md), [Launching](../launching.md) and
[Autotuning](../autotuning.md).
"""


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` unless ``path`` already holds it (so `mkdocs serve` does not loop)."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def public_names(package: str, folder: Path) -> list[tuple[str, str]]:
    """(name, the dotted path of what it names) for each name in the package's ``__all__``."""
    module = importlib.import_module(package)
    exported = getattr(module, "_EXPORTS", None)  # phobos.compile's lazy names
    if exported is not None:
        return [(name, f"{exported[name]}.{name}") for name in module.__all__]
    tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    origin = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                origin[alias.asname or alias.name] = _defined_in(node.module, alias.name)
    return [(name, origin.get(name, f"{package}.{name}")) for name in module.__all__]


def _defined_in(module: str, name: str) -> str:
    """``module.name``, or where ``module`` takes ``name`` from lazily (``from phobos.compile
    import PhobosError`` in phobos.lang: phobos.compile's ``_EXPORTS`` says where it lives,
    which is what mkdocstrings can find)."""
    try:
        exported = getattr(importlib.import_module(module), "_EXPORTS", None)
    except ImportError:
        exported = None
    if exported is not None and name in exported:
        return f"{exported[name]}.{name}"
    return f"{module}.{name}"


def api_page(package: str, distribution: str, folder: Path) -> str:
    module = importlib.import_module(package)
    summary = (module.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    names = public_names(package, folder)
    lines = [
        f"# `{package}`",
        "",
        f"Distribution `{distribution}` (`pip install {distribution}`). {_markdown(summary)}",
        "",
        "Every public name (the package's `__all__`), from its docstring:",
        "",
        "| name | defined in |",
        "|---|---|",
        *[f"| [`{name}`](#{path}) | `{path.rsplit('.', 1)[0]}` |" for name, path in names],
        "",
    ]
    if package == "phobos.lang":
        lines.append(KERNEL_OBJECT)
    for _, path in names:
        lines += [
            f"::: {path}",
            "    options:",
            "      show_root_heading: true",
            "      show_root_full_path: true",
            "      heading_level: 2",
            "",
        ]
    if package == "phobos.lang":
        lines += [
            "::: phobos.lang.dispatch.Dispatcher.launcher",  # what kernel[grid] returns
            "    options:",
            "      show_root_heading: true",
            "      heading_level: 2",
            "",
        ]
    return "\n".join(lines)


def api_index() -> str:
    rows = []
    for package, distribution, _ in PACKAGES:
        module = importlib.import_module(package)
        summary = (module.__doc__ or "").strip().split("\n")[0]
        rows.append(f"| [`{package}`]({package}.md) | `{distribution}` | {_markdown(summary)} |")
    return "\n".join(
        [
            "# API reference",
            "",
            "Generated from the docstrings of every package (`tools/docs_pages.py`, mkdocstrings).",
            "Each page lists every public name of its package, that is every name in its",
            "`__all__`; what is not listed there is internal and may change.",
            "",
            "| package | distribution | what it is |",
            "|---|---|---|",
            *rows,
            "",
        ]
    )


def tutorial_page(script: Path, run: bool) -> str:
    text = script.read_text(encoding="utf-8")
    tree = ast.parse(text)
    doc = ast.get_docstring(tree) or script.stem
    title, _, prose = doc.partition("\n")
    body = tree.body[0]
    code = "\n".join(text.splitlines()[body.end_lineno :]).strip("\n")
    lines = [
        f"# {title.rstrip('.')}",
        "",
        _markdown(prose.strip()),
        "",
        f"The script: [`docs/tutorials/{script.name}`]({script.name}); "
        f"its `.ph` spelling is in `examples/`. All tutorials: [Tutorials](../tutorials.md).",
        "",
        "## The code",
        "",
        "```python",
        code,
        "```",
        "",
    ]
    if run:
        output = _run(script)
        lines += [
            "## What it prints here",
            "",
            "Run by the docs build on a machine without a GPU, so in the CPU interpreter:",
            "",
            "```text",
            output.rstrip(),
            "```",
            "",
        ]
    figures, section = TUTORIAL_FIGURES.get(script.stem, ([], None))
    if figures:
        lines += ["## On the H200", ""]
        lines += [f"![{name[:-4]}](../img/{name})" for name in figures]
        lines += [
            "",
            f"The figures and their table: [Benchmarks](../benchmarks.md#{section}).",
            "",
        ]
    return "\n".join(lines)


def _run(script: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    if done.returncode:
        raise SystemExit(f"docs_pages: {script} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def _markdown(text: str) -> str:
    """reST's ``code`` as Markdown's `code`."""
    return re.sub(r"``(.+?)``", r"`\1`", text, flags=re.S)


def generate(run: bool = True) -> list[Path]:
    """Write every generated page; return those that changed."""
    changed = []
    pages = {DOCS / "api" / "index.md": api_index()}
    for package, distribution, folder in PACKAGES:
        pages[DOCS / "api" / f"{package}.md"] = api_page(package, distribution, ROOT / folder)
    for script in sorted((DOCS / "tutorials").glob("[0-9]*.py")):
        pages[script.with_suffix(".md")] = tutorial_page(script, run)
    for path, text in pages.items():
        if write_if_changed(path, text):
            changed.append(path)
    return changed


if __name__ == "__main__":
    for path in generate(run="--no-run" not in sys.argv[1:]):
        print(f"docs_pages: wrote {path.relative_to(ROOT)}")
