"""Windows loaded before a block's first reduction: which move, where to, and which stay.

Layer norm's weights and biases (tensors the kernel never writes, at fixed
starts) are loaded before the row's first barrier, after the row itself, by a
CTA of 1024 threads; a window of a tensor the kernel writes, or at a start that
a variable gives, or below a later ``return``, or in a smaller CTA, stays where its statement reads it.
"""

from __future__ import annotations

from phobos.compile.check import lower
from phobos.compile.codegen import Specialization, generate
from phobos.compile.codegen.specialization import TensorSpecialization
from phobos.compile.syntax import parse

NORM = """\
@autotune(BLOCK_N in [16, 16384])
kernel norm(x: tensor<f16>[M, N], w: tensor<f16>[N], y: tensor<f16>[M, N],
            mean: tensor<f32>[M]) {
    let row = ctx.block.x
    let values = f32(x[row, 0 :+ BLOCK_N])
    let mu = sum(values) / f32(N)
    mean[row] = mu
    y[row, 0 :+ BLOCK_N] = f16((values - mu) * f32(w[0 :+ BLOCK_N]))
}
"""

WRITTEN = """\
@autotune(BLOCK_N in [16, 4096])
kernel shift(x: tensor<f32>[N], y: tensor<f32>[N]) {
    let total = sum(x[0 :+ BLOCK_N])
    y[0 :+ BLOCK_N] = y[0 :+ BLOCK_N] + total
}
"""

VARIABLE_START = """\
@autotune(BLOCK_N in [16, 4096])
kernel shift(x: tensor<f32>[M, N], w: tensor<f32>[M, N], y: tensor<f32>[M, N]) {
    let row = ctx.block.x
    let total = sum(x[row, 0 :+ BLOCK_N])
    y[row, 0 :+ BLOCK_N] = w[row, 0 :+ BLOCK_N] + total
}
"""

GUARDED = """\
@autotune(BLOCK_N in [16, 4096])
kernel guarded(x: tensor<f32>[N], w: tensor<f32>[N], y: tensor<f32>[N]) {
    let total = sum(x[0 :+ BLOCK_N])
    if total > 0.0 {
        return
    }
    y[0 :+ BLOCK_N] = w[0 :+ BLOCK_N] + total
}
"""


def _source(text: str, name: str, values: dict[str, int]) -> str:
    kernel = lower(parse(text, f"{name}.ph"), name, values)
    facts = TensorSpecialization(16, True)
    spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
    return generate(kernel, spec, "sm_90").source


def test_ctas_of_fewer_than_1024_threads_keep_their_loads_in_place():
    source = _source(NORM, "norm", {"BLOCK_N": 16384, "NUM_THREADS": 512})
    assert _first(source, "shuffle_xor") < _first(source, "(p_w")


def test_no_window_moves_above_a_return():
    source = _source(GUARDED, "guarded", {"BLOCK_N": 4096, "NUM_THREADS": 1024})
    assert _first(source, "return;") < _first(source, "(p_w")


def _first(source: str, text: str) -> int:
    assert text in source, text
    return source.index(text)


def test_weights_are_loaded_after_the_row_and_before_the_first_barrier():
    source = _source(NORM, "norm", {"BLOCK_N": 16384, "NUM_THREADS": 1024})
    barrier = _first(source, "__syncthreads();")
    assert _first(source, "load_group<16, true>(p_x") < _first(source, "(p_w") < barrier
    assert source.count("(p_w +") == 1  # the statement reads the registers loaded early


def test_a_window_of_a_tensor_the_kernel_writes_stays_after_the_reduction():
    source = _source(WRITTEN, "shift", {"BLOCK_N": 4096})
    assert _first(source, "shuffle_xor") < _first(source, "(p_y")


def test_a_window_at_a_variables_start_stays_after_the_reduction():
    source = _source(VARIABLE_START, "shift", {"BLOCK_N": 4096})
    assert _first(source, "shuffle_xor") < _first(source, "(p_w")
