"""Tutorial 08: softmax cross-entropy over a large vocabulary, forward and backward.

The loss of a language model's last layer.  Each of ``T`` tokens has a row of
``V`` logits (fp32; ``V`` = 128k for a modern vocabulary) and a label; its loss is

    lse = log(sum(exp(x))),   loss = lse - x[label]

and the gradient of the loss with respect to the logits is

    grad = (softmax(x) - onehot(label)) * grad_loss,   softmax(x) = exp(x - lse).

A token whose label is ``ignore_index`` (-100 by default) has loss 0 and a
gradient row of zeros.  The kernels write per-token losses; the wrapper
``cross_entropy`` reduces them as ``torch.nn.functional.cross_entropy(logits,
labels, ignore_index=-100, reduction=...)`` does: ``"mean"`` (the default) divides
their sum by the number of tokens not ignored, ``"sum"`` adds them up and
``"none"`` keeps them.

A row of 131072 fp32 logits is 512 KB: far more than a block's registers, so
every kernel walks its row in chunks of ``BLOCK_V`` columns, one row a block.
The row kernels take ``exp(d)`` as ``exp2(d * log2(e))``, as FlashAttention
does: ``exp2`` is the GPU's instruction, and the accurate ``exp`` costs a range
reduction more, four instructions a logit.  ``d`` is always a difference of
logits (``x - peak``, ``x - lse``), which is exact where it matters; scaling the
logits themselves by ``log2(e)`` would round each by a part of its own size.

``cross_entropy_forward`` reads the logits **once**.  It keeps, for each lane of
the chunk, a running maximum ``peak`` and the sum ``total`` of ``exp(x - peak)``
over the values that lane has seen (an "online" log-sum-exp, lane by lane).  A
new value ``x`` either raises the maximum, and then the sum so far is rescaled by
``exp(peak - x)`` and ``x`` adds 1, or it does not, and it adds ``exp(x - peak)``;
both are ``exp(-|x - peak|)``, so each logit costs one ``exp2`` and the loop
needs no reduction across the block (the Triton version below, written as
Triton's tutorials write it, reduces each chunk to its maximum and its sum: two
block-wide reductions a chunk): it only streams.  After the loop the lanes are
combined once (the row's maximum ``top``, then ``log_total``, the log of the
row's sum of ``exp(x - top)``), and the block writes the row's
``lse = top + log_total`` (kept for the backward) and its loss
``(top - x[label]) + log_total``, reading the label's logit as one element
(``logits[row, label]``).  The last chunk's columns past ``V`` are absent;
``fill`` gives them -inf, which changes neither ``peak`` nor ``total``.  ``peak`` starts at ``LOWEST`` (-3e38), not at -inf, so
that ``x - peak`` is never ``-inf - -inf`` (NaN) for such a lane.

``cross_entropy_backward`` reads the logits again with the saved ``lse`` and
writes ``grad = (exp(x - lse) - (column == label)) * grad_loss / divisor``: one
read and one write of the ``[T, V]`` matrix.  The one-hot term compares each
lane's column (``start + arange(BLOCK_V)``) with the label.  An ignored row reads nothing and writes zeros.  ``grad_loss`` is the
upstream gradient, one value (``G = 1``: of the mean or the sum) or one a token
(``G = T``: no reduction), and ``divisor`` the number of tokens that count
(``cross_entropy_count`` computes it on the device, so no launch waits for the
host) or 1.

``cross_entropy_fused`` does both in one launch, as Liger-Kernel's does: the
forward's pass over the row, then a second pass that overwrites the logits with
their gradient, **in place**, so the ``[T, V]`` gradient takes no memory of its
own (4 GiB at 8192 x 131072).  It needs ``grad_loss`` before the backward would
have it: training takes 1 (or the loss scale), and a caller with another value
multiplies.  The second pass walks the row backwards, from its last chunk: the
chunks the first pass read last are the likeliest still to be in L2.  It moves
the same bytes as forward then backward (two reads and a write of the logits),
in one kernel and without the gradient's buffer.  The compiler orders the
block's accesses to the row itself (a barrier where one thread's store could
meet another's load), so reading ``logits[row, label]`` before the second pass
is safe.

The small kernels around them take one block: ``cross_entropy_count`` counts the
labels that are not ``ignore_index`` (the mean's divisor) and
``cross_entropy_mean`` adds up the losses and divides.

The wrappers (``forward``, ``backward``, ``forward_backward``, and above them
``cross_entropy`` and ``fused_cross_entropy``) launch the kernels with
``kernel[grid](...)`` and fix no compile-time name, so a GPU launch tunes
``BLOCK_V`` at its first call for a shape; a launch on numpy arrays runs the
interpreter with the space's first value.  Every variant is right for every
``V`` (the chunk loop and ``fill`` take care of the last chunk), so the default
tuning key serves.  Labels are ``int64`` (torch's); a label outside ``[0, V)``
that is not ``ignore_index`` is the caller's error (torch stops with a device
assertion): its target logit reads as 0.

What the saved ``lse`` costs: the backward takes ``exp(x - lse)`` from an f32
``lse``, which is off by up to half its unit in the last place, ``|lse| * 2^-24``,
and that error of the exponent is the relative error of every gradient of the
row.  For a language model's logits (tens) it is below 1e-6; a row of logits near
1e4 would keep three digits of its gradient (torch's log-softmax keeps
``x - max`` exact there).  The forward works on
differences of logits (``x - peak``, ``top - x[label]``) and loses nothing at any
size.

Run it: ``python docs/tutorials/08_cross_entropy.py``.  It checks the kernels in
the CPU interpreter against numpy in float64; with a GPU and torch it also checks
them against torch in float64 and times Phobos, Triton and torch.
"""

from __future__ import annotations

import numpy as np

import phobos.lang as ph

# Tutorial 08: softmax cross-entropy over a large vocabulary: the forward (each token's loss
# and its row's log-sum-exp, one read of the logits), the backward (the gradient of the logits,
# (softmax - onehot) * grad_loss / divisor, from the saved log-sum-exp) and both in one kernel
# that writes the gradient over the logits. The row kernels take exp(d) as exp2(d * LOG2E):
# exp2 is the GPU's instruction, exp costs a range reduction more. d is a difference of
# logits, exact where it matters; scaling the logits themselves would round them.
LOG2E: ph.const = 1.4426950408889634
# The running maximum starts here, not at -inf, so that x - peak is never -inf - -inf.
LOWEST: ph.const = -3.0e38
# The lanes of the one-block kernels (counting labels, adding up losses).
SMALL_BLOCK: ph.const = 4096


# log(sum(exp(x - top))) of a row, top its maximum, from each lane's running maximum and sum:
# the lanes combined once. The row's lse is top plus it, and its loss top - x[label] plus it,
# which keeps the loss exact where top is large.
@ph.func
def log_total(peak: ph.f32, total: ph.f32, top: ph.f32) -> ph.f32:
    return ph.log(ph.sum(total * ph.exp2((peak - top) * LOG2E)))


# A chunk's gradient: (softmax - onehot) * scale, with softmax = exp(x - lse).
@ph.func
def gradient(x: ph.f32, lse: ph.f32, hot: ph.bool, scale: ph.f32) -> ph.f32:
    return (ph.exp2((x - lse) * LOG2E) - ph.where(hot, 1.0, 0.0)) * scale


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
        e: ph.let = ph.exp2(-ph.abs(d) * LOG2E)
        total = ph.where(d > 0.0, total * e + 1.0, total + e)
        peak = ph.maximum(peak, x)
    top: ph.let = ph.max(peak)
    spread: ph.let = log_total(peak, total, top)
    lse[row] = top + spread
    label: ph.let = labels[row]
    if label == ignore_index:
        loss[row] = 0.0
    else:
        loss[row] = top - logits[row, label] + spread


# Backward: grad = (softmax - onehot(label)) * grad_loss / divisor, one row a block;
# grad_loss holds one value (G = 1) or one a token (G = T). An ignored row reads nothing and
# writes zeros. It carries nothing from chunk to chunk, so it needs no wide tile (and at 16384
# lanes ptxas spills).
@ph.kernel
@ph.autotune(BLOCK_V={4096, 2048, 8192})
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
            hot: ph.let = start + ph.arange(BLOCK_V) == label
            grad[row, start:+BLOCK_V] = gradient(logits[row, start:+BLOCK_V], row_lse, hot, scale)


# Forward and backward in one kernel: the forward's pass over the row, then a second pass
# that writes the gradient over the logits, in place, from the row's last chunk to its first
# (the chunks the first pass read last are the likeliest still to be in L2).
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
        e: ph.let = ph.exp2(-ph.abs(d) * LOG2E)
        total = ph.where(d > 0.0, total * e + 1.0, total + e)
        peak = ph.maximum(peak, x)
    top: ph.let = ph.max(peak)
    spread: ph.let = log_total(peak, total, top)
    row_lse: ph.let = top + spread
    lse[row] = row_lse
    last: ph.let = (V - 1) / BLOCK_V * BLOCK_V
    if label == ignore_index:
        loss[row] = 0.0
        for k in range(0, V, BLOCK_V):
            start: ph.let = last - k
            logits[row, start:+BLOCK_V] = ph.zeros[ph.f32][BLOCK_V]
    else:
        loss[row] = top - logits[row, label] + spread
        scale: ph.let = grad_loss[row % G] / divisor[0]
        for k in range(0, V, BLOCK_V):
            start: ph.let = last - k
            hot: ph.let = start + ph.arange(BLOCK_V) == label
            logits[row, start:+BLOCK_V] = gradient(logits[row, start:+BLOCK_V], row_lse, hot, scale)


# The mean's divisor, in one block: how many labels are not ignore_index. The launch has one
# block; the guard lets the static race check prove that only one writes.
@ph.kernel
def cross_entropy_count(
    labels: ph.tensor[ph.i64][T], n_valid: ph.tensor[ph.f32][1], ignore_index: ph.i64
):
    count: ph.var = ph.zeros[ph.i32][SMALL_BLOCK]
    for start in range(0, T, SMALL_BLOCK):
        count += ph.i32(ph.fill(labels[start:+SMALL_BLOCK], ignore_index) != ignore_index)
    if ph.ctx.block.x == 0:
        n_valid[0] = ph.f32(ph.sum(count))


# The reduced loss, in one block (guarded as the count is): the sum of the losses over the
# divisor.
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
REDUCTIONS = ("mean", "sum", "none")


def row_blocks(meta) -> tuple[int]:
    """One block per token."""
    return (meta["T"],)


def is_torch(array) -> bool:
    return type(array).__module__.startswith("torch")


def vector(like, n: int, value: float | None = None):
    """An f32 vector of ``n`` elements where ``like`` lives (a numpy array, or a torch tensor
    on its device), filled with ``value``, or left uninitialised (no fill to launch) for an
    output a kernel writes whole."""
    if is_torch(like):
        import torch

        if value is None:
            return torch.empty(n, dtype=torch.float32, device=like.device)
        return torch.full((n,), value, dtype=torch.float32, device=like.device)
    return np.empty(n, np.float32) if value is None else np.full(n, value, np.float32)


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


def _small_kernel_options(launch: dict) -> dict:
    """The launch options of ``launch`` without its compile-time names (``BLOCK_V``), which
    the one-block kernels do not have."""
    return {k: v for k, v in launch.items() if not k.isupper()}


def _check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction is one of {', '.join(REDUCTIONS)}, not {reduction!r}")


def cross_entropy(
    logits, labels, ignore_index: int = IGNORE_INDEX, reduction: str = "mean", **launch
) -> dict:
    """The loss as ``torch.nn.functional.cross_entropy(logits, labels, ignore_index=...,
    reduction=...)`` computes it, with what ``backward`` needs: a dict of ``loss`` (a
    1-element vector for "mean" and "sum", the tokens' losses for "none"), ``losses``,
    ``lse`` and ``divisor`` (n_valid for "mean", else 1).  ``launch`` may fix the
    forward's ``BLOCK_V``; its launch options go to every kernel."""
    _check_reduction(reduction)
    t = labels.shape[0]
    options = _small_kernel_options(launch)
    losses, lse = vector(logits, t), vector(logits, t)
    if reduction == "mean":
        divisor = vector(logits, 1)
        count_valid(labels, divisor, ignore_index, **options)
    else:
        divisor = vector(logits, 1, 1.0)
    forward(logits, labels, losses, lse, ignore_index, **launch)
    out = {"losses": losses, "lse": lse, "divisor": divisor, "loss": losses}
    if reduction != "none":
        out["loss"] = vector(logits, 1)
        mean(losses, divisor, out["loss"], **options)
    return out


def fused_cross_entropy(
    logits, labels, ignore_index: int = IGNORE_INDEX, reduction: str = "mean", **launch
) -> dict:
    """``cross_entropy`` and its backward for an upstream gradient of 1, in one pass over
    the logits: the same dict, and ``logits`` holds the gradient of ``loss`` afterwards (in
    place).  "none" has no single upstream gradient to fold in: use ``cross_entropy``, then
    ``backward`` with one value a token."""
    if reduction == "none":
        raise ValueError(
            "fused_cross_entropy needs the upstream gradient before the loss exists: use "
            "reduction 'mean' or 'sum', or cross_entropy(..., reduction='none') then backward"
        )
    _check_reduction(reduction)
    t = labels.shape[0]
    options = _small_kernel_options(launch)
    losses, lse, loss = vector(logits, t), vector(logits, t), vector(logits, 1)
    if reduction == "mean":
        divisor = vector(logits, 1)
        count_valid(labels, divisor, ignore_index, **options)
    else:
        divisor = vector(logits, 1, 1.0)
    one = vector(logits, 1, 1.0)
    forward_backward(logits, labels, losses, lse, one, divisor, ignore_index, **launch)
    mean(losses, divisor, loss, **options)
    return {"losses": losses, "lse": lse, "divisor": divisor, "loss": loss}


def reference(
    logits, labels, ignore_index: int = IGNORE_INDEX, grad_loss=1.0, reduction: str = "mean"
) -> dict:
    """Forward and backward in float64 with numpy: ``losses``, ``lse``, ``n_valid``,
    ``loss`` (reduced as ``reduction`` says) and ``grad`` (of ``loss`` times ``grad_loss``,
    one value, or one a token for "none")."""
    x = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels)
    t = x.shape[0]
    peak = x.max(axis=1, keepdims=True)
    lse = (peak + np.log(np.exp(x - peak).sum(axis=1, keepdims=True)))[:, 0]
    kept = labels != ignore_index
    safe = np.where(kept, labels, 0)
    losses = np.where(kept, lse - x[np.arange(t), safe], 0.0)
    n_valid = int(kept.sum())
    divisor = n_valid if reduction == "mean" else 1
    grad = np.exp(x - lse[:, None])
    grad[np.arange(t), safe] -= 1.0
    grad *= (kept * np.asarray(grad_loss, np.float64) / divisor)[:, None]
    return {
        "losses": losses,
        "lse": lse,
        "n_valid": n_valid,
        "loss": losses if reduction == "none" else losses.sum() / divisor,
        "grad": grad,
    }


def relative_error(got, expected) -> float:
    """max |got - expected| / max |expected| (numpy or torch arrays), in float64."""
    if is_torch(got):
        diff, scale = (got.double() - expected).abs().max(), expected.abs().max()
        return float(diff / scale)
    got = np.asarray(got, dtype=np.float64)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


# Relative errors (to the largest |value|) allowed against float64: fp32 keeps 24 bits, the
# f32 lse of a row (near 10 to 50 here) puts up to |lse| * 2^-24 into each of its gradients,
# and the sums of exp over a row and of the losses add a few units in the last place.
TOLERANCE = 1e-5


def cpu_inputs(t: int, v: int, ignored: int = 0, seed: int = 0) -> dict[str, np.ndarray]:
    """Random logits (spread as a trained model's, a few large) and labels: the first
    token's is the first column, the last token's the last column, and ``ignored`` of them
    are ``IGNORE_INDEX`` (every third token from the second on)."""
    rng = np.random.default_rng(seed)
    logits = (2.0 * rng.standard_normal((t, v))).astype(np.float32)
    logits[rng.random((t, v)) < 0.01] += 8.0
    labels = rng.integers(0, v, t).astype(np.int64)
    labels[0], labels[-1] = 0, v - 1
    labels[1 : 1 + 3 * ignored : 3] = IGNORE_INDEX
    return {"logits": logits, "labels": labels}


def poisoned(shape) -> np.ndarray:
    return np.full(shape, np.nan, np.float32)


def run_on_cpu(data: dict, names: dict | None = None, **launch) -> dict[str, np.ndarray]:
    """The mean's forward and backward, and the fused kernel, in the interpreter, every
    output NaN-poisoned first; ``names`` fixes ``BLOCK_V``."""
    logits, labels = data["logits"], data["labels"]
    t, v = logits.shape
    names = names or {}
    n_valid, losses, lse, loss = poisoned(1), poisoned(t), poisoned(t), poisoned(1)
    count_valid(labels, n_valid, **launch)
    forward(logits, labels, losses, lse, **launch, **names)
    mean(losses, n_valid, loss, **launch)
    grad = poisoned((t, v))
    one = np.ones(1, np.float32)
    backward(logits, labels, lse, one, n_valid, grad, **launch, **names)
    fused = {"grad": logits.copy(), "losses": poisoned(t), "lse": poisoned(t)}
    forward_backward(
        fused["grad"], labels, fused["losses"], fused["lse"], one, n_valid, **launch, **names
    )
    return {
        "losses": losses,
        "lse": lse,
        "n_valid": n_valid[0],
        "loss": loss[0],
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
    for name in ("losses", "lse", "grad", "fused_losses", "fused_lse", "fused_grad", "loss"):
        error = relative_error(got[name], expected[name.removeprefix("fused_")])
        assert error < TOLERANCE, f"{name}: relative error {error:.1e}"
    print(
        f"interpreter: cross-entropy forward, backward and fused on {t}x{v} "
        f"({ignored} ignored) match numpy (float64)"
    )


def triton_cross_entropy():
    """Forward, backward and fused forward-backward in Triton, written the way Triton's
    tutorials write a row kernel: one program a row, the row in chunks of ``BLOCK`` with an
    online log-sum-exp that reduces each chunk to its maximum and its sum (tutorial 02's
    softmax, made online), the block and warps chosen as tutorial 05 chooses them.  The
    fused kernel is Liger-Kernel's: it reads the label's logit before the first pass and
    writes the gradient over the logits in the second.  The mean's divisor and the mean are
    torch's operations.  Returns ``(forward(logits, labels) -> (loss, losses, lse, n_valid),
    backward(logits, labels, lse, grad_loss, divisor) -> grad, fused(logits, labels) ->
    (loss, losses, lse, n_valid), the gradient over logits)``.
    """
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def forward_kernel(Logits, Labels, Loss, Lse, stride, V, ignore_index, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        Logits += row.to(tl.int64) * stride
        peak = float("-inf")
        total = 0.0
        for off in range(0, V, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            x = tl.load(Logits + cols, mask=cols < V, other=float("-inf"))
            new_peak = tl.maximum(peak, tl.max(x, axis=0))
            total = total * tl.exp(peak - new_peak) + tl.sum(tl.exp(x - new_peak), axis=0)
            peak = new_peak
        lse = peak + tl.log(total)
        tl.store(Lse + row, lse)
        label = tl.load(Labels + row)
        kept = label != ignore_index
        target = tl.load(Logits + label, mask=kept, other=0.0)
        tl.store(Loss + row, tl.where(kept, lse - target, 0.0))

    @triton.jit
    def backward_kernel(
        Logits, Labels, Lse, GradLoss, Divisor, Grad, stride, V, G, ignore_index,
        BLOCK: tl.constexpr,
    ):  # fmt: skip
        row = tl.program_id(0)
        Logits += row.to(tl.int64) * stride
        Grad += row.to(tl.int64) * stride
        label = tl.load(Labels + row)
        if label == ignore_index:
            for off in range(0, V, BLOCK):
                cols = off + tl.arange(0, BLOCK)
                tl.store(Grad + cols, tl.zeros([BLOCK], dtype=tl.float32), mask=cols < V)
        else:
            lse = tl.load(Lse + row)
            scale = tl.load(GradLoss + row % G) / tl.load(Divisor)
            for off in range(0, V, BLOCK):
                cols = off + tl.arange(0, BLOCK)
                x = tl.load(Logits + cols, mask=cols < V, other=0.0)
                grad = (tl.exp(x - lse) - tl.where(cols == label, 1.0, 0.0)) * scale
                tl.store(Grad + cols, grad, mask=cols < V)

    @triton.jit
    def fused_kernel(
        Logits, Labels, Loss, Lse, Divisor, stride, V, ignore_index, BLOCK: tl.constexpr
    ):
        row = tl.program_id(0)
        Logits += row.to(tl.int64) * stride
        label = tl.load(Labels + row)
        kept = label != ignore_index
        target = tl.load(Logits + label, mask=kept, other=0.0)  # before the gradient's stores
        peak = float("-inf")
        total = 0.0
        for off in range(0, V, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            x = tl.load(Logits + cols, mask=cols < V, other=float("-inf"))
            new_peak = tl.maximum(peak, tl.max(x, axis=0))
            total = total * tl.exp(peak - new_peak) + tl.sum(tl.exp(x - new_peak), axis=0)
            peak = new_peak
        lse = peak + tl.log(total)
        tl.store(Lse + row, lse)
        tl.store(Loss + row, tl.where(kept, lse - target, 0.0))
        scale = tl.where(kept, 1.0 / tl.load(Divisor), 0.0)
        for off in range(0, V, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            x = tl.load(Logits + cols, mask=cols < V, other=0.0)
            grad = (tl.exp(x - lse) - tl.where(cols == label, 1.0, 0.0)) * scale
            tl.store(Logits + cols, grad, mask=cols < V)

    def block_and_warps(logits):
        block = min(65536 // logits.element_size(), triton.next_power_of_2(logits.shape[1]))
        return block, min(max(block // 256, 1), 8)

    def outputs(logits, labels):
        t = logits.shape[0]
        n_valid = (labels != IGNORE_INDEX).sum().float()
        empty = torch.empty(t, dtype=torch.float32, device=logits.device)
        return n_valid, empty, torch.empty_like(empty)

    def forward_launch(logits, labels):
        t, v = logits.shape
        n_valid, losses, lse = outputs(logits, labels)
        block, warps = block_and_warps(logits)
        forward_kernel[(t,)](
            logits, labels, losses, lse, logits.stride(0), v, IGNORE_INDEX,
            BLOCK=block, num_warps=warps,
        )  # fmt: skip
        return losses.sum() / n_valid, losses, lse, n_valid

    def backward_launch(logits, labels, lse, grad_loss, divisor):
        t, v = logits.shape
        grad = torch.empty_like(logits)
        block, warps = block_and_warps(logits)
        backward_kernel[(t,)](
            logits, labels, lse, grad_loss, divisor, grad, logits.stride(0), v,
            grad_loss.shape[0], IGNORE_INDEX, BLOCK=block, num_warps=warps,
        )  # fmt: skip
        return grad

    def fused_launch(logits, labels):
        t, v = logits.shape
        n_valid, losses, lse = outputs(logits, labels)
        block, warps = block_and_warps(logits)
        fused_kernel[(t,)](
            logits, labels, losses, lse, n_valid, logits.stride(0), v, IGNORE_INDEX,
            BLOCK=block, num_warps=warps,
        )  # fmt: skip
        return losses.sum() / n_valid, losses, lse, n_valid

    return forward_launch, backward_launch, fused_launch


def gpu_inputs(t: int, v: int, ignored: int = 0, seed: int = 0):
    """Random logits and labels on the GPU as ``cpu_inputs`` makes them (the first and
    the last column among the labels), ``ignored`` labels ``IGNORE_INDEX``."""
    import torch

    generator = torch.Generator(device="cuda").manual_seed(seed)
    logits = 2.0 * torch.randn(t, v, device="cuda", generator=generator)
    labels = torch.randint(0, v, (t,), device="cuda", generator=generator)
    labels[0], labels[-1] = 0, v - 1
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


def traffic(t: int, v: int, n_valid: int) -> dict[str, int]:
    """The bytes each pass must move, as every system's GB/s counts them: the forward reads
    every row's logits, its label, and writes its loss and lse; the backward reads the rows
    that are not ignored (an ignored row's gradient is zeros, known without reading it) and
    the labels and lse, and writes every row's gradient; the fused kernel does both."""
    row = 4 * v
    small = t * (8 + 4 + 4)
    forward_bytes = t * row + small
    backward_bytes = n_valid * row + t * row + small
    return {
        "forward": forward_bytes,
        "backward": backward_bytes,
        "fused": forward_bytes + backward_bytes,
    }


def check_and_time_on_gpu(sizes=((4096, 32000), (4096, 131072))) -> None:
    """Check against torch in float64, then time Phobos, Triton and torch (median, L2 flushed)."""
    import torch
    from triton.testing import do_bench

    triton_forward, triton_backward, triton_fused = triton_cross_entropy()
    for t, v in sizes:
        logits, labels = gpu_inputs(t, v, ignored=t // 16)
        expected = torch_cross_entropy(logits.double(), labels)
        ones = torch.ones(1, device="cuda")
        got = cross_entropy(logits, labels)
        grad = torch.full_like(logits, float("nan"))
        backward(logits, labels, got["lse"], ones, got["divisor"], grad)
        in_place = logits.clone()
        fused = fused_cross_entropy(in_place, labels)
        t_loss, _, t_lse, t_valid = triton_forward(logits, labels)
        t_grad = triton_backward(logits, labels, t_lse, ones, t_valid)
        t_in_place = logits.clone()
        t_fused_loss = triton_fused(t_in_place, labels)[0]
        checks = [
            ("phobos", "loss", got["loss"][0], expected["loss"]),
            ("phobos", "grad", grad, expected["grad"]),
            ("phobos", "fused loss", fused["loss"][0], expected["loss"]),
            ("phobos", "fused grad", in_place, expected["grad"]),
            ("triton", "loss", t_loss, expected["loss"]),
            ("triton", "grad", t_grad, expected["grad"]),
            ("triton", "fused loss", t_fused_loss, expected["loss"]),
            ("triton", "fused grad", t_in_place, expected["grad"]),
        ]
        for system, name, value, want in checks:
            error = relative_error(value, want)
            bad = not error < TOLERANCE or bool(value.isnan().any())
            print(f"{t}x{v} {system} {name}: error {error:.1e}{'  FAILS' * bad}")
            assert not (bad and system == "phobos"), f"phobos {name} at {t}x{v}"
        del in_place, t_in_place, t_grad, expected
        torch_loss, leaf, _ = torch_cross_entropy(logits, labels)["graph"]
        scratch = logits.clone()  # the fused runs overwrite it; the timing does not care

        def torch_step():
            step_leaf = logits.detach().requires_grad_()  # noqa: B023
            step_loss = torch.nn.functional.cross_entropy(step_leaf, labels)  # noqa: B023
            return torch.autograd.grad(step_loss, step_leaf)

        runs = {
            "forward": {
                "phobos": lambda: cross_entropy(logits, labels),  # noqa: B023
                "triton": lambda: triton_forward(logits, labels),  # noqa: B023
                "torch": lambda: torch.nn.functional.cross_entropy(logits, labels),  # noqa: B023
            },
            "backward": {
                "phobos": lambda: backward(logits, labels, got["lse"], ones, got["divisor"], grad),  # noqa: B023
                "triton": lambda: triton_backward(logits, labels, t_lse, ones, t_valid),  # noqa: B023
                "torch": lambda: torch.autograd.grad(torch_loss, leaf, retain_graph=True),  # noqa: B023
            },
            "fused": {
                "phobos": lambda: fused_cross_entropy(scratch, labels),  # noqa: B023
                "triton": lambda: triton_fused(scratch, labels),  # noqa: B023
                "torch": torch_step,
            },
        }
        size = traffic(t, v, int(got["divisor"][0]))
        for part, systems in runs.items():
            cells = []
            for system, run in systems.items():
                ms = do_bench(run, return_mode="median")
                cells.append(f"{system} {ms:7.3f} ms {size[part] / ms / 1e6:6.0f} GB/s")
            print(f"{t}x{v} {part:8s} " + "  ".join(cells))


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
