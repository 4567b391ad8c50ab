// Tutorial 05, forward: one block normalises one row, held in one BLOCK_N tile;
// the statistics are fp32, and mean and rstd are kept for the backward pass.
@autotune(BLOCK_N in {16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384})
kernel layer_norm_forward(x: tensor<f16>[M, N], w: tensor<f16>[N], b: tensor<f16>[N], y: tensor<f16>[M, N], mean: tensor<f32>[M], rstd: tensor<f32>[M], eps: f32) {
    let row = ctx.block.x
    let values = f32(x[row, 0 :+ BLOCK_N])
    let mu = sum(values) / f32(N)
    let centered = values - mu
    let inv = rsqrt(sum(centered * centered) / f32(N) + eps)
    mean[row] = mu
    rstd[row] = inv
    let scaled = centered * inv * f32(w[0 :+ BLOCK_N])
    y[row, 0 :+ BLOCK_N] = f16(scaled + f32(b[0 :+ BLOCK_N]))
}

// Backward, first kernel: block g takes the ROWS rows from g * ROWS; it writes their dx
// and its fp32 partial sums of dy * xhat and dy into row g of dw_partial and db_partial.
@autotune(ROWS in {16, 1, 2, 4, 8, 32, 64}, BLOCK_N in {16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384})
kernel layer_norm_backward_dx(dy: tensor<f16>[M, N], x: tensor<f16>[M, N], w: tensor<f16>[N], mean: tensor<f32>[M], rstd: tensor<f32>[M], dx: tensor<f16>[M, N], dw_partial: tensor<f32>[GROUPS, N], db_partial: tensor<f32>[GROUPS, N]) {
    let group = ctx.block.x
    let weight = f32(w[0 :+ BLOCK_N])
    var dw_sum = zeros<f32>[BLOCK_N]
    var db_sum = zeros<f32>[BLOCK_N]
    for i in 0 .. ROWS {
        let row = group * ROWS + i
        let inv = rstd[row]
        let xhat = (f32(x[row, 0 :+ BLOCK_N]) - mean[row]) * inv
        let grad = f32(dy[row, 0 :+ BLOCK_N])
        let wdy = weight * grad
        let c1 = sum(xhat * wdy) / f32(N)
        let c2 = sum(wdy) / f32(N)
        dx[row, 0 :+ BLOCK_N] = f16((wdy - (xhat * c1 + c2)) * inv)
        dw_sum += fill(grad * xhat, 0.0)
        db_sum += fill(grad, 0.0)
    }
    dw_partial[group, 0 :+ BLOCK_N] = dw_sum
    db_partial[group, 0 :+ BLOCK_N] = db_sum
}

// Backward, second kernel: each block sums BLOCK_N columns of the partial sums over
// all GROUPS rows, BLOCK_G rows at a time, in fp32.
@autotune(BLOCK_G in {32, 16, 64}, BLOCK_N in {64, 32, 128, 256})
kernel layer_norm_backward_dwdb(dw_partial: tensor<f32>[GROUPS, N], db_partial: tensor<f32>[GROUPS, N], dw: tensor<f16>[N], db: tensor<f16>[N]) {
    let start = ctx.block.x * BLOCK_N
    var dw_sum = zeros<f32>[BLOCK_G, BLOCK_N]
    var db_sum = zeros<f32>[BLOCK_G, BLOCK_N]
    for first in 0 .. GROUPS step BLOCK_G {
        dw_sum += fill(dw_partial[first :+ BLOCK_G, start :+ BLOCK_N], 0.0)
        db_sum += fill(db_partial[first :+ BLOCK_G, start :+ BLOCK_N], 0.0)
    }
    dw[start :+ BLOCK_N] = f16(sum(dw_sum, axis=0))
    db[start :+ BLOCK_N] = f16(sum(db_sum, axis=0))
}
