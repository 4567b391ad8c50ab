"""The tensor-core dot path's choices: cp.async stages, the warps' grid, the emitted k-loop."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from phobos.compile.check import lower
from phobos.compile.codegen import Specialization, generate
from phobos.compile.codegen.dot_loop import MAX_STAGES, blocks_pair, pipeline_stages
from phobos.compile.codegen.layout import MmaLayout
from phobos.compile.codegen.specialization import TensorSpecialization
from phobos.compile.pipeline import parse_file

MATMUL = Path(__file__).resolve().parents[3] / "examples" / "matmul.ph"
STAGE_128x128x64 = 128 * 72 * 2 + 64 * 136 * 2  # a and b, rows padded by 8 halves


def _matmul_source(arch: str = "sm_90", **tile: int) -> str:
    values = {"GROUP_M": 8, "ACTIVATION": 0, **tile}
    kernel = lower(parse_file(MATMUL), "matmul", values)
    facts = TensorSpecialization(16, True)
    spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
    return generate(kernel, spec, arch).source


def test_blocks_pair_when_the_accumulator_leaves_room_in_half_the_registers():
    assert blocks_pair(256, 64)  # 128x128 on 256 threads: 64 words of 128 registers
    assert blocks_pair(128, 128)  # 128x128 on 128 threads: 255 registers a thread
    assert not blocks_pair(256, 128)
    assert not blocks_pair(512, 32)


def test_paired_blocks_keep_to_half_an_sm_and_a_block_alone_fills_it():
    assert pipeline_stages(STAGE_128x128x64, "sm_90", paired=True) == 3  # 105 KiB of 228
    assert pipeline_stages(STAGE_128x128x64, "sm_90", paired=False) == MAX_STAGES
    assert pipeline_stages(10_000, "sm_90", paired=True) == MAX_STAGES


def test_small_shared_memory_cards_keep_two_stages():
    assert pipeline_stages(STAGE_128x128x64, "sm_86", paired=False) == 2
    assert pipeline_stages(STAGE_128x128x64, "", paired=True) == 2
    assert pipeline_stages(200_000, "sm_90", paired=False) == 2  # never fewer than two


def test_a_pairing_k_loop_tells_ptxas_two_blocks_share_an_sm():
    assert "__launch_bounds__(256, 2)" in _matmul_source(BM=128, BN=128, BK=64, NUM_THREADS=256)
    # 128 threads pair without a cap (255 registers each)
    assert "__launch_bounds__(128)" in _matmul_source(BM=128, BN=128, BK=64, NUM_THREADS=128)


@pytest.mark.parametrize(
    ("shape", "threads", "grid"),
    [
        ((128, 128), 256, (2, 4)),  # 64x32 a warp: 4 a and 4 b fragments per k-step
        ((64, 64), 128, (2, 2)),
        ((128, 16), 256, (8, 1)),
        ((16, 16), 128, None),  # 2 tiles on 4 warps: guarded, tile by tile
    ],
)
def test_warps_form_the_grid_with_the_fewest_fragment_bytes(shape, threads, grid):
    assert MmaLayout(shape, threads).warp_grid == grid


def test_every_tile_belongs_to_exactly_one_warp_and_repeat():
    layout = MmaLayout((128, 64), 256)
    down, across = layout.warp_grid
    seen = []
    for r in range(layout.repeats):
        for tid in range(0, layout.threads, 32):
            group = {"g": r * layout.threads + tid}
            row, col = (eval(e.replace("/", "//"), {}, group) for e in layout.tile())
            assert row % down == (tid // 32) // across and col % across == (tid // 32) % across
            seen.append((row, col))
    assert sorted(seen) == [(row, col) for row in range(128 // 16) for col in range(64 // 8)]


def test_the_k_loop_waits_for_its_own_stage_and_loads_fragments_with_ldmatrix_x4():
    source = _matmul_source(BM=128, BN=128, BK=64, NUM_THREADS=256)
    loop = source[source.index("for (index_t v_k") :]
    assert "copy_async_wait_pending<1>()" in loop  # 3 stages: the newest group may pend
    assert loop.count("copy_async_commit()") == 1
    # a whole, aligned window: one untested cp.async a group; else group by group with tests
    assert loop.count("phobos::copy_async_16(") == 2 and loop.count("copy_group_async") == 2
    a_loads = re.findall(r"load_matrix_x4\(fa\d", loop)
    b_loads = re.findall(r"load_matrix_x4_trans\(", loop)
    assert (len(a_loads), len(b_loads)) == (4, 2)  # per k-step of 16, for 16 mma
    assert loop.count("mma_16816") == 16
    # the rows' and columns' presence is applied once, after the loop
    body = loop[: loop.index("\n    }\n")]
    assert "set_lane" not in body
