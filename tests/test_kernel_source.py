"""Where a kernel's Python text comes from when it has no file (docs/writing-kernels.md, "The
module"): a notebook cell (IPython's own machinery, where IPython is installed), a string run
with its text in ``linecache`` (what IPython does for each cell), ``@ph.kernel(source=text)``,
a file deleted after the import; and the error where Python keeps no text (``python -c``)."""

from __future__ import annotations

import importlib.util
import itertools
import linecache
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from phobos.compile import PhobosError

IMPORTS = "from __future__ import annotations\n\nimport phobos.lang as ph\n"
DOUBLE = """\
@ph.kernel
def double(x: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N]):
    i: ph.let = ph.ctx.block.x * 16
    out[i:+16] = ph.tanh(x[i:+16]) * 2.0
"""
_names = itertools.count()


def run_string(text: str, namespace: dict, *, cached: bool) -> str:
    """Run ``text`` as a module named like an IPython cell; with ``cached``, its text is put in
    ``linecache`` first, as IPython puts a cell's.  Returns the name."""
    name = f"<phobos-test-cell-{next(_names)}>"
    if cached:
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    exec(compile(text, name, "exec"), namespace)
    return name


def doubled(kernel) -> np.ndarray:
    x = np.linspace(-2, 2, 21, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[(2,)](x, out)
    np.testing.assert_allclose(out, np.tanh(x) * 2, rtol=1e-6)
    return out


def test_a_string_whose_text_is_in_linecache_reads_like_a_file():
    namespace: dict = {}
    name = run_string(IMPORTS + DOUBLE, namespace, cached=True)
    kernel = namespace["double"]
    assert kernel.file == name
    doubled(kernel)
    assert "tanh(x[i :+ 16])" in kernel.source


def test_a_cell_uses_what_earlier_cells_imported_from_phobos_lang():
    namespace: dict = {}
    run_string(IMPORTS + "from phobos.lang import f32 as F, tanh\n", namespace, cached=True)
    cell = DOUBLE.replace("ph.tensor[ph.f32][N]", "ph.tensor[F][N]").replace("ph.tanh", "tanh")
    run_string("from __future__ import annotations\n" + cell, namespace, cached=True)
    doubled(namespace["double"])


def test_source_gives_the_text_python_keeps_none_of():
    text = IMPORTS + DOUBLE.replace("@ph.kernel\n", "@ph.kernel(source=TEXT)\n")
    namespace = {"TEXT": text}
    run_string(text, namespace, cached=False)
    doubled(namespace["double"])


def test_without_text_the_first_use_is_an_error_that_says_what_to_do():
    namespace: dict = {}
    name = run_string(IMPORTS + DOUBLE, namespace, cached=False)
    with pytest.raises(PhobosError) as caught:
        _ = namespace["double"].source
    err = caught.value
    assert err.span.file == name and err.span.line == 4  # the def's decorator
    assert "cannot read the source of 'double'" in err.message
    assert "@ph.kernel(source=text)" in (err.diagnostics[0].help or "")


def test_python_dash_c_gets_the_error_not_a_file_not_found():
    code = (
        IMPORTS
        + "import numpy as np\n"
        + DOUBLE
        + "double[(1,)](np.ones(4, np.float32), np.ones(4, np.float32))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "<string>:5:1: error: Phobos cannot read the source of 'double'" in done.stderr
    assert "FileNotFoundError" not in done.stderr and "phobos/frontend" not in done.stderr


def test_a_file_deleted_after_the_import_still_reads(tmp_path):
    path = tmp_path / "gone_kernels.py"
    path.write_text(IMPORTS + DOUBLE)
    spec = importlib.util.spec_from_file_location("gone_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path.unlink()
    linecache.checkcache()  # a traceback printed meanwhile drops the deleted file's entry
    doubled(module.double)


def test_a_kernel_defined_in_an_ipython_cell_runs():
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactive.InteractiveShell.instance()
    try:
        cells = [
            "from __future__ import annotations\nimport numpy as np\nimport phobos.lang as ph",
            DOUBLE,
            "x = np.linspace(-2, 2, 21, dtype=np.float32)\nout = np.zeros_like(x)\n"
            "double[(2,)](x, out)",
        ]
        for cell in cells:
            result = shell.run_cell(textwrap.dedent(cell), store_history=True)
            assert result.success, result.error_in_exec or result.error_before_exec
        out, x = shell.user_ns["out"], shell.user_ns["x"]
        np.testing.assert_allclose(out, np.tanh(x) * 2, rtol=1e-6)
        assert shell.user_ns["double"].file.startswith("<ipython-input-")
    finally:
        interactive.InteractiveShell.clear_instance()
