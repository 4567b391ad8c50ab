"""The seed's saxpy translates to exactly the seed's Phobos."""

from __future__ import annotations

from pathlib import Path

from phobos.compile.syntax import ast as ph
from phobos.frontend import find_kernel, translate_file

SAXPY_PY = """\
from __future__ import annotations

import phobos.lang as ph


@ph.kernel
@ph.autotune(BLOCK=[16, 8192])
def saxpy(x: ph.tensor[ph.f32][N], y: ph.tensor[ph.f32][N], out: ph.tensor[ph.f32][N], alpha: ph.f32):
    base: ph.let = ph.ctx.block.x * BLOCK
    out[base:+BLOCK] = alpha * x[base:+BLOCK] + y[base:+BLOCK]


print(saxpy.source)
saxpy[lambda meta: (-(-meta["N"] // meta["BLOCK"]),)](x, y, out, 2.0)  # x, y, out: torch or CuPy arrays
"""

SAXPY_PH = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""


def _window() -> ph.Window:
    return ph.Window(ph.Name("base"), ph.Name("BLOCK"))


def _f32_vector() -> ph.TensorType:
    return ph.TensorType(ph.ScalarType("f32"), (ph.Name("N"),))


EXPECTED = ph.Module(
    (
        ph.Kernel(
            "saxpy",
            (
                ph.Param("x", _f32_vector()),
                ph.Param("y", _f32_vector()),
                ph.Param("out", _f32_vector()),
                ph.Param("alpha", ph.ScalarType("f32")),
            ),
            ph.Block(
                (
                    ph.Let("base", ph.Binary("*", ph.Ctx("block", "x"), ph.Name("BLOCK"))),
                    ph.Assign(
                        ph.Subscript(ph.Name("out"), (_window(),)),
                        ph.Binary(
                            "+",
                            ph.Binary(
                                "*", ph.Name("alpha"), ph.Subscript(ph.Name("x"), (_window(),))
                            ),
                            ph.Subscript(ph.Name("y"), (_window(),)),
                        ),
                    ),
                )
            ),
            autotune=(ph.TuneParam("BLOCK", ph.PowerRange(ph.IntLit(16), ph.IntLit(8192))),),
        ),
    )
)


def saxpy_file(tmp_path: Path) -> Path:
    path = tmp_path / "saxpy.py"
    path.write_text(SAXPY_PY)
    return path


def test_saxpy_tree_is_the_seeds_program(tmp_path: Path) -> None:
    program = translate_file(saxpy_file(tmp_path))
    assert program.module == EXPECTED
    assert find_kernel(program, "saxpy") == EXPECTED.items[0]


def test_saxpy_spans_name_the_python_lines(tmp_path: Path) -> None:
    path = saxpy_file(tmp_path)
    kernel = find_kernel(translate_file(path), "saxpy")
    let, store = kernel.body.body
    assert str(let.span) == f"{path}:9:5"
    assert (let.value.span.line, let.value.span.col, let.value.span.end_col) == (9, 20, 42)
    assert str(store.target.span) == f"{path}:10:5"
    assert str(kernel.params[3].span) == f"{path}:8:88"
    assert str(kernel.autotune[0].span) == f"{path}:7:14"


def test_saxpy_source_is_the_seeds_text(tmp_path: Path) -> None:
    program = translate_file(saxpy_file(tmp_path))
    assert program.kernel_source("saxpy") == SAXPY_PH
    assert program.text == SAXPY_PH
