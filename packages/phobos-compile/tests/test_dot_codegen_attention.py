"""How the attention tutorial's dots stage their operands, read from the emitted CUDA.

Window operands (``q``, ``trans(k[...])``, ``v[...]``) go to shared memory by
``cp.async``, never through registers; ``trans(k)`` lies as it is and is read
by ``ldmatrix`` without ``.trans``; ``f16(p)`` is stored a 16-byte group at a
time; the forward's registers fit without spills at BLOCK_M=128, in half an SM's
registers where its dots' results are small enough (``dot_pairing``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from phobos.compile.check import lower
from phobos.compile.codegen import Specialization, generate
from phobos.compile.codegen.specialization import TensorSpecialization
from phobos.compile.pipeline import compile_kernel, parse_file

ATTENTION = Path(__file__).resolve().parents[3] / "examples" / "attention.ph"
FORWARD = {"D": 64, "BLOCK_M": 128, "BLOCK_N": 64, "NUM_THREADS": 256, "CAUSAL": 0}


def _source(kernel_name: str, values: dict[str, int]) -> str:
    kernel = lower(parse_file(ATTENTION), kernel_name, values)
    facts = TensorSpecialization(16, True)
    spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
    return generate(kernel, spec, "sm_90").source


def _loop(kernel_name: str, values: dict[str, int]) -> str:
    """The generated source of the kernel's loop (from its header to the end of the kernel)."""
    source = _source(kernel_name, values)
    return source[re.search(r"for \(index_t v_(kv|qs) = ", source).start() :]


def test_forward_copies_q_k_and_v_and_reads_k_as_it_lies():
    loop = _loop("attention_forward", FORWARD)
    for tensor in ("p_q", "p_k", "p_v"):
        assert re.search(rf"copy_async_16\(dot_[ab]\d+ \+ c0 \* 72 \+ c1, {tensor} ", loop)
        assert f"load_group<16, true>({tensor}" not in loop  # never through registers
    # the first dot's b is k's [n, k] rows: ldmatrix without .trans, 8 lanes a k-half
    first = loop[: loop.index("mma_16816")]
    assert "load_matrix_x4_trans" not in first
    assert re.search(r"load_matrix_x4\(fb0_fb1, .*\+ kk \+ \(\(tid / 8\) % 2\) \* 8\)", first)
    # f16(p) is stored a group at a time, beside v's copy
    assert re.search(r"store_vectors<16>\(dot_a\d+ \+ c0 \* 72 \+ c1, group\d+\)", loop)
    assert not re.search(r"dot_a\d+\[c0 \* 72 \+ c1\] = ", loop)


def test_backward_kernels_copy_their_window_operands():
    dkdv = _loop("attention_backward_dkdv", {**FORWARD, "BLOCK_M": 64})
    # keys (a reloaded let) are copied beside trans(queries) staged from registers
    assert re.search(r"copy_async_16\(dot_a\d+ \+ c0 \* 72 \+ c1, p_k ", dkdv)
    dq = _loop("attention_backward_dq", {**FORWARD, "BLOCK_M": 64})
    # dot(grad, trans(v[...])): both windows, both copied
    assert re.search(r"copy_async_16\(dot_a\d+ \+ c0 \* 72 \+ c1, p_do ", dq)
    assert re.search(r"copy_async_16\(dot_b\d+ \+ c0 \* 72 \+ c1, p_v ", dq)
    # lets of the loop body that only dots read are copied by each dot, never held
    for loop, tensor in ((dkdv, "p_q"), (dkdv, "p_do"), (dq, "p_k")):
        assert (
            len(re.findall(rf"copy_async_16\(dot_[ab]\d+ \+ c0 \* 72 \+ c1, {tensor} ", loop)) == 2
        )
        assert f"load_group<16, true>({tensor}" not in loop


def test_whole_windows_set_presence_words_at_once():
    loop = _loop("attention_forward", FORWARD)
    first = loop[loop.index("mma_16816") :]
    whole = re.search(r"if \((s\d+) && s\d+ >= 0 && s\d+ <= e_S - 128 && ", first)
    assert whole, "no block-uniform test of the first dot's windows"
    assert re.search(r"t\d+_m\[r\] = 15u;", first[whole.end() :])


@pytest.mark.parametrize(
    ("kernel_name", "values", "paired"),
    [
        ("attention_forward", FORWARD, True),  # two results of 32 words a thread
        ("attention_forward", {**FORWARD, "D": 128, "BLOCK_M": 64}, True),  # 16 + 32
        ("attention_forward", {**FORWARD, "D": 128}, False),  # 32 + 64
        ("attention_backward_dkdv", {**FORWARD, "BLOCK_M": 32}, True),  # four dots, 48 words
        ("attention_backward_dkdv", {**FORWARD, "BLOCK_M": 64}, False),  # four dots, 64 words
        ("attention_backward_dq", {**FORWARD, "BLOCK_M": 64, "BLOCK_N": 32}, True),  # 8 + 8 + 16
    ],
)
def test_two_blocks_an_sm_while_the_dots_results_fit_half_the_registers(
    kernel_name, values, paired
):
    bounds = "__launch_bounds__(256, 2)" if paired else "__launch_bounds__(256)\n"
    assert bounds in _source(kernel_name, values)


def test_forward_at_block_m_128_does_not_spill():
    compiled = compile_kernel(
        parse_file(ATTENTION), "attention_forward", FORWARD, arch="sm_90", verbose=True
    )
    assert compiled.resources.spill_stores == 0
    assert compiled.resources.spill_loads == 0


def test_a_masked_register_operand_is_staged_after_the_vote_with_no_barrier_of_its_own():
    # f16(p) has absent lanes: the block votes whether every lane is present, and that vote
    # (a barrier) is what orders earlier readers of the buffer before p's stores
    loop = _loop("attention_forward", FORWARD)
    second = loop[loop.index("mma_16816") :]
    vote = re.search(r"const bool dot_a\d+_full = __syncthreads_and\(mine\d+\) != 0;\n", second)
    assert vote
    after = second[vote.end() :]
    assert re.match(r"\s*phobos::f16\* dot_a\d+ = ", after)
