"""Tutorial 08: softmax cross-entropy over a large vocabulary, forward and backward.

The loss of a language model's last layer.  Each of ``T`` tokens has a row of
``V`` logits (fp32; ``V`` = 128k for a modern vocabulary) and a label; its loss is

    lse = log(sum(exp(x))),   loss = lse - x[label]

and the gradient of the loss with respect to the logits is

    grad = (softmax(x) - onehot(label)) * grad_loss,   softmax(x) = exp(x - lse).

A token whose label is ``ignore_index`` (-100 by default) has loss 0 and a
gradient row of zeros, and the mean reduction divides by the number of tokens
not ignored, as ``torch.nn.functional.cross_entropy`` does.

A row of 131072 fp32 logits is 512 KB: far more than a block's registers, so
every kernel walks its row in chunks of ``BLOCK_V`` columns.

``cross_entropy_forward`` reads the logits **once**.  It keeps, for each lane of
the chunk, a running maximum ``peak`` and the sum ``total`` of ``exp(x - peak)``
over the values that lane has seen (an "online" log-sum-exp, lane by lane).  A
new value ``x`` either raises the maximum, and then the sum so far is rescaled by
``exp(peak - x)`` and ``x`` adds 1, or it does not, and it adds ``exp(x - peak)``;
both are ``exp(-|x - peak|)``, so each logit costs one ``exp`` and no reduction
across the block: the loop only streams.  After the loop the lanes are combined
once (``max`` then ``sum``), and the block writes the row's ``lse`` (kept for the
backward) and its loss.  The last chunk's columns past ``V`` are absent;
``fill`` gives them -inf, which changes neither ``peak`` nor ``total``.  ``peak``
starts at ``LOWEST`` (-3e38), not at -inf, so that ``x - peak`` is never
``-inf - -inf`` (NaN) for such a lane.

``cross_entropy_backward`` reads the logits again with the saved ``lse`` and
writes ``grad = (exp(x - lse) - (column == label)) * grad_loss / divisor``: one
read and one write of the ``[T, V]`` matrix.  An ignored row reads nothing and
writes zeros.  ``grad_loss`` is the upstream gradient, one value (``G = 1``: the
mean or sum) or one a token (``G = T``: no reduction), and ``divisor`` the number
of tokens that count (``cross_entropy_count`` computes it on the device, so no
launch waits for the host) or 1.

``cross_entropy_fused`` does both in one launch, as Liger-Kernel's does: the
forward's pass over the row, then a second pass that overwrites the logits with
their gradient, **in place**, so the ``[T, V]`` gradient takes no memory of its
own (4 GiB at 8192 x 131072).  It needs ``grad_loss`` before the backward would
have it: training takes 1 (or the loss scale), and a caller with another value
multiplies.  The second pass walks the row backwards, from its last chunk: the
chunks the first pass read last are the likeliest still to be in L2.  It moves
the same bytes as forward then backward (two reads and a write of the logits),
in one kernel and without the gradient's buffer.

The small kernels around them take one block: ``cross_entropy_count`` counts the
labels that are not ``ignore_index`` (the mean's divisor) and
``cross_entropy_mean`` adds up the losses and divides.

The wrappers (``forward``, ``backward``, ``forward_backward``) launch the kernels
with ``kernel[grid](...)`` and fix no compile-time name, so a GPU launch tunes
``BLOCK_V`` at its first call for a shape; a launch on numpy arrays runs the
interpreter with the space's first value.  Every variant is right for every
``V`` (the chunk loop and ``fill`` take care of the last chunk), so the default
tuning key serves.  Labels are ``int64`` (torch's); a label outside ``[0, V)``
that is not ``ignore_index`` is the caller's error (torch stops with a device
assertion): its target logit reads as 0.

Run it: ``python docs/tutorials/08_cross_entropy.py``.  It checks the kernels in
the CPU interpreter against numpy in float64; with a GPU and torch it also checks
them against torch in float64 and times Phobos and torch.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph

# Tutorial 08: softmax cross-entropy over a large vocabulary, forward (loss and lse, one
# read of the logits) and backward (grad = (softmax - onehot) * grad_loss / divisor), and
# both in one kernel that writes the gradient over the logits.
# The running maximum starts here, not at -inf, so that x - peak is never -inf - -inf.
LOWEST: ph.const = -3.0e38
# The lanes of the one-block kernels (counting labels, adding up losses).
SMALL_BLOCK: ph.const = 1024


# Forward: one row a block, BLOCK_V columns at a time. Each lane keeps the largest value it
# has seen (peak) and the sum of exp(x - peak) over its values (total): a value above peak
# rescales the sum by exp(peak - x) and adds 1, any other adds exp(x - peak), and both are
# exp(-|x - peak|). The lanes are combined once, after the loop.
@ph.kernel
@ph.autotune(BLOCK_V={4096, 2048, 8192, 16384})
def cross_entropy_forward(
    logits: ph.tensor[ph.f32][T, V],
    labels: ph.tensor[ph.i64][T],
    loss: ph.tensor[ph.f32][T],
    lse: ph.tensor[ph.f32][T],
    ignore_index: ph.i64,
):
    row: ph.let = ph.ctx.block.x
    peak: ph.var = ph.zeros[ph.f32][BLOCK_V] + LOWEST
    total: ph.var = ph.zeros[ph.f32][BLOCK_V]
    for start in range(0, V, BLOCK_V):
        x: ph.let = ph.fill(logits[row, start:+BLOCK_V], -ph.inf)
        d: ph.let = x - peak
        e: ph.let = ph.exp(-ph.abs(d))
        total = ph.where(d > 0.0, total * e + 1.0, total + e)
        peak = ph.maximum(peak, x)
    top: ph.let = ph.max(peak)
    row_lse: ph.let = top + ph.log(ph.sum(total * ph.exp(peak - top)))
    lse[row] = row_lse
    label: ph.let = labels[row]
    if label == ignore_index:
        loss[row] = 0.0
    else:
        loss[row] = row_lse - logits[row, label]


# Backward: grad = (exp(x - lse) - onehot(label)) * grad_loss / divisor, one row a block;
# grad_loss holds one value (G = 1) or one a token (G = T). An ignored row writes zeros.
@ph.kernel
@ph.autotune(BLOCK_V={4096, 2048, 8192, 16384})
def cross_entropy_backward(
    logits: ph.tensor[ph.f32][T, V],
    labels: ph.tensor[ph.i64][T],
    lse: ph.tensor[ph.f32][T],
    grad_loss: ph.tensor[ph.f32][G],
    divisor: ph.tensor[ph.f32][1],
    grad: ph.tensor[ph.f32][T, V],
    ignore_index: ph.i64,
):
    row: ph.let = ph.ctx.block.x
    label: ph.let = labels[row]
    if label == ignore_index:
        for start in range(0, V, BLOCK_V):
            grad[row, start:+BLOCK_V] = ph.zeros[ph.f32][BLOCK_V]
    else:
        scale: ph.let = grad_loss[row % G] / divisor[0]
        row_lse: ph.let = lse[row]
        for start in range(0, V, BLOCK_V):
            p: ph.let = ph.exp(logits[row, start:+BLOCK_V] - row_lse)
            hot: ph.let = start + ph.arange(BLOCK_V) == label
            grad[row, start:+BLOCK_V] = (p - ph.where(hot, 1.0, 0.0)) * scale


# Forward and backward in one kernel: the forward's pass over the row, then a second pass
# that writes the gradient over the logits, in place, from the row's last chunk to its
# first (the chunks read last are the likeliest still to be in L2).
@ph.kernel
@ph.autotune(BLOCK_V={4096, 2048, 8192, 16384})
def cross_entropy_fused(
    logits: ph.tensor[ph.f32][T, V],
    labels: ph.tensor[ph.i64][T],
    loss: ph.tensor[ph.f32][T],
    lse: ph.tensor[ph.f32][T],
    grad_loss: ph.tensor[ph.f32][G],
    divisor: ph.tensor[ph.f32][1],
    ignore_index: ph.i64,
):
    row: ph.let = ph.ctx.block.x
    label: ph.let = labels[row]
    peak: ph.var = ph.zeros[ph.f32][BLOCK_V] + LOWEST
    total: ph.var = ph.zeros[ph.f32][BLOCK_V]
    for start in range(0, V, BLOCK_V):
        x: ph.let = ph.fill(logits[row, start:+BLOCK_V], -ph.inf)
        d: ph.let = x - peak
        e: ph.let = ph.exp(-ph.abs(d))
        total = ph.where(d > 0.0, total * e + 1.0, total + e)
        peak = ph.maximum(peak, x)
    top: ph.let = ph.max(peak)
    row_lse: ph.let = top + ph.log(ph.sum(total * ph.exp(peak - top)))
    lse[row] = row_lse
    last: ph.let = (V - 1) / BLOCK_V * BLOCK_V
    if label == ignore_index:
        loss[row] = 0.0
        for k in range(0, V, BLOCK_V):
            logits[row, last - k :+ BLOCK_V] = ph.zeros[ph.f32][BLOCK_V]
    else:
        loss[row] = row_lse - logits[row, label]
        scale: ph.let = grad_loss[row % G] / divisor[0]
        for k in range(0, V, BLOCK_V):
            start: ph.let = last - k
            p: ph.let = ph.exp(logits[row, start:+BLOCK_V] - row_lse)
            hot: ph.let = start + ph.arange(BLOCK_V) == label
            logits[row, start:+BLOCK_V] = (p - ph.where(hot, 1.0, 0.0)) * scale


# The mean's divisor, in one block (block 0 writes it): how many labels are not ignore_index.
@ph.kernel
def cross_entropy_count(
    labels: ph.tensor[ph.i64][T], n_valid: ph.tensor[ph.f32][1], ignore_index: ph.i64
):
    count: ph.var = ph.zeros[ph.i32][SMALL_BLOCK]
    for start in range(0, T, SMALL_BLOCK):
        kept: ph.let = ph.fill(labels[start:+SMALL_BLOCK], ignore_index) != ignore_index
        count += ph.i32(kept)
    if ph.ctx.block.x == 0:
        n_valid[0] = ph.f32(ph.sum(count))


# The reduced loss, in one block (block 0 writes it): the sum of the losses over the divisor.
@ph.kernel
def cross_entropy_mean(
    loss: ph.tensor[ph.f32][T], divisor: ph.tensor[ph.f32][1], out: ph.tensor[ph.f32][1]
):
    total: ph.var = ph.zeros[ph.f32][SMALL_BLOCK]
    for start in range(0, T, SMALL_BLOCK):
        total += ph.fill(loss[start:+SMALL_BLOCK], 0.0)
    if ph.ctx.block.x == 0:
        out[0] = ph.sum(total) / divisor[0]


IGNORE_INDEX = -100
ONE_BLOCK = (1,)


def row_blocks(meta) -> tuple[int]:
    """One block per token."""
    return (meta["T"],)


def is_torch(array) -> bool:
    return type(array).__module__.startswith("torch")


def vector(like, n: int, value: float = np.nan):
    """An f32 vector of ``n`` elements filled with ``value``, where ``like`` lives (a numpy
    array, or a torch tensor on its device)."""
    if is_torch(like):
        import torch

        return torch.full((n,), value, dtype=torch.float32, device=like.device)
    return np.full(n, value, np.float32)


def count_valid(labels, n_valid, ignore_index: int = IGNORE_INDEX, **launch) -> None:
    """``n_valid[0]`` = the number of labels that are not ``ignore_index`` (as f32)."""
    cross_entropy_count[ONE_BLOCK](labels, n_valid, ignore_index, **launch)


def mean(loss, divisor, out, **launch) -> None:
    """``out[0] = sum(loss) / divisor[0]``."""
    cross_entropy_mean[ONE_BLOCK](loss, divisor, out, **launch)


def forward(logits, labels, loss, lse, ignore_index: int = IGNORE_INDEX, **launch) -> None:
    """Each token's loss (0 where ignored) and its row's log-sum-exp, one read of the logits.

    ``launch`` passes launch options (``race_check=True``, ``stream=``) and may fix
    ``BLOCK_V``; by default the tuner chooses it.
    """
    cross_entropy_forward[row_blocks](logits, labels, loss, lse, ignore_index, **launch)


def backward(
    logits, labels, lse, grad_loss, divisor, grad, ignore_index: int = IGNORE_INDEX, **launch
) -> None:
    """``grad = (softmax(logits) - onehot(labels)) * grad_loss / divisor[0]``, 0 where ignored.

    ``grad_loss`` holds one value (the gradient of a mean or a sum) or one per token (no
    reduction); ``divisor`` is ``n_valid`` from ``count_valid`` for the mean, else 1.
    """
    args = (logits, labels, lse, grad_loss, divisor, grad, ignore_index)
    cross_entropy_backward[row_blocks](*args, **launch)


def forward_backward(
    logits, labels, loss, lse, grad_loss, divisor, ignore_index: int = IGNORE_INDEX, **launch
) -> None:
    """``forward`` and ``backward`` in one kernel: the loss and lse as ``forward`` writes
    them, and the gradient ``backward`` would write, written over ``logits`` (in place)."""
    args = (logits, labels, loss, lse, grad_loss, divisor, ignore_index)
    cross_entropy_fused[row_blocks](*args, **launch)


def cross_entropy(
    logits, labels, ignore_index: int = IGNORE_INDEX, reduction: str = "mean", **launch
) -> dict:
    """The loss as ``torch.nn.functional.cross_entropy(logits, labels, ignore_index=...,
    reduction=...)`` computes it, with what the backward needs: a dict of ``loss`` (a
    1-element vector for "mean" and "sum", the tokens' losses for "none"), ``losses``,
    ``lse`` and ``divisor`` (n_valid for "mean", else 1).  ``launch`` may fix the
    forward's ``BLOCK_V``; its launch options go to every kernel."""
    t = labels.shape[0]
    options = {k: v for k, v in launch.items() if not k.isupper()}  # not BLOCK_V
    losses, lse = vector(logits, t), vector(logits, t)
    divisor = vector(logits, 1, 1.0)
    if reduction == "mean":
        count_valid(labels, divisor, ignore_index, **options)
    forward(logits, labels, losses, lse, ignore_index, **launch)
    out = {"losses": losses, "lse": lse, "divisor": divisor, "loss": losses}
    if reduction in ("mean", "sum"):
        out["loss"] = vector(logits, 1)
        mean(losses, divisor, out["loss"], **options)
    elif reduction != "none":
        raise ValueError(f"reduction is 'mean', 'sum' or 'none', not {reduction!r}")
    return out


def reference(logits, labels, ignore_index: int = IGNORE_INDEX, grad_loss=1.0) -> dict:
    """Forward and backward of the mean reduction in float64 with numpy: ``losses``, ``lse``,
    ``n_valid``, ``loss`` (the mean) and ``grad`` (of the mean times ``grad_loss``)."""
    x = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)
    t, v = x.shape
    peak = x.max(axis=1, keepdims=True)
    lse = (peak + np.log(np.exp(x - peak).sum(axis=1, keepdims=True)))[:, 0]
    kept = labels != ignore_index
    safe = np.where(kept, labels, 0)
    losses = np.where(kept, lse - x[np.arange(t), safe], 0.0)
    n_valid = int(kept.sum())
    grad = np.exp(x - lse[:, None])
    grad[np.arange(t), safe] -= 1.0
    grad *= (kept * np.float64(grad_loss) / n_valid)[:, None]
    return {
        "losses": losses,
        "lse": lse,
        "n_valid": n_valid,
        "loss": losses.sum() / n_valid,
        "grad": grad,
    }


def relative_error(got, expected) -> float:
    """max |got - expected| / max |expected| (numpy or torch arrays), in float64."""
    if is_torch(got):
        diff, scale = (got.double() - expected).abs().max(), expected.abs().max()
        return float(diff / scale)
    got = np.asarray(got, dtype=np.float64)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


# Relative errors (to the largest |value|) allowed against float64: fp32 keeps 24 bits, and
# the sums of exp over a row and of the losses add a few units in the last place of theirs.
TOLERANCE = 1e-5


def cpu_inputs(t: int, v: int, ignored: int = 0, seed: int = 0) -> dict[str, np.ndarray]:
    """Random logits (spread as a trained model's, a few large) and labels, ``ignored`` of
    them ``IGNORE_INDEX`` (every third token from the second on)."""
    rng = np.random.default_rng(seed)
    logits = (2.0 * rng.standard_normal((t, v))).astype(np.float32)
    logits[rng.random((t, v)) < 0.01] += 8.0
    labels = rng.integers(0, v, t).astype(np.int64)
    labels[1 : 1 + 3 * ignored : 3] = IGNORE_INDEX
    return {"logits": logits, "labels": labels}


def run_on_cpu(data: dict, names: dict | None = None, **launch) -> dict[str, np.ndarray]:
    """The mean's forward, backward and the fused kernel in the interpreter, every output
    NaN-poisoned first; ``names`` fixes ``BLOCK_V``."""
    logits, labels = data["logits"], data["labels"]
    t, v = logits.shape
    names = names or {}
    got = cross_entropy(logits, labels, **launch, **names)
    grad = np.full((t, v), np.nan, np.float32)
    grad_loss = np.ones(1, np.float32)
    backward(logits, labels, got["lse"], grad_loss, got["divisor"], grad, **launch, **names)
    fused = {"grad": logits.copy(), "losses": vector(logits, t), "lse": vector(logits, t)}
    forward_backward(
        fused["grad"], labels, fused["losses"], fused["lse"], grad_loss, got["divisor"],
        **launch, **names,
    )  # fmt: skip
    return {
        "losses": got["losses"],
        "lse": got["lse"],
        "n_valid": got["divisor"][0],
        "loss": got["loss"][0],
        "grad": grad,
        "fused_losses": fused["losses"],
        "fused_lse": fused["lse"],
        "fused_grad": fused["grad"],
    }


def check_on_cpu(t: int = 13, v: int = 3000, ignored: int = 3, names: dict | None = None):
    """Every kernel in the interpreter against numpy in float64, ``ignored`` labels ignored."""
    data = cpu_inputs(t, v, ignored)
    expected = reference(**data)
    got = run_on_cpu(data, names, race_check=True)
    assert got["n_valid"] == expected["n_valid"] == t - ignored
    for name in ("losses", "lse", "loss", "grad"):
        for prefix in ("", "fused_") if name != "loss" else ("",):
            error = relative_error(got[prefix + name], expected[name])
            assert error < TOLERANCE, f"{prefix}{name}: relative error {error:.1e}"
    print(
        f"interpreter: cross-entropy forward, backward and fused on {t}x{v} "
        f"({ignored} ignored) match numpy (float64)"
    )


def gpu_inputs(t: int, v: int, ignored: int = 0):
    """Random logits and labels on the GPU, ``ignored`` labels ``IGNORE_INDEX``."""
    import torch

    logits = 2.0 * torch.randn(t, v, device="cuda")
    labels = torch.randint(0, v, (t,), device="cuda")
    labels[1 : 1 + 3 * ignored : 3] = IGNORE_INDEX
    return logits, labels


def torch_cross_entropy(logits, labels, grad_loss=None, reduction: str = "mean") -> dict:
    """``torch.nn.functional.cross_entropy``, forward and backward: the loss and the
    gradient of the logits (float64 logits: the reference), and the graph, to time the
    backward again."""
    import torch

    leaf = logits.detach().requires_grad_()
    loss = torch.nn.functional.cross_entropy(
        leaf, labels, ignore_index=IGNORE_INDEX, reduction=reduction
    )
    if grad_loss is None:
        grad_loss = torch.ones_like(loss)
    (grad,) = torch.autograd.grad(loss, leaf, grad_loss, retain_graph=True)
    return {"loss": loss.detach(), "grad": grad, "graph": (loss, leaf, grad_loss)}


def check_and_time_on_gpu(sizes=((4096, 32768), (8192, 131072))) -> None:
    """Check against torch in float64, then time Phobos and torch (median, L2 flushed)."""
    import torch
    from triton.testing import do_bench

    for t, v in sizes:
        logits, labels = gpu_inputs(t, v, ignored=t // 8)
        expected = torch_cross_entropy(logits.double(), labels)
        got = cross_entropy(logits, labels)
        grad = torch.full_like(logits, float("nan"))
        ones = torch.ones(1, device="cuda")
        backward(logits, labels, got["lse"], ones, got["divisor"], grad)
        in_place = logits.clone()
        fused_loss = vector(logits, t)
        forward_backward(in_place, labels, fused_loss, vector(logits, t), ones, got["divisor"])
        fused_mean = vector(logits, 1)
        mean(fused_loss, got["divisor"], fused_mean)
        for name, value, want in [
            ("loss", got["loss"][0], expected["loss"]),
            ("grad", grad, expected["grad"]),
            ("fused loss", fused_mean[0], expected["loss"]),
            ("fused grad", in_place, expected["grad"]),
        ]:
            error = relative_error(value, want)
            assert error < TOLERANCE and not value.isnan().any(), f"{name}: error {error:.1e}"
        del in_place
        torch_loss, leaf, torch_grad_loss = torch_cross_entropy(logits, labels)["graph"]
        bytes_read = t * v * logits.element_size()
        runs = {
            "phobos forward": (lambda: cross_entropy(logits, labels), bytes_read),  # noqa: B023
            "torch forward": (
                lambda: torch.nn.functional.cross_entropy(logits, labels),  # noqa: B023
                bytes_read,
            ),
            "phobos backward": (
                lambda: backward(logits, labels, got["lse"], ones, got["divisor"], grad),  # noqa: B023
                2 * bytes_read,
            ),
            "torch backward": (
                lambda: torch.autograd.grad(torch_loss, leaf, torch_grad_loss, retain_graph=True),  # noqa: B023
                2 * bytes_read,
            ),
        }
        for name, (run, size) in runs.items():
            ms = do_bench(run, return_mode="median")
            print(f"{t}x{v} {name:16s} {ms:8.3f} ms {size / ms / 1e6:8.0f} GB/s")


def main() -> None:
    print(cross_entropy_forward.source)
    check_on_cpu()
    check_on_cpu(t=5, v=300, ignored=1, names={"BLOCK_V": 2048})  # one partial chunk
    try:
        import torch

        on_gpu = torch.cuda.is_available()
    except ImportError:
        on_gpu = False
    if on_gpu:
        check_and_time_on_gpu()


if __name__ == "__main__":
    main()
