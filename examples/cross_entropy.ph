// Tutorial 08: softmax cross-entropy over a large vocabulary: the forward (each token's loss
// and its row's log-sum-exp, one read of the logits), the backward (the gradient of the logits,
// (softmax - onehot) * grad_loss / divisor, from the saved log-sum-exp) and both in one kernel
// that writes the gradient over the logits. The row kernels compute in base 2, since exp2 is
// the GPU's instruction and exp costs a range reduction more: exp(x) = exp2(x * LOG2E).
const LOG2E = 1.4426950408889634
const LN2 = 0.6931471805599453
// The running maximum starts here, not at -inf, so that x - peak is never -inf - -inf.
const LOWEST = -3e+38
// The lanes of the one-block kernels (counting labels, adding up losses).
const SMALL_BLOCK = 4096

// The natural log-sum-exp of a row from each lane's running maximum and sum (base 2).
fn log_sum_exp(peak: f32, total: f32) -> f32 {
    let top = max(peak)
    return (top + log2(sum(total * exp2(peak - top)))) * LN2
}

// A chunk's gradient: (softmax - onehot) * scale, with softmax = exp2(x * LOG2E - lse2).
fn gradient(x: f32, lse2: f32, hot: bool, scale: f32) -> f32 {
    return (exp2(x * LOG2E - lse2) - where(hot, 1.0, 0.0)) * scale
}

// Forward: one row a block, BLOCK_V columns at a time. Each lane keeps the largest value it
// has seen (peak) and the sum of exp2(x - peak) over its values (total): a value above peak
// rescales the sum by exp2(peak - x) and adds 1, any other adds exp2(x - peak), and both are
// exp2(-|x - peak|). The lanes are combined once, after the loop.
@autotune(BLOCK_V in {4096, 2048, 8192, 16384})
kernel cross_entropy_forward(logits: tensor<f32>[T, V], labels: tensor<i64>[T], loss: tensor<f32>[T], lse: tensor<f32>[T], ignore_index: i64) {
    let row = ctx.block.x
    var peak = zeros<f32>[BLOCK_V] + LOWEST
    var total = zeros<f32>[BLOCK_V]
    for start in 0 .. V step BLOCK_V {
        let x = fill(logits[row, start :+ BLOCK_V], -inf) * LOG2E
        let d = x - peak
        let e = exp2(-abs(d))
        total = where(d > 0.0, total * e + 1.0, total + e)
        peak = maximum(peak, x)
    }
    let row_lse = log_sum_exp(peak, total)
    lse[row] = row_lse
    let label = labels[row]
    if label == ignore_index {
        loss[row] = 0.0
    } else {
        loss[row] = row_lse - logits[row, label]
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
        let lse2 = lse[row] * LOG2E
        for start in 0 .. V step BLOCK_V {
            let hot = start + arange(BLOCK_V) == label
            grad[row, start :+ BLOCK_V] = gradient(logits[row, start :+ BLOCK_V], lse2, hot, scale)
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
        let x = fill(logits[row, start :+ BLOCK_V], -inf) * LOG2E
        let d = x - peak
        let e = exp2(-abs(d))
        total = where(d > 0.0, total * e + 1.0, total + e)
        peak = maximum(peak, x)
    }
    let row_lse = log_sum_exp(peak, total)
    lse[row] = row_lse
    let last = (V - 1) / BLOCK_V * BLOCK_V
    if label == ignore_index {
        loss[row] = 0.0
        for k in 0 .. V step BLOCK_V {
            let start = last - k
            logits[row, start :+ BLOCK_V] = zeros<f32>[BLOCK_V]
        }
    } else {
        loss[row] = row_lse - logits[row, label]
        let scale = grad_loss[row % G] / divisor[0]
        let lse2 = row_lse * LOG2E
        for k in 0 .. V step BLOCK_V {
            let start = last - k
            let hot = start + arange(BLOCK_V) == label
            logits[row, start :+ BLOCK_V] = gradient(logits[row, start :+ BLOCK_V], lse2, hot, scale)
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
