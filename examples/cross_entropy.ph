// Tutorial 08: softmax cross-entropy over a large vocabulary: the forward (each token's loss
// and its row's log-sum-exp, one read of the logits), the backward (the gradient of the logits,
// (softmax - onehot) * grad_loss / divisor, from the saved log-sum-exp) and both in one kernel
// that writes the gradient over the logits. The row kernels take exp(d) as exp2(d * LOG2E):
// exp2 is the GPU's instruction, exp costs a range reduction more. d is a difference of
// logits, exact where it matters; scaling the logits themselves would round them.
const LOG2E = 1.4426950408889634
// The running maximum starts here, not at -inf, so that x - peak is never -inf - -inf.
const LOWEST = -3e38
// The lanes of the one-block kernels (counting labels, adding up losses).
const SMALL_BLOCK = 4096

// log(sum(exp(x - top))) of a row, top its maximum, from each lane's running maximum and sum:
// the lanes combined once. The row's lse is top plus it, and its loss top - x[label] plus it,
// which keeps the loss exact where top is large.
fn log_total(peak: f32, total: f32, top: f32) -> f32 {
    return log(sum(total * exp2((peak - top) * LOG2E)))
}

// A chunk's gradient: (softmax - onehot) * scale, with softmax = exp(x - lse).
fn gradient(x: f32, lse: f32, hot: bool, scale: f32) -> f32 {
    return (exp2((x - lse) * LOG2E) - where(hot, 1.0, 0.0)) * scale
}

// Forward: one row a block, BLOCK_V columns at a time. Each lane keeps the largest value it
// has seen (peak) and the sum of exp(x - peak) over its values (total): a value above peak
// rescales the sum by exp(peak - x) and adds 1, any other adds exp(x - peak), and both are
// exp(-|x - peak|). The lanes are combined once, after the loop.
@autotune(BLOCK_V in {4096, 2048, 8192, 16384})
kernel cross_entropy_forward(logits: tensor<f32>[T, V], labels: tensor<i64>[T], loss: tensor<f32>[T], lse: tensor<f32>[T], ignore_index: i64) {
    let row = ctx.block.x
    var peak = zeros<f32>[BLOCK_V] + LOWEST
    var total = zeros<f32>[BLOCK_V]
    for start in 0 .. V step BLOCK_V {
        let x = fill(logits[row, start :+ BLOCK_V], -inf)
        let d = x - peak
        let e = exp2(-abs(d) * LOG2E)
        total = where(d > 0.0, total * e + 1.0, total + e)
        peak = maximum(peak, x)
    }
    let top = max(peak)
    let spread = log_total(peak, total, top)
    lse[row] = top + spread
    let label = labels[row]
    if label == ignore_index {
        loss[row] = 0.0
    } else {
        loss[row] = top - logits[row, label] + spread
    }
}

// Backward: grad = (softmax - onehot(label)) * grad_loss / divisor, one row a block;
// grad_loss holds one value (G = 1) or one a token (G = T). An ignored row reads nothing and
// writes zeros. It carries nothing from chunk to chunk, so it needs no wide tile (and at 16384
// lanes ptxas spills).
@autotune(BLOCK_V in {4096, 2048, 8192})
kernel cross_entropy_backward(logits: tensor<f32>[T, V], labels: tensor<i64>[T], lse: tensor<f32>[T], grad_loss: tensor<f32>[G], divisor: tensor<f32>[1], grad: tensor<f32>[T, V], ignore_index: i64) {
    let row = ctx.block.x
    let label = labels[row]
    if label == ignore_index {
        for start in 0 .. V step BLOCK_V {
            grad[row, start :+ BLOCK_V] = zeros<f32>[BLOCK_V]
        }
    } else {
        let scale = grad_loss[row % G] / divisor[0]
        let row_lse = lse[row]
        for start in 0 .. V step BLOCK_V {
            let hot = start + arange(BLOCK_V) == label
            grad[row, start :+ BLOCK_V] = gradient(logits[row, start :+ BLOCK_V], row_lse, hot, scale)
        }
    }
}

// Forward and backward in one kernel: the forward's pass over the row, then a second pass
// that writes the gradient over the logits, in place, from the row's last chunk to its first
// (the chunks the first pass read last are the likeliest still to be in L2).
@autotune(BLOCK_V in {4096, 2048, 8192, 16384})
kernel cross_entropy_fused(logits: tensor<f32>[T, V], labels: tensor<i64>[T], loss: tensor<f32>[T], lse: tensor<f32>[T], grad_loss: tensor<f32>[G], divisor: tensor<f32>[1], ignore_index: i64) {
    let row = ctx.block.x
    let label = labels[row]
    var peak = zeros<f32>[BLOCK_V] + LOWEST
    var total = zeros<f32>[BLOCK_V]
    for start in 0 .. V step BLOCK_V {
        let x = fill(logits[row, start :+ BLOCK_V], -inf)
        let d = x - peak
        let e = exp2(-abs(d) * LOG2E)
        total = where(d > 0.0, total * e + 1.0, total + e)
        peak = maximum(peak, x)
    }
    let top = max(peak)
    let spread = log_total(peak, total, top)
    let row_lse = top + spread
    lse[row] = row_lse
    let last = (V - 1) / BLOCK_V * BLOCK_V
    if label == ignore_index {
        loss[row] = 0.0
        for k in 0 .. V step BLOCK_V {
            let start = last - k
            logits[row, start :+ BLOCK_V] = zeros<f32>[BLOCK_V]
        }
    } else {
        loss[row] = top - logits[row, label] + spread
        let scale = grad_loss[row % G] / divisor[0]
        for k in 0 .. V step BLOCK_V {
            let start = last - k
            let hot = start + arange(BLOCK_V) == label
            logits[row, start :+ BLOCK_V] = gradient(logits[row, start :+ BLOCK_V], row_lse, hot, scale)
        }
    }
}

// The mean's divisor, in one block: how many labels are not ignore_index. The launch has one
// block; the guard lets the static race check prove that only one writes.
kernel cross_entropy_count(labels: tensor<i64>[T], n_valid: tensor<f32>[1], ignore_index: i64) {
    var count = zeros<i32>[SMALL_BLOCK]
    for start in 0 .. T step SMALL_BLOCK {
        count += i32(fill(labels[start :+ SMALL_BLOCK], ignore_index) != ignore_index)
    }
    if ctx.block.x == 0 {
        n_valid[0] = f32(sum(count))
    }
}

// The reduced loss, in one block (guarded as the count is): the sum of the losses over the
// divisor.
kernel cross_entropy_mean(loss: tensor<f32>[T], divisor: tensor<f32>[1], out: tensor<f32>[1]) {
    var total = zeros<f32>[SMALL_BLOCK]
    for start in 0 .. T step SMALL_BLOCK {
        total += fill(loss[start :+ SMALL_BLOCK], 0.0)
    }
    if ctx.block.x == 0 {
        out[0] = sum(total) / divisor[0]
    }
}
