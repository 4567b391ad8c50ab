"""The kernel corpus (docs/examples/corpus/) in the CPU interpreter against numpy in float64:
SwiGLU and GeGLU forward and backward, rotate-half RoPE, fused dropout + residual add +
layer norm, int8 row-wise quantisation; f16 and bf16, at sizes no tile divides (absent
lanes in every last window), at fixed variants and tuned in the interpreter (no variant
WRONG); and each kernel compiled for sm_90a, where ptxas must not spill (two variants that
do are strict expected failures, named below).

The tolerances are each script's own ``TOLERANCE``, justified beside it: a result rounded
once to f16 or bf16 is off by at most 2^-11 or 2^-8 of the largest value, and the bounds
are twice that; f32 statistics get 1e-5 (1e-6 for int8's scale, one f32 division).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes  # noqa: F401  (bf16 numpy arrays: a test dependency, as in noxfile.py)
import numpy as np
import pytest

from phobos.autotune import PASSED, PRUNED, Options

CORPUS = Path(__file__).resolve().parents[1] / "docs" / "examples" / "corpus"
KINDS = ("f16", "bf16")
# Tune in the interpreter: every variant runs once, each checked against the others.
TUNE = Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False, retune=True)


def load(name: str):
    """The corpus script ``docs/examples/corpus/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"corpus_{name}", CORPUS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


swiglu = load("swiglu")
geglu = load("geglu")
rope = load("rope")
ln = load("dropout_add_layer_norm")
quant = load("int8_quant")


def nan_like(array: np.ndarray) -> np.ndarray:
    return np.full(array.shape, np.nan, array.dtype)


def assert_close(module, got: dict, expected: dict, kind: str) -> None:
    for name, want in expected.items():
        assert not np.isnan(np.asarray(got[name], np.float64)).any(), f"{name} has NaN"
        error = module.relative_error(got[name], want)
        bound = module.TOLERANCE[kind]
        assert error < bound, f"{kind} {name}: relative error {error:.2e} (bound {bound})"


def assert_tuned_without_wrong(kernel) -> None:
    """Every variant of the report passed or was pruned by the size rule."""
    report = kernel.tuning_report()
    statuses = {v.status for v in report.variants}
    assert statuses <= {PASSED, PRUNED} and PASSED in statuses, str(report)
    assert report.choice, str(report)


# ---------------------------------------------------------------- SwiGLU and GeGLU

GLU_SHAPES = [(37, 111), (1, 1), (3, 8193)]  # 4107 elements; one; 24579: no BLOCK divides
GLU_BLOCKS = [None, 256, 8192]  # the default (1024), the space's two ends


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", GLU_SHAPES, ids=str)
@pytest.mark.parametrize("block", GLU_BLOCKS)
def test_swiglu_matches_numpy(kind, shape, block):
    data = swiglu.cpu_inputs(shape, kind, seed=shape[-1])
    names = {} if block is None else {"BLOCK": block}
    got = swiglu.run_on_cpu(data, race_check=True, **names)
    assert_close(swiglu, got, swiglu.reference(**data), kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("form", ["tanh", "none"])
@pytest.mark.parametrize("shape", GLU_SHAPES, ids=str)
@pytest.mark.parametrize("block", GLU_BLOCKS)
def test_geglu_matches_numpy(kind, form, shape, block):
    data = geglu.cpu_inputs(shape, kind, seed=shape[-1])
    names = {} if block is None else {"BLOCK": block}
    got = geglu.run_on_cpu(data, form, race_check=True, **names)
    assert_close(geglu, got, geglu.reference(**data, approximate=form), kind)


def test_geglu_defaults_to_the_tanh_form():
    data = geglu.cpu_inputs((5, 7), "f16")
    c = np.full((5, 7), np.nan, np.float16)
    geglu.forward(data["gate"], data["up"], c)
    want = geglu.reference(**data, approximate="tanh")["c"]
    assert geglu.relative_error(c, want) < geglu.TOLERANCE["f16"]


def test_the_glus_refuse_other_dtypes_and_strided_arrays():
    x = np.ones(8, np.float32)
    with pytest.raises(TypeError, match="float16 or bfloat16 arrays, not float32"):
        swiglu.forward(x, x, x)
    h = np.ones((4, 4), np.float16)[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        geglu.forward(h, h, h)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("module", [swiglu, geglu], ids=["swiglu", "geglu"])
def test_the_glus_tune_in_the_interpreter_without_a_wrong_variant(module, kind):
    """N = 4107: BLOCK 256 to 4096 run and agree, 8192 is pruned (larger than the problem)."""
    data = module.cpu_inputs((37, 111), kind)
    extra = (1,) if module is geglu else ()
    flat = {k: module.flat(v) for k, v in data.items()}
    outs = [nan_like(flat["gate"]) for _ in range(3)]
    forward, backward = module.FORWARD[kind], module.BACKWARD[kind]
    forward.autotune(flat["gate"], flat["up"], outs[0], *extra, grid=module.blocks, options=TUNE)
    assert_tuned_without_wrong(forward)
    args = (flat["dc"], flat["gate"], flat["up"], outs[1], outs[2], *extra)
    backward.autotune(*args, grid=module.blocks, options=TUNE)
    assert_tuned_without_wrong(backward)
    got = module.run_on_cpu(data, *(("tanh",) if module is geglu else ()))  # the choices
    expected = module.reference(**data, **({"approximate": "tanh"} if module is geglu else {}))
    assert_close(module, got, expected, kind)


# ---------------------------------------------------------------- RoPE

# (tokens, heads, kv heads, head_dim): head_dim / 2 of 40 and 12 (no BLOCK_D divides), 64
# (one BLOCK_D), heads no BLOCK_H divides, one token, as many kv heads as heads.
ROPE_SHAPES = [(7, 5, 3, 80), (1, 1, 1, 24), (4, 9, 9, 128), (3, 33, 2, 64)]
ROPE_TILES = [None, (1, 16), (32, 128), (2, 32)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ROPE_SHAPES, ids=str)
@pytest.mark.parametrize("tiles", ROPE_TILES, ids=str)
def test_rope_matches_numpy(kind, shape, tiles):
    data = rope.cpu_inputs(*shape, kind, seed=sum(shape))
    names = {} if tiles is None else {"BLOCK_H": tiles[0], "BLOCK_D": tiles[1]}
    got = rope.run_on_cpu(data, race_check=True, **names)
    assert_close(rope, got, rope.reference(**data), kind)


def test_rope_takes_heads_sliced_from_a_qkv_buffer():
    """q and k as views of one [T, H + KH, D] array: strided along the head axis."""
    data = rope.cpu_inputs(6, 4, 2, 48, "bf16")
    qkv = np.concatenate([data["q"], data["k"]], axis=1)
    data.update(q=qkv[:, :4], k=qkv[:, 4:])
    assert_close(rope, rope.run_on_cpu(data), rope.reference(**data), "bf16")


def test_rope_with_tables_whose_halves_differ():
    """The kernel reads both halves of each table: nothing assumes cat(freqs, freqs)."""
    data = rope.cpu_inputs(5, 3, 1, 40, "f16")
    rng = np.random.default_rng(1)
    data["cos"] = rng.uniform(-1, 1, data["cos"].shape).astype(np.float32)
    data["sin"] = rng.uniform(-1, 1, data["sin"].shape).astype(np.float32)
    assert_close(rope, rope.run_on_cpu(data), rope.reference(**data), "f16")


def test_rope_refuses_an_odd_head_dim():
    x = np.ones((2, 3, 5), np.float16)
    with pytest.raises(ValueError, match="head_dim 5 is odd"):
        rope.rope(x, x, np.ones((4, 5), np.float32), np.ones((4, 5), np.float32),
                  np.zeros(2, np.int32), x, x)  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_rope_tunes_in_the_interpreter_without_a_wrong_variant(kind):
    data = rope.cpu_inputs(7, 5, 3, 80, kind)
    out = {"q_out": nan_like(data["q"]), "k_out": nan_like(data["k"])}
    views = [rope.halves(data[k]) for k in ("q", "k", "cos", "sin")]
    args = (*views, data["positions"], rope.halves(out["q_out"]), rope.halves(out["k_out"]))
    rope.KERNELS[kind].autotune(*args, grid=rope.tokens, options=TUNE)
    assert_tuned_without_wrong(rope.KERNELS[kind])
    assert_close(rope, rope.run_on_cpu(data), rope.reference(**data), kind)


# ---------------------------------------------------------------- dropout + add + layer norm

# (M, N, ROWS, BLOCK_N): a row in one tile with absent columns and rows; rows in chunks
# (the last partial); one column; the default variant (one 16384 tile).
LN_CASES = [
    (37, 300, 4, 512),
    (37, 300, 8, 128),
    (5, 3000, 2, 1024),
    (9, 1, 1, 128),
    (3, 700, None, None),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("p", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("m, n, rows, block_n", LN_CASES)
def test_dropout_add_layer_norm_matches_numpy(kind, p, m, n, rows, block_n):
    """h to the bit against the definition, y/mean/rstd against numpy's float64 layer norm
    of that h; p = 0 keeps every element, p = 1 drops every one."""
    data = ln.cpu_inputs(m, n, kind, seed=m * n)
    names = {} if rows is None else {"ROWS": rows, "BLOCK_N": block_n}
    got = ln.run_on_cpu(data, p, seed=2024, race_check=True, **names)
    ln.check(got, data, p, seed=2024)
    kept = ln.keep_mask(2024, p, m, n)
    if p == 0.0:
        assert kept.all()
    if p == 1.0:
        assert not kept.any() and np.array_equal(got["h"], data["residual"])


def test_the_dropout_mask_keeps_about_one_minus_p_and_depends_on_the_seed():
    a, b = ln.keep_mask(1, 0.3, 64, 1000), ln.keep_mask(2, 0.3, 64, 1000)
    assert abs(a.mean() - 0.7) < 0.01 and abs(b.mean() - 0.7) < 0.01
    assert (a != b).mean() > 0.3  # independent masks differ in 2 * 0.3 * 0.7 = 42% of lanes


def test_dropout_add_layer_norm_refuses_a_p_outside_0_to_1():
    x = np.ones((2, 8), np.float16)
    with pytest.raises(ValueError, match=r"probability, not 1\.5"):
        ln.forward(x, x, x[0], x[0], x, x, x[:, 0], x[:, 0], 1.5, 0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [300, 1100])
def test_dropout_add_layer_norm_tunes_without_a_wrong_variant(kind, n):
    """N = 300 and 1100: tiles below N take the chunked path, the rest hold a row; all agree."""
    data = ln.cpu_inputs(13, n, kind)
    x = data["x"]
    out = [nan_like(x), nan_like(x), np.full(13, np.nan, np.float32)]
    out.append(out[2].copy())
    args = (x, data["residual"], data["w"], data["b"], *out, 0.25, 7, 1e-5)
    ln.KERNELS[kind].autotune(*args, grid=ln.row_blocks, options=TUNE)
    assert_tuned_without_wrong(ln.KERNELS[kind])
    ln.check(ln.run_on_cpu(data, 0.25, 7), data, 0.25, 7)


# ---------------------------------------------------------------- int8 quantisation

# (M, N, ROWS, BLOCK_N): one tile, absent rows and columns; chunks; one column; the defaults.
QUANT_CASES = [(37, 300, 4, 512), (37, 300, 8, 128), (5, 3000, 2, 1024), (9, 1, 1, 128)]
QUANT_CASES.append((11, 700, None, None))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("m, n, rows, block_n", QUANT_CASES)
def test_int8_quantisation_matches_numpy(kind, m, n, rows, block_n):
    """q and scale to the bit against numpy's f32 definition, and against float64 (q within
    one only at near ties); the dequantised rows within one rounding."""
    x = quant.cpu_inputs(m, n, kind, seed=m * n)
    names = {} if rows is None else {"ROWS": rows, "BLOCK_N": block_n}
    got = quant.run_on_cpu(x, race_check=True, **names)
    definition = quant.definition(x)
    assert np.array_equal(got["q"], definition["q"])
    assert np.array_equal(got["scale"], definition["scale"])
    quant.check(got, x, kind)
    assert not got["q"][m // 2].any() and got["scale"][m // 2] == 0  # the row of zeros


@pytest.mark.parametrize("kind", KINDS)
def test_int8_quantisation_tunes_without_a_wrong_variant(kind):
    x = quant.cpu_inputs(37, 300, kind)
    q, scale = np.zeros((37, 300), np.int8), np.full(37, np.nan, np.float32)
    quant.QUANTIZE[kind].autotune(x, q, scale, grid=quant.row_blocks, options=TUNE)
    assert_tuned_without_wrong(quant.QUANTIZE[kind])
    out = nan_like(x)
    quant.DEQUANTIZE[kind].autotune(q, scale, out, grid=quant.tile_blocks, options=TUNE)
    assert_tuned_without_wrong(quant.DEQUANTIZE[kind])
    quant.check(quant.run_on_cpu(x), x, kind)


def test_the_examples_check_themselves():
    """What ``python docs/examples/corpus/<name>.py`` runs."""
    swiglu.check_on_cpu(shape=(3, 50))
    geglu.check_on_cpu(shape=(3, 50))
    rope.check_on_cpu(t=3)
    ln.check_on_cpu(m=3, n=50)
    quant.check_on_cpu(m=3, n=50)


# ---------------------------------------------------------------- sm_90a builds

# Each kernel at its default variant and at variants a GPU tuner may keep, compiled for
# sm_90a on the CPU: ptxas reports no spill and no stack.
BUILDS = [
    ("swiglu", "swiglu_forward_bf16", {}),
    ("swiglu", "swiglu_backward_f16", {"BLOCK": 8192}),
    ("geglu", "geglu_forward_f16", {}),
    ("geglu", "geglu_backward_bf16", {"BLOCK": 8192}),
    ("rope", "rope_f16", {}),
    ("rope", "rope_bf16", {"BLOCK_H": 32, "BLOCK_D": 128}),
    ("dropout_add_layer_norm", "dropout_add_layer_norm_f16", {}),
    ("dropout_add_layer_norm", "dropout_add_layer_norm_bf16", {"ROWS": 4, "BLOCK_N": 1024}),
    ("int8_quant", "quantize_bf16", {}),
    ("int8_quant", "quantize_f16", {"ROWS": 8, "BLOCK_N": 1024}),
    ("int8_quant", "dequantize_bf16", {}),
    ("int8_quant", "dequantize_f16", {"ROWS": 8, "BLOCK_N": 1024}),
]
# 512-thread CTAs whose lanes fit 64 registers a thread with little to spare: the cta pass
# leaves the CTAs an SM to ptxas (no minimum under __launch_bounds__(512)), ptxas plans
# for two, caps a thread at 64 registers and spills a few bytes.  Strict: a fix shows.
SPILLS_AT_64_REGISTERS = pytest.mark.xfail(
    strict=True, reason="ptxas plans two 512-thread CTAs an SM and spills (the cta pass)"
)
BUILDS += [
    pytest.param("int8_quant", "quantize_f16", {}, marks=SPILLS_AT_64_REGISTERS),
    pytest.param(
        "dropout_add_layer_norm",
        "dropout_add_layer_norm_f16",
        {"ROWS": 1, "BLOCK_N": 8192},
        marks=SPILLS_AT_64_REGISTERS,
    ),
]


@pytest.mark.parametrize("script, kernel, values", BUILDS, ids=str)
def test_the_kernels_build_for_sm_90a_without_spills(script, kernel, values):
    from phobos.compile.check import tune_space
    from phobos.compile.pipeline import compile_kernel
    from phobos.frontend import translate_file

    module = translate_file(CORPUS / f"{script}.py").module
    variant = {**tune_space(module, kernel).default(), **values}
    compiled = compile_kernel(module, kernel, variant, arch="sm_90a", verbose=True)
    used = compiled.resources
    assert (used.spill_stores, used.spill_loads, used.stack_bytes) == (0, 0, 0), used.summary()
