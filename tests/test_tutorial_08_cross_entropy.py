"""Tutorial 08, cross-entropy: forward, backward and the fused kernel in the interpreter against
numpy in float64, at vocabularies no tile divides, with ignored labels and labels at the first
and the last column, every output NaN-poisoned; the reductions of the wrappers; and every row
kernel tuned in the interpreter, no variant wrong."""

from __future__ import annotations

import numpy as np
import pytest

from phobos.autotune import PASSED, PRUNED, WRONG, Options
from tests.test_tutorials import load

tutorial = load("08_cross_entropy.py")

TOLERANCE = tutorial.TOLERANCE
IGNORE = tutorial.IGNORE_INDEX


def nan(shape) -> np.ndarray:
    return tutorial.poisoned(shape)


def assert_close(name: str, got, expected) -> None:
    got = np.asarray(got, np.float64)
    assert not np.isnan(got).any(), f"{name} has NaN (an element left unwritten?)"
    error = tutorial.relative_error(got, expected)
    assert error < TOLERANCE, f"{name}: relative error {error:.2e} (bound {TOLERANCE})"


# (T, V, BLOCK_V): the last chunk partial, one partial chunk, one lane past a chunk, chunks
# that divide V, and the widest tile over two chunks.
SIZES = [
    (13, 3000, 2048),
    (13, 3000, 4096),
    (5, 300, 2048),
    (4, 4097, 4096),
    (3, 8192, 4096),
    (4, 20000, 16384),
]


@pytest.mark.parametrize("t, v, block_v", SIZES)
def test_forward_matches_numpy(t, v, block_v):
    data = tutorial.cpu_inputs(t, v, ignored=t // 4, seed=t * 1000 + v)
    expected = tutorial.reference(**data)
    losses, lse = nan(t), nan(t)
    tutorial.forward(data["logits"], data["labels"], losses, lse, BLOCK_V=block_v, race_check=True)
    assert_close("losses", losses, expected["losses"])
    assert_close("lse", lse, expected["lse"])
    assert (losses[data["labels"] == IGNORE] == 0).all()


@pytest.mark.parametrize("t, v, block_v", [s for s in SIZES if s[2] <= 8192])
def test_backward_of_the_mean_matches_numpy(t, v, block_v):
    data = tutorial.cpu_inputs(t, v, ignored=t // 4, seed=t * 1000 + v)
    expected = tutorial.reference(**data)
    lse = expected["lse"].astype(np.float32)
    divisor = np.array([expected["n_valid"]], np.float32)
    grad = nan((t, v))
    one = np.ones(1, np.float32)
    tutorial.backward(
        data["logits"], data["labels"], lse, one, divisor, grad, BLOCK_V=block_v, race_check=True
    )
    assert_close("grad", grad, expected["grad"])
    assert (grad[data["labels"] == IGNORE] == 0).all()


@pytest.mark.parametrize("t, v, block_v", SIZES)
def test_fused_kernel_writes_the_gradient_over_the_logits(t, v, block_v):
    data = tutorial.cpu_inputs(t, v, ignored=t // 4, seed=t * 1000 + v)
    expected = tutorial.reference(**data, grad_loss=0.5)
    logits, losses, lse = data["logits"].copy(), nan(t), nan(t)
    divisor = np.array([expected["n_valid"]], np.float32)
    tutorial.forward_backward(
        logits, data["labels"], losses, lse, np.full(1, 0.5, np.float32), divisor,
        BLOCK_V=block_v, race_check=True,
    )  # fmt: skip
    assert_close("losses", losses, expected["losses"])
    assert_close("lse", lse, expected["lse"])
    assert_close("grad", logits, expected["grad"])


def test_backward_takes_one_upstream_gradient_a_token():
    """reduction="none": grad_loss holds one value a token (G = T), the divisor is 1."""
    t, v = 9, 1500
    data = tutorial.cpu_inputs(t, v, ignored=2, seed=3)
    grad_loss = np.random.default_rng(4).uniform(0.5, 2.0, t).astype(np.float32)
    expected = tutorial.reference(**data, grad_loss=grad_loss, reduction="none")
    got = tutorial.cross_entropy(data["logits"], data["labels"], reduction="none")
    assert_close("loss", got["loss"], expected["loss"])
    assert got["divisor"][0] == 1
    grad = nan((t, v))
    tutorial.backward(
        data["logits"], data["labels"], got["lse"], grad_loss, got["divisor"], grad,
        BLOCK_V=2048,
    )  # fmt: skip
    assert_close("grad", grad, expected["grad"])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_the_wrappers_reduce_as_torch_does(reduction):
    data = tutorial.cpu_inputs(11, 2500, ignored=3, seed=5)
    expected = tutorial.reference(**data, reduction=reduction)
    got = tutorial.cross_entropy(data["logits"], data["labels"], reduction=reduction)
    assert_close("loss", got["loss"][0], expected["loss"])
    assert got["divisor"][0] == (expected["n_valid"] if reduction == "mean" else 1)
    logits = data["logits"].copy()
    fused = tutorial.fused_cross_entropy(logits, data["labels"], reduction=reduction)
    assert_close("fused loss", fused["loss"][0], expected["loss"])
    assert_close("fused grad", logits, expected["grad"])


def test_a_batch_of_only_ignored_tokens_has_a_nan_mean_and_no_gradient():
    """torch's mean over no token is 0 / 0 = NaN; its gradient is zeros."""
    data = tutorial.cpu_inputs(4, 700, seed=6)
    data["labels"][:] = IGNORE
    got = tutorial.cross_entropy(**data)
    assert got["divisor"][0] == 0 and np.isnan(got["loss"][0])
    assert (got["losses"] == 0).all()
    grad = nan((4, 700))
    one = np.ones(1, np.float32)
    tutorial.backward(data["logits"], data["labels"], got["lse"], one, got["divisor"], grad)
    assert (grad == 0).all()


def test_one_column():
    """V = 1: lse is the logit itself, every loss and gradient is 0."""
    logits = np.array([[3.5], [-2.0], [0.25]], np.float32)
    labels = np.array([0, IGNORE, 0], np.int64)
    got = tutorial.cross_entropy(logits, labels, reduction="none")
    np.testing.assert_array_equal(got["lse"], logits[:, 0])
    assert (got["losses"] == 0).all()
    in_place = logits.copy()
    tutorial.fused_cross_entropy(in_place, labels)
    assert (in_place == 0).all()


def test_masked_and_large_logits():
    """-inf logits (a masked vocabulary) count as nothing, and large logits do not overflow."""
    data = tutorial.cpu_inputs(6, 3000, ignored=1, seed=7)
    logits = data["logits"]
    logits[:, 100:900] = -np.inf
    logits[2] += 50.0
    logits[3, 5] = 80.0  # exp(80) overflows f32: only the online maximum keeps it finite
    data["labels"][4] = 5
    expected = tutorial.reference(**data)
    got = tutorial.run_on_cpu(data, {"BLOCK_V": 2048}, race_check=True)
    for name in ("losses", "lse", "grad", "fused_losses", "fused_grad"):
        assert_close(name, got[name], expected[name.removeprefix("fused_")])


def test_the_forward_keeps_its_accuracy_at_logits_of_1e4():
    """The forward works on differences of logits, so a row shifted by 1e4 loses nothing; the
    gradient, from an f32 lse of 1e4 (whose unit in the last place is 1e-3), would."""
    data = tutorial.cpu_inputs(5, 2500, ignored=1, seed=10)
    data["logits"][1:3] += 1e4
    expected = tutorial.reference(**data)
    losses, lse = nan(5), nan(5)
    tutorial.forward(data["logits"], data["labels"], losses, lse, BLOCK_V=2048)
    assert_close("losses", losses, expected["losses"])
    assert_close("lse", lse, expected["lse"])


def test_count_and_mean_walk_more_labels_than_one_tile():
    t = tutorial.SMALL_BLOCK + 301
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 50, t).astype(np.int64)
    labels[rng.random(t) < 0.2] = IGNORE
    labels[-1] = IGNORE  # the last lane of the second chunk
    n_valid = nan(1)
    tutorial.count_valid(labels, n_valid, race_check=True)
    assert n_valid[0] == (labels != IGNORE).sum()
    losses = rng.uniform(0, 5, t).astype(np.float32)
    out = nan(1)
    tutorial.mean(losses, n_valid, out, race_check=True)
    assert_close("mean", out[0], losses.sum(dtype=np.float64) / n_valid[0])


def test_the_wrappers_say_what_to_do_with_a_bad_reduction():
    data = tutorial.cpu_inputs(2, 10)
    with pytest.raises(ValueError, match="one of mean, sum, none, not 'avg'"):
        tutorial.cross_entropy(**data, reduction="avg")
    with pytest.raises(ValueError, match="use reduction 'mean' or 'sum'"):
        tutorial.fused_cross_entropy(**data, reduction="none")


def statuses(report) -> dict[int, str]:
    return {v.values["BLOCK_V"]: v.status for v in report.variants}


def test_every_variant_the_tuner_tries_is_right():
    """Tuned in the interpreter at V=5000 (T=7: tiles above 8192 are pruned): every variant
    that runs passes, in the forward, the backward and the fused kernel (in place)."""
    t, v = 7, 5000
    data = tutorial.cpu_inputs(t, v, ignored=2, seed=9)
    logits, labels = data["logits"], data["labels"]
    expected = tutorial.reference(**data)
    options = Options(budget_s=0.0, warmup=0, min_repeats=1, progress=False, retune=True)
    grid = tutorial.row_blocks
    ignore = np.int64(IGNORE)

    forward = tutorial.cross_entropy_forward
    losses, lse = nan(t), nan(t)
    forward.autotune(logits, labels, losses, lse, ignore, grid=grid, options=options)
    found = statuses(forward.tuning_report())
    assert found == {2048: PASSED, 4096: PASSED, 8192: PASSED, 16384: PRUNED}

    lse = expected["lse"].astype(np.float32)
    divisor = np.array([expected["n_valid"]], np.float32)
    one = np.ones(1, np.float32)
    backward = tutorial.cross_entropy_backward
    args = (logits, labels, lse, one, divisor, nan((t, v)), ignore)
    backward.autotune(*args, grid=grid, options=options)
    assert set(statuses(backward.tuning_report()).values()) == {PASSED}

    fused = tutorial.cross_entropy_fused
    in_place = logits.copy()
    args = (in_place, labels, nan(t), nan(t), one, divisor, ignore)
    fused.autotune(*args, grid=grid, options=options)
    found = statuses(fused.tuning_report())
    assert WRONG not in found.values() and found[8192] == PASSED
    np.testing.assert_array_equal(in_place, logits)  # tuning leaves the caller's logits

    got = tutorial.run_on_cpu(data)  # the wrappers' launches, as tuned
    for name in ("losses", "lse", "grad", "fused_grad"):
        assert_close(name, got[name], expected[name.removeprefix("fused_")])


def test_the_tutorial_checks_itself_on_the_cpu():
    tutorial.check_on_cpu(t=7, v=2100, ignored=2)
