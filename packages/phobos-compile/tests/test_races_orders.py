"""The static race check on tiles numbered through `/` and `%`: tutorial 03's grouped order and
the row-major order are proved; orders that give two blocks one tile are still reported."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from phobos.compile.check import lower
from phobos.compile.diagnostics import register_source
from phobos.compile.pipeline import variant_values
from phobos.compile.races import check_races
from phobos.compile.syntax import parse
from phobos.frontend.translate import translate_file

ROOT = Path(__file__).resolve().parents[3]
VARIANTS = [
    {"BM": bm, "BN": bn, "ACTIVATION": act}
    for bm, bn, act in itertools.product((64, 128), (64, 128), (0, 1))
]


def lowered(source: str, values: dict[str, int] | None = None, file: str = "k.ph"):
    register_source(file, source)
    module = parse(source, file)
    name = module.kernels[0].name
    return lower(module, name, variant_values(module, [name], values or {})[name])


def warnings_of(source: str, values: dict[str, int] | None = None):
    return check_races(lowered(source, values))


@pytest.mark.parametrize("values", VARIANTS, ids=str)
def test_the_tutorial_kernel_spelled_in_phobos_is_proved(values):
    path = ROOT / "examples" / "matmul.ph"
    assert check_races(lowered(path.read_text(), values, str(path))) == []


@pytest.mark.parametrize("values", VARIANTS, ids=str)
def test_the_tutorial_kernel_spelled_in_python_is_proved(values):
    module = translate_file(ROOT / "docs" / "tutorials" / "03_matmul.py").module
    kernel = lower(module, "matmul", variant_values(module, ["matmul"], values)["matmul"])
    assert check_races(kernel) == []


def test_the_proof_is_cheap():
    kernel = lowered((ROOT / "examples" / "matmul.ph").read_text())
    rounds = []
    for _ in range(5):  # the best round: a busy 2-core CI machine stalls some of them
        start = time.perf_counter()
        for _ in range(10):
            check_races(kernel)
        rounds.append((time.perf_counter() - start) / 10)
    assert min(rounds) < 0.05, rounds


# Tutorial 03's kernel, with the lines that number the tiles and the store left to each test.
GROUPED = """\
kernel mm(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N]) {{
    let blocks_m = (M + 64 - 1) / 64
    let blocks_n = (N + 32 - 1) / 32
    let group_blocks = 8 * blocks_n
    let first_row = ctx.block.x / group_blocks * 8
    let group_rows = minimum(blocks_m - first_row, 8)
    let in_group = ctx.block.x {in_group_op} group_blocks
    let m = (first_row + {row_offset}) * 64
    let n = {col} * 32
    var acc = zeros<f32>[64, 32]
    for k in 0 .. K step 16 {{
        acc = dot(a[m :+ 64, k :+ 16], b[k :+ 16, n :+ 32], acc)
    }}
    {store}
}}
"""
STORE = "c[m :+ 64, n :+ 32] = f16(acc)"
STORE_LINE = 14


def grouped(in_group_op="%", row_offset="in_group % group_rows", col="in_group / group_rows"):
    return GROUPED.format(in_group_op=in_group_op, row_offset=row_offset, col=col, store=STORE)


PROVED = {
    "grouped": grouped(),
    "grouped, the row's % of the block number (Triton's older spelling)": grouped(
        row_offset="ctx.block.x % group_rows"
    ),
    "grouped, spelled the other way round": grouped()
    .replace("minimum(blocks_m - first_row, 8)", "minimum(8, blocks_m - first_row)")
    .replace("ctx.block.x / group_blocks * 8", "8 * (ctx.block.x / group_blocks)"),
    "grouped, with blocks_m the extent itself": grouped().replace("(M + 64 - 1) / 64", "M"),
    "grouped, read and written in place": GROUPED.format(
        in_group_op="%",
        row_offset="in_group % group_rows",
        col="in_group / group_rows",
        store="c[m :+ 64, n :+ 32] = c[m :+ 64, n :+ 32] + f16(acc)",
    ),
    "row-major": """\
kernel mm(c: tensor<f32>[M, N]) {
    let blocks_n = (N + 31) / 32
    let row = ctx.block.x / blocks_n
    let col = ctx.block.x % blocks_n
    c[row * 16 :+ 16, col * 32 :+ 32] = zeros<f32>[16, 32]
}
""",
    "column-major, with offsets inside the tile": """\
kernel mm(c: tensor<f32>[M, N]) {
    let blocks_m = (M + 31) / 32
    let row = ctx.block.x % blocks_m
    let col = ctx.block.x / blocks_m
    c[row * 32 :+ 16, col * 64 + 8 :+ 32] = zeros<f32>[16, 32]
    c[row * 32 + 16 :+ 16, col * 64 + 40 :+ 24] = zeros<f32>[16, 24]
}
""",
    "row-major along y, batches along x": """\
kernel mm(c: tensor<f32>[B, M, N], blocks_n: i32) {
    let row = ctx.block.y / blocks_n
    let col = ctx.block.y % blocks_n
    c[ctx.block.x, row * 16 :+ 16, col * 16 :+ 16] = zeros<f32>[16, 16]
}
""",
}


@pytest.mark.parametrize("name", sorted(PROVED))
def test_one_to_one_orders_are_proved(name):
    assert PROVED[name] != grouped() or name == "grouped"
    assert warnings_of(PROVED[name]) == []


RACY = {
    # every block of a group gets in_group 0, so the group's blocks write one tile
    "/ where % belongs": grouped(in_group_op="/"),
    # blocks 0 and group_rows both get tile (0, 0)
    "the column from %": grouped(col="in_group % group_rows"),
    # the row no longer tells the group_rows blocks of a column apart
    "the row's % dropped": grouped(row_offset="0"),
    # in the last group, of fewer than 8 rows, blocks 0 and group_rows get tile (first_row, 0)
    "the column over the wrong count": grouped(col="in_group / 8"),
    # blocks 0 and w - 1 both get tile (0, 0)
    "row-major over two different counts": """\
kernel mm(c: tensor<f32>[M, N], w: i32) {
    let row = ctx.block.x / w
    let col = ctx.block.x % (w - 1)
    c[row * 16 :+ 16, col * 16 :+ 16] = zeros<f32>[16, 16]
}
""",
    "row-major with a window longer than its stride": """\
kernel mm(c: tensor<f32>[M, N], w: i32) {
    let row = ctx.block.x / w
    let col = ctx.block.x % w
    c[row * 16 :+ 16, col * 16 :+ 32] = zeros<f32>[16, 32]
}
""",
}


@pytest.mark.parametrize("name", sorted(RACY))
def test_orders_that_may_give_two_blocks_one_tile_are_reported(name):
    (warning,) = warnings_of(RACY[name])
    assert warning.message == "cannot prove that blocks write disjoint elements of 'c'"
    assert "race_check=True" in warning.help


def test_too_few_tile_rows_for_the_tensor_is_reported():
    """blocks_m rounded to 128-row tiles while tiles are 64 rows: a grid with more blocks than
    tiles has groups past blocks_m whose rows are inside the tensor, and they may collide."""
    source = grouped().replace("(M + 64 - 1) / 64", "(M + 128 - 1) / 128")
    (warning,) = warnings_of(source)
    assert warning.span.line == STORE_LINE


@pytest.mark.parametrize(
    ("blocks_m", "proved"),
    [("(M - 1) / 64", True), ("(M - 2) / 64", False), ("(M + 31) / 32", True), ("M / 128", False)],
)
def test_the_tile_rows_must_reach_the_end_of_the_tensor(blocks_m, proved):
    """Rows of blocks past the last group start at (blocks_m + 1) * 64 or further: proved only
    when that is past M, whatever M is."""
    source = grouped().replace("(M + 64 - 1) / 64", blocks_m)
    assert blocks_m in source
    assert (warnings_of(source) == []) == proved


def test_a_racy_order_read_and_written_in_place_is_reported_at_the_store():
    source = GROUPED.format(
        in_group_op="/",
        row_offset="in_group % group_rows",
        col="in_group / group_rows",
        store="c[m :+ 64, n :+ 32] = c[m :+ 64, n :+ 32] + f16(acc)",
    )
    (warning,) = warnings_of(source)
    assert (warning.span.line, warning.span.col) == (STORE_LINE, 5)
    assert warning.message == "cannot prove that blocks write disjoint elements of 'c'"


def test_reading_the_next_tile_row_names_the_store_and_the_load():
    source = GROUPED.format(
        in_group_op="%",
        row_offset="in_group % group_rows",
        col="in_group / group_rows",
        store="c[m :+ 64, n :+ 32] = c[m + 64 :+ 64, n :+ 32] + f16(acc)",
    )
    (warning,) = warnings_of(source)
    assert warning.span.line == STORE_LINE
    assert warning.message == (
        "cannot prove that the elements of 'c' this store writes are not read by another block"
    )
    (note,) = warning.notes
    assert (note.span.line, note.span.col) == (STORE_LINE, 27)


def grouped_tile(p: int, blocks_m: int, blocks_n: int, group: int) -> tuple[int, int] | None:
    """The grouped order in Phobos's integer arithmetic (non-negative operands here); None for
    a block that divides by zero, which the proof assumes no block does."""
    group_blocks = group * blocks_n
    first_row = p // group_blocks * group
    group_rows = min(blocks_m - first_row, group)
    if group_rows == 0:
        return None
    in_group = p % group_blocks
    remainder = abs(in_group) % abs(group_rows)  # % takes the dividend's sign; in_group >= 0
    quotient = in_group // abs(group_rows) * (1 if group_rows > 0 else -1)
    return first_row + remainder, quotient


@pytest.mark.parametrize("group", [1, 3, 8])
def test_the_grouped_order_gives_each_tile_inside_the_tensor_to_one_block(group):
    """The theorem races.orders relies on, checked by enumeration on small grids, with grids
    larger than the tiles: tiles past the last row or column touch no element."""
    for blocks_m, blocks_n in itertools.product(range(1, 12), range(1, 6)):
        owners: dict[tuple[int, int], int] = {}
        for p in range(4 * blocks_m * blocks_n * group):
            tile = grouped_tile(p, blocks_m, blocks_n, group)
            if tile is None or not (0 <= tile[0] < blocks_m and 0 <= tile[1] < blocks_n):
                continue
            assert tile not in owners, (blocks_m, blocks_n, p, owners.get(tile))
            owners[tile] = p
        assert len(owners) == blocks_m * blocks_n
