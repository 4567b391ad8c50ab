"""Tutorial 08's cross-entropy on the GPU against torch in float64: the forward, the backward
and the fused kernel through the tutorial's wrappers (``kernel[grid](...)`` with the tuner
choosing ``BLOCK_V``, no variant wrong) and at every fixed variant, with ignored labels and
labels at the first and the last column; every output NaN-poisoned before the launch."""

from __future__ import annotations

import pytest

from phobos.autotune import WRONG
from tests.test_tutorials import load

pytestmark = pytest.mark.gpu

tutorial = load("08_cross_entropy.py")
IGNORE = tutorial.IGNORE_INDEX
# (T, V): vocabularies no tile divides, rows not on 16 bytes (50257), one column, the
# benchmark's 128k, and a row of 2^18 (16 chunks of the widest tile).
SIZES = [(37, 300), (64, 3000), (100, 50257), (8, 1), (300, 32000), (64, 131072), (4, 262144)]


def nan(*shape):
    import torch

    return torch.full(shape, float("nan"), device="cuda")


def assert_close(name: str, got, want) -> None:
    import torch

    torch.cuda.synchronize()
    assert not bool(got.isnan().any()), f"{name}: NaN (an element left unwritten?)"
    if float(want.abs().max()) == 0:  # one column: every loss and gradient is 0
        assert float(got.abs().max()) == 0, f"{name}: not 0"
        return
    error = tutorial.relative_error(got, want)
    assert error < tutorial.TOLERANCE, f"{name}: relative error {error:.2e}"


def expected(logits, labels, reduction: str = "mean", grad_loss=None) -> dict:
    import torch

    want = tutorial.torch_cross_entropy(logits.double(), labels, grad_loss, reduction)
    want["losses"] = torch.nn.functional.cross_entropy(
        logits.double(), labels, ignore_index=IGNORE, reduction="none"
    )
    want["lse"] = torch.logsumexp(logits.double(), dim=1)
    return want


def assert_no_variant_wrong(kernel) -> None:
    report = kernel.tuning_report()
    assert report is not None and report.choice, f"{kernel.name} was not tuned"
    wrong = [v for v in report.variants if v.status == WRONG]
    assert not wrong, str(report)


@pytest.mark.parametrize("t, v", SIZES, ids=[f"{t}x{v}" for t, v in SIZES])
def test_tuned_wrappers_match_torch_in_float64(t, v):
    import torch

    logits, labels = tutorial.gpu_inputs(t, v, ignored=t // 8, seed=t + v)
    want = expected(logits, labels)
    got = tutorial.cross_entropy(logits, labels)
    assert_close("loss", got["loss"][0], want["loss"])
    assert_close("losses", got["losses"], want["losses"])
    assert_close("lse", got["lse"], want["lse"])
    assert got["divisor"][0] == int((labels != IGNORE).sum())
    assert_no_variant_wrong(tutorial.cross_entropy_forward)
    grad = torch.full_like(logits, float("nan"))
    ones = torch.ones(1, device="cuda")
    tutorial.backward(logits, labels, got["lse"], ones, got["divisor"], grad)
    assert_close("grad", grad, want["grad"])
    assert_no_variant_wrong(tutorial.cross_entropy_backward)
    in_place = logits.clone()
    fused = tutorial.fused_cross_entropy(in_place, labels)
    assert_close("fused loss", fused["loss"][0], want["loss"])
    assert_close("fused grad", in_place, want["grad"])
    assert_no_variant_wrong(tutorial.cross_entropy_fused)


def variants(kernel) -> list[int]:
    return [values["BLOCK_V"] for values in kernel.space.variants()]


@pytest.mark.parametrize("t, v", [(37, 3000), (5, 50257)])
@pytest.mark.parametrize("block_v", variants(tutorial.cross_entropy_fused))
def test_every_variant_matches_torch(t, v, block_v):
    """Each BLOCK_V fixed: the forward and the fused kernel (every one), the backward (those
    of its space)."""
    import torch

    logits, labels = tutorial.gpu_inputs(t, v, ignored=2, seed=block_v)
    want = expected(logits, labels)
    losses, lse = nan(t), nan(t)
    tutorial.forward(logits, labels, losses, lse, BLOCK_V=block_v)
    assert_close("losses", losses, want["losses"])
    assert_close("lse", lse, want["lse"])
    divisor = torch.tensor([float((labels != IGNORE).sum())], device="cuda")
    ones = torch.ones(1, device="cuda")
    if block_v in variants(tutorial.cross_entropy_backward):
        grad = torch.full_like(logits, float("nan"))
        tutorial.backward(logits, labels, lse, ones, divisor, grad, BLOCK_V=block_v)
        assert_close("grad", grad, want["grad"])
    in_place, losses, lse = logits.clone(), nan(t), nan(t)
    tutorial.forward_backward(in_place, labels, losses, lse, ones, divisor, BLOCK_V=block_v)
    assert_close("fused losses", losses, want["losses"])
    assert_close("fused grad", in_place, want["grad"])


def test_no_reduction_takes_one_upstream_gradient_a_token():
    import torch

    t, v = 200, 32000
    logits, labels = tutorial.gpu_inputs(t, v, ignored=20, seed=1)
    grad_loss = 0.5 + torch.rand(t, device="cuda")
    want = expected(logits, labels, "none", grad_loss.double())
    got = tutorial.cross_entropy(logits, labels, reduction="none")
    assert_close("losses", got["loss"], want["loss"])
    grad = torch.full_like(logits, float("nan"))
    tutorial.backward(logits, labels, got["lse"], grad_loss, got["divisor"], grad)
    assert_close("grad", grad, want["grad"])


def test_the_sum_and_its_fused_gradient():
    t, v = 128, 50257
    logits, labels = tutorial.gpu_inputs(t, v, ignored=10, seed=2)
    want = expected(logits, labels, "sum")
    assert_close(
        "loss", tutorial.cross_entropy(logits, labels, reduction="sum")["loss"][0], want["loss"]
    )
    in_place = logits.clone()
    fused = tutorial.fused_cross_entropy(in_place, labels, reduction="sum")
    assert_close("fused loss", fused["loss"][0], want["loss"])
    assert_close("fused grad", in_place, want["grad"])


def test_rows_of_a_wider_matrix():
    """Logits as a view of wider rows (a row stride other than V, not on 16 bytes)."""
    import torch

    t, v = 50, 3000
    wide, labels = tutorial.gpu_inputs(t, v + 3, ignored=5, seed=3)
    logits = wide[:, :v]
    labels = labels.clamp(max=v - 1)  # the last token's label was V + 2; -100 stays
    want = expected(logits, labels)
    got = tutorial.cross_entropy(logits, labels)
    assert_close("loss", got["loss"][0], want["loss"])
    grad = torch.full_like(logits, float("nan"))
    ones = torch.ones(1, device="cuda")
    tutorial.backward(logits, labels, got["lse"], ones, got["divisor"], grad)
    assert_close("grad", grad, want["grad"])


def test_only_ignored_tokens_give_a_nan_mean_and_zero_gradient_as_torch():
    import torch

    logits, labels = tutorial.gpu_inputs(16, 5000, seed=4)
    labels[:] = IGNORE
    torch_loss = torch.nn.functional.cross_entropy(logits, labels)
    got = tutorial.cross_entropy(logits, labels)
    assert bool(torch_loss.isnan()) and bool(got["loss"][0].isnan())
    in_place = logits.clone()
    tutorial.fused_cross_entropy(in_place, labels)
    assert bool((in_place == 0).all())
