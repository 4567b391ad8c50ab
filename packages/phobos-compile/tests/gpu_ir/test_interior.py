"""Window copies tested once (``passes/interior.py``).

Every copy of matmul's and attention's loops splits into an untested copy, for a
window inside the tensor and on 16 bytes, and the tested one for the edges; the
executor runs both against the interpreter at sizes that take each path, and fails
an untested copy of a window that leaves the tensor.
"""

from __future__ import annotations

import numpy as np
import pytest

from phobos.compile.gpu import ir
from phobos.compile.gpu.executor import ExecutionError, execute

from .test_mma_waits import (
    MATMUL,
    assert_matmul_matches_the_interpreter,
    gpu_ir,
    matmul_args,
    matmul_reference,
)


def copies(kernel: ir.Kernel) -> list[ir.CopyAsync]:
    return [op for op in kernel.walk() if isinstance(op, ir.CopyAsync)]


def splits(kernel: ir.Kernel) -> list[ir.If]:
    return [
        op
        for op in kernel.walk()
        if isinstance(op, ir.If)
        and [type(o) for o in op.regions[0].ops] == [ir.CopyAsync, ir.Yield]
        and [type(o) for o in op.regions[1].ops] == [ir.CopyAsync, ir.Yield]
    ]


def test_every_copy_of_the_k_loop_has_an_untested_twin():
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL)
    found = splits(kernel)
    assert len(found) == len(copies(kernel)) // 2 == 6  # a and b: two prologue stages, the loop
    for split in found:
        (bare, _), (tested, _) = split.regions[0].ops, split.regions[1].ops
        assert (bare.checked, bare.aligned) == (False, True)
        assert tested.checked and bare.operands == tested.operands


def test_a_tensor_not_known_on_16_bytes_keeps_only_tested_copies():
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL, align={"a": 2, "b": 16, "c": 16})
    split = {split.regions[0].ops[0].tensor for split in splits(kernel)}
    tested = [op for op in copies(kernel) if op.checked]
    untested = [op for op in copies(kernel) if not op.checked]
    assert split == {"b"} and {op.tensor for op in untested} == {"b"}
    assert len([op for op in tested if op.tensor == "b"]) == len(untested)


@pytest.mark.parametrize("shape", [(256, 256, 512), (200, 136, 300), (128, 128, 100)])
def test_both_paths_match_the_interpreter(shape):
    assert_matmul_matches_the_interpreter(shape)


def test_the_executor_fails_an_untested_copy_at_the_edge():
    kernel = gpu_ir("matmul.ph", "matmul", MATMUL)
    for split in splits(kernel):
        split.regions[1].ops[0].checked = False  # the edge's copy loses its tests
    with pytest.raises(ExecutionError, match=r"untested copy_async of 'a' .* reads outside"):
        execute(kernel, (1, 1, 1), matmul_args(100, 128, 64))


def strides_tested(kernel: ir.Kernel) -> set[str]:
    """The tensors whose row stride an interior test reads."""
    return {op.tensor for op in kernel.walk() if isinstance(op, ir.Stride)}


def test_rows_known_on_16_bytes_are_not_tested_at_run_time():
    """With the specialisation's row alignment (every row on 16 bytes), the window test
    reads no stride; without it, each copy's test reads its tensor's row stride.  (On
    sm_90a such rows go by TMA, which tests nothing: this is a 64-bit variant's k-loop.)"""
    rows = {"a": 16, "b": 16, "c": 16}
    known = gpu_ir("matmul.ph", "matmul", MATMUL, row_align=rows, index_width=64)
    assert len(splits(known)) == 6 and strides_tested(known) == set()
    assert strides_tested(gpu_ir("matmul.ph", "matmul", MATMUL, index_width=64)) == {"a", "b"}
    args = matmul_args(200, 136, 304)  # rows of 608 bytes: on 16
    expected = matmul_reference(args, 4)
    execute(known, (4, 1, 1), args)
    np.testing.assert_allclose(
        args[2].astype(np.float32), expected.astype(np.float32), rtol=2e-3, atol=2e-3
    )


def test_the_executor_refuses_arguments_that_break_the_row_alignment():
    known = gpu_ir(
        "matmul.ph", "matmul", MATMUL, row_align={"a": 16, "b": 16, "c": 16}, index_width=64
    )
    with pytest.raises(ExecutionError, match=r"a: strides \(600, 2\) \(bytes\) put rows off 16"):
        execute(known, (4, 1, 1), matmul_args(200, 136, 300))
