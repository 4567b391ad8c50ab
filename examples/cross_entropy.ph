// Tutorial 08: softmax cross-entropy over a large vocabulary, forward (loss and lse, one
// read of the logits) and backward (grad = (softmax - onehot) * grad_loss / divisor), and
// both in one kernel that writes the gradient over the logits.
// The running maximum starts here, not at -inf, so that x - peak is never -inf - -inf.
const LOWEST = -3e+38

// The lanes of the one-block kernels (counting labels, adding up losses).
const SMALL_BLOCK = 1024

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
        let e = exp(-abs(d))
        total = where(d > 0.0, total * e + 1.0, total + e)
        peak = maximum(peak, x)
    }
    let top = max(peak)
    let row_lse = top + log(sum(total * exp(peak - top)))
    lse[row] = row_lse
    let label = labels[row]
    if label == ignore_index {
        loss[row] = 0.0
    } else {
        loss[row] = row_lse - logits[row, label]
    }
}

// Backward: grad = (exp(x - lse) - onehot(label)) * grad_loss / divisor, one row a block;
// grad_loss holds one value (G = 1) or one a token (G = T). An ignored row writes zeros.
@autotune(BLOCK_V in {4096, 2048, 8192, 16384})
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
            let p = exp(logits[row, start :+ BLOCK_V] - row_lse)
            let hot = start + arange(BLOCK_V) == label
            grad[row, start :+ BLOCK_V] = (p - where(hot, 1.0, 0.0)) * scale
        }
    }
}

// Forward and backward in one kernel: the forward's pass over the row, then a second pass
// that writes the gradient over the logits, in place, from the row's last chunk to its
// first (the chunks read last are the likeliest still to be in L2).
@autotune(BLOCK_V in {4096, 2048, 8192, 16384})
kernel cross_entropy_fused(logits: tensor<f32>[T, V], labels: tensor<i64>[T], loss: tensor<f32>[T], lse: tensor<f32>[T], grad_loss: tensor<f32>[G], divisor: tensor<f32>[1], ignore_index: i64) {
    let row = ctx.block.x
    let label = labels[row]
    var peak = zeros<f32>[BLOCK_V] + LOWEST
    var total = zeros<f32>[BLOCK_V]
    for start in 0 .. V step BLOCK_V {
        let x = fill(logits[row, start :+ BLOCK_V], -inf)
        let d = x - peak
        let e = exp(-abs(d))
        total = where(d > 0.0, total * e + 1.0, total + e)
        peak = maximum(peak, x)
    }
    let top = max(peak)
    let row_lse = top + log(sum(total * exp(peak - top)))
    lse[row] = row_lse
    let last = (V - 1) / BLOCK_V * BLOCK_V
    if label == ignore_index {
        loss[row] = 0.0
        for k in 0 .. V step BLOCK_V {
            logits[row, last - k :+ BLOCK_V] = zeros<f32>[BLOCK_V]
        }
    } else {
        loss[row] = row_lse - logits[row, label]
        let scale = grad_loss[row % G] / divisor[0]
        for k in 0 .. V step BLOCK_V {
            let start = last - k
            let p = exp(logits[row, start :+ BLOCK_V] - row_lse)
            let hot = start + arange(BLOCK_V) == label
            logits[row, start :+ BLOCK_V] = (p - where(hot, 1.0, 0.0)) * scale
        }
    }
}

// The mean's divisor, in one block (block 0 writes it): how many labels are not ignore_index.
kernel cross_entropy_count(labels: tensor<i64>[T], n_valid: tensor<f32>[1], ignore_index: i64) {
    var count = zeros<i32>[SMALL_BLOCK]
    for start in 0 .. T step SMALL_BLOCK {
        let kept = fill(labels[start :+ SMALL_BLOCK], ignore_index) != ignore_index
        count += i32(kept)
    }
    if ctx.block.x == 0 {
        n_valid[0] = f32(sum(count))
    }
}

// The reduced loss, in one block (block 0 writes it): the sum of the losses over the divisor.
kernel cross_entropy_mean(loss: tensor<f32>[T], divisor: tensor<f32>[1], out: tensor<f32>[1]) {
    var total = zeros<f32>[SMALL_BLOCK]
    for start in 0 .. T step SMALL_BLOCK {
        total += fill(loss[start :+ SMALL_BLOCK], 0.0)
    }
    if ctx.block.x == 0 {
        out[0] = sum(total) / divisor[0]
    }
}
