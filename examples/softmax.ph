// Tutorial 02: fused softmax, ROWS rows per block, each row in one BLOCK_N tile.
// Columns past N are absent: max and sum skip them and the store leaves them.
@autotune(ROWS in {1, 2, 4, 8}, BLOCK_N in {16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384})
kernel softmax(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let first = ctx.block.x * ROWS
    let rows = x[first :+ ROWS, 0 :+ BLOCK_N]
    let shifted = rows - max(rows, axis=1)[:, newaxis]
    let numerator = exp(shifted)
    out[first :+ ROWS, 0 :+ BLOCK_N] = numerator / sum(numerator, axis=1)[:, newaxis]
}

// Softmax of rows of any length, in BLOCK_N chunks: a first pass keeps each row's
// running maximum and its sum of exp rescaled to that maximum, a second writes.
@autotune(ROWS in {1, 2, 4, 8}, BLOCK_N in [16, 16384])
kernel softmax_online(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let first = ctx.block.x * ROWS
    var row_max = zeros<f32>[ROWS] - inf
    var row_sum = zeros<f32>[ROWS]
    for start in 0 .. N step BLOCK_N {
        let chunk = fill(x[first :+ ROWS, start :+ BLOCK_N], -inf)
        let new_max = maximum(row_max, max(chunk, axis=1))
        let rescale = exp(row_max - new_max)
        row_sum = row_sum * rescale + sum(exp(chunk - new_max[:, newaxis]), axis=1)
        row_max = new_max
    }
    for start in 0 .. N step BLOCK_N {
        let shifted = x[first :+ ROWS, start :+ BLOCK_N] - row_max[:, newaxis]
        out[first :+ ROWS, start :+ BLOCK_N] = exp(shifted) / row_sum[:, newaxis]
    }
}
