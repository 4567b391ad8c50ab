// Dropout: each element of x is kept with probability 1 - p, scaled by 1 / (1 - p), or
// dropped (0). rand(seed, offsets) is counter-based: element k's draw is a function of the
// seed and k alone, so every launch with this seed drops the same elements, in the
// interpreter and on the GPU alike, whatever BLOCK is; the backward pass draws the same mask
// again instead of storing it. The last window's absent lanes are neither read nor written.
@autotune(BLOCK in [256, 4096])
kernel dropout(x: tensor<f32>[N], out: tensor<f32>[N], p: f32, seed: i64) {
    let base = ctx.block.x * BLOCK
    let keep = rand(seed, base + arange(BLOCK)) > p
    out[base :+ BLOCK] = where(keep, x[base :+ BLOCK] / (1.0 - p), 0.0)
}
