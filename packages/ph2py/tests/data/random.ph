// Counter-based random numbers, in both spellings: a seed, and an offset for each lane.
kernel noise(x: tensor<f32>[N, D], out: tensor<f32>[N, D], bits: tensor<u32>[N], seed: i64) {
    let row = ctx.block.x
    let offsets = row * D + arange(64) // one offset per element of the row
    out[row, 0 :+ 64] = x[row, 0 :+ 64] + 0.1 * randn(seed, offsets)
    let coin = rand(seed ^ 1, offsets) < 0.5
    bits[row] = randint(seed, row) & 255u32
    out[row, 0 :+ 64] = where(coin, out[row, 0 :+ 64], 0.0)
}
