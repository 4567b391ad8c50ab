"""Every pass keeps the program's meaning: the IR after each prefix of the pipeline runs in
the executor and gives the interpreter's answer.

``conftest.PASSES`` is ``pipeline.PASSES`` (``test_pipeline_order`` checks it).  The
IR runs after lowering and after each pass; where a pass leaves shared memory that only
the later passes synchronise (instruction selection's staging, the reductions' and
conversions' exchanges), the copy that runs gets allocation and barriers first, so that
what is checked is the pass's arithmetic and data movement, the barriers being the
barrier pass's.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.gpu import pipeline
from phobos.compile.gpu.passes.allocation import allocate_shared
from phobos.compile.gpu.passes.barriers import insert_barriers
from phobos.compile.gpu.printer import format_kernel
from phobos.compile.interp import run as interpret
from phobos.compile.pipeline import parse_file

from .conftest import (
    PASSES,
    assert_same_tensors,
    build_until,
    execute,
    specialisation,
)
from .test_executor_matches_interpreter import EXAMPLES, GRIDS

MATMUL = {"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8, "NUM_THREADS": 128, "ACTIVATION": 1}
ATTENTION = {"D": 16, "BLOCK_M": 64, "BLOCK_N": 32, "NUM_THREADS": 256, "CAUSAL": 1}
KERNELS = [  # (file, kernel, values, arch)
    ("softmax.ph", "softmax", {"ROWS": 2, "BLOCK_N": 128}, "sm_90a"),
    ("softmax.ph", "softmax_online", {"ROWS": 2, "BLOCK_N": 64}, "sm_80"),
    ("layer_norm.ph", "layer_norm_backward_dx", {"ROWS": 4, "BLOCK_N": 128}, "sm_90a"),
    ("layer_norm.ph", "layer_norm_backward_dwdb", {"BLOCK_G": 16, "BLOCK_N": 32}, "sm_80"),
    # The forward's two paths under its `if` (chunks: N > BLOCK_N; one tile: N = 3071), and
    # the backward's nested loops; the wide backward's row sums, and its bands on a 2-D grid
    # (each row's rstd and c converted to the tile's layout: rows on warps).
    ("rms_norm.ph", "rms_norm_forward_bf16", {"ROWS": 2, "BLOCK_N": 128}, "sm_90a"),
    ("rms_norm.ph", "rms_norm_forward_f16", {"ROWS": 1, "BLOCK_N": 4096}, "sm_80"),
    ("rms_norm.ph", "rms_norm_backward_f16", {"ROWS": 4, "BLOCK_N": 128}, "sm_80"),
    ("rms_norm.ph", "rms_norm_backward_c_f16", {"ROWS": 4, "BLOCK_N": 256}, "sm_80"),
    ("rms_norm.ph", "rms_norm_backward_chunked_bf16", {"ROWS": 2, "BLOCK_N": 256}, "sm_90a"),
    ("matmul.ph", "matmul", MATMUL, "sm_90a"),
    ("matmul.ph", "matmul", MATMUL, "sm_80"),
    ("attention.ph", "attention_forward", ATTENTION, "sm_90a"),
]
STAGES = ["lower"] + [f"{i + 1}:{name}" for i, (name, _) in enumerate(PASSES)]
_NAMES = [name for name, _ in PASSES]
ALLOCATION = f"{_NAMES.index('allocate_shared') + 1}:allocate_shared"
BARRIERS = f"{_NAMES.index('insert_barriers') + 1}:insert_barriers"


def test_pipeline_order():
    """The helpers run ``pipeline.build``'s passes (``pipeline.PASSES``) in its order, and
    ``build_until(..., "all")`` gives the IR ``pipeline.build`` gives."""
    assert [run for _, run in PASSES] == [run for _, run, _ in pipeline.PASSES]
    for file, kernel, values, arch in KERNELS:
        tile = lower(parse_file(next(p for p in EXAMPLES if p.name == file)), kernel, values)
        built = pipeline.build(tile, arch=arch, **specialisation(tile, True))
        assert format_kernel(build_until(tile, "all", arch=arch)) == format_kernel(built), kernel


def stages(tile, arch: str):
    """(stage, IR after it) for lowering and each pass."""
    gpu = build_until(tile, None, arch=arch)
    yield "lower", copy.deepcopy(gpu)
    for i, (name, run) in enumerate(PASSES):
        run(gpu)
        yield f"{i + 1}:{name}", copy.deepcopy(gpu)


CASES = [pytest.param(*case, id=f"{case[1]}-{case[3]}") for case in KERNELS]


@pytest.mark.usefixtures("memoised_layouts")
@pytest.mark.parametrize(("file", "kernel", "values", "arch"), CASES)
def test_every_pass_keeps_the_interpreters_answer(file, kernel, values, arch):
    """After lowering and after each pass (between instruction selection and layout
    assignment too, where a product's result is distributed and its users still whole)."""
    module = parse_file(next(p for p in EXAMPLES if p.name == file))
    tile = lower(module, kernel, values)
    args, grid = GRIDS[kernel](values, np.random.default_rng(5))
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpret(tile, grid, expected)
    names = [p.name for p in tile.params]
    ran = []
    for stage, gpu in stages(tile, arch):
        if stage not in (ALLOCATION, BARRIERS):
            allocate_shared(gpu)
        if stage != BARRIERS:
            insert_barriers(gpu)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        ran.append(stage)
        execute(gpu, grid, got)
        assert_same_tensors(names, expected, got, args)
    assert ran == STAGES
