"""The Phobos text a module spells: printed from the tree, parsed back to the same tree."""

from __future__ import annotations

from phobos.compile.span import Span
from phobos.compile.syntax import parse

EVERYTHING = '''\
import phobos.lang as ph

# Rows per block.
ROWS: ph.const = 4  # a power of two


@ph.func
def scaled(a: ph.f32, s: ph.f32) -> ph.f32:
    """Scale a by s."""
    return a * s


@ph.kernel
@ph.autotune(BLOCK=[16, 1024], BK={64, 32})
def everything(
    x: ph.tensor[ph.f32][M, N],  # input
    out: ph.tensor[ph.f16][M, N],
    alpha: ph.f32,
    flags: ph.tensor[ph.i32][64],
):
    # the row this block owns
    row: ph.let = ph.ctx.block.x * ROWS
    acc: ph.var = ph.zeros[ph.f32][ROWS, BLOCK]
    for k in range(0, N, BLOCK):  # over the columns
        tile: ph.let = x[row:+ROWS, k:+BLOCK]
        acc += ph.exp(tile - ph.max(tile, axis=1)[:, None]) @ ph.trans(ph.zeros[ph.f32][BLOCK, BLOCK])
        # more to come
    i: ph.var = 0
    while i < 3 and not (ROWS // 2 > 1 or i % 2 == 1):
        i += 1
    if (i & 1) == 0:
        acc = ph.where(acc > 0.0, acc, -ph.inf)
    elif i << 2 >= 8:
        acc = ph.fill(acc, ph.f32(0.5))
    else:
        acc = -acc * ~i ^ i | i
    out[row:+ROWS, 0:+BLOCK] = ph.f16(scaled(acc, alpha))
    flags[ph.ctx.grid.y] = ph.i32(1)
# the end
'''


def test_the_printed_text_parses_back_to_the_same_tree(translate) -> None:
    program = translate(EVERYTHING)
    assert parse(program.text, "everything.ph") == program.module


def test_the_printed_text_reads_like_phobos(translate) -> None:
    text = translate(EVERYTHING).kernel_source("everything")
    assert text.startswith(
        "// Rows per block.\n"
        "const ROWS = 4 // a power of two\n"
        "\n"
        "// Scale a by s.\n"
        "fn scaled(a: f32, s: f32) -> f32 {\n"
        "    return a * s\n"
        "}\n"
        "\n"
        "@autotune(BLOCK in [16, 1024], BK in {64, 32})\n"
        "kernel everything(\n"
        "    x: tensor<f32>[M, N], // input\n"
    )
    assert "    let row = ctx.block.x * ROWS\n" in text
    assert "    for k in 0 .. N step BLOCK {\n        // over the columns\n" in text
    assert "    while i < 3 && !(ROWS / 2 > 1 || i % 2 == 1) {\n" in text
    assert "    } else if i << 2 >= 8 {\n        acc = fill(acc, 0.5f32)\n" in text
    assert "    flags[ctx.grid.y] = 1i32\n" in text
    assert text.endswith("}\n\n// the end\n")


def test_kernel_source_leaves_other_kernels_out(translate) -> None:
    program = translate(
        """
        C: ph.const = 2


        @ph.kernel
        def first(x: ph.tensor[ph.f32][N]):
            x[0] = 1.0


        @ph.func
        def g(a: ph.f32) -> ph.f32:
            return a


        @ph.kernel
        def second(x: ph.tensor[ph.f32][N]):
            x[0] = g(2.0)
        """
    )
    assert program.kernel_source("second") == (
        "const C = 2\n"
        "\n"
        "fn g(a: f32) -> f32 {\n"
        "    return a\n"
        "}\n"
        "\n"
        "kernel second(x: tensor<f32>[N]) {\n"
        "    x[0] = g(2.0)\n"
        "}\n"
    )
    assert "kernel first" in program.text and "kernel second" in program.text


def test_the_span_map_leads_from_the_text_back_to_the_python_line(translate) -> None:
    program = translate(EVERYTHING, filename="/src/everything.py")
    text_lines = program.text.splitlines()
    line = next(i for i, t in enumerate(text_lines, 1) if "flags[ctx.grid.y] = 1i32" in t)
    col = text_lines[line - 1].index("ctx.grid.y") + 1
    found = program.span_map.lookup(Span("<phobos>", line, col, line, col + 1))
    # EVERYTHING's line 38, after the fixture's three-line header.
    assert (found.file, found.line, found.col) == ("/src/everything.py", 41, 11)
