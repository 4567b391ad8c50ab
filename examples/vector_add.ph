// Tutorial 01: vector addition.
// Each block adds one BLOCK-long window of x and y; the last window hangs over
// the end of the tensors, and its absent lanes are neither read nor written.
@autotune(BLOCK in [256, 16384])
kernel vector_add(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N]) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = x[base :+ BLOCK] + y[base :+ BLOCK]
}
