// The slope of the leaky ReLU for negative inputs.
const SLOPE = 0.01

// Leaky ReLU: negative values keep a SLOPE-sized fraction of themselves.
fn leaky_relu(v: f32) -> f32 {
    return where(v >= 0.0, v, v * SLOPE)
}

// Tutorial 03: fp16 matmul with fp32 accumulation on the tensor cores; ACTIVATION 1 adds a
// leaky ReLU before the fp16 store.  Blocks go in groups of GROUP_M block-rows, so that
// blocks running together share tiles of a and b in L2.
@autotune(BM in {128, 64}, BN in {128, 256, 64}, BK in {64, 32}, GROUP_M in {8}, NUM_THREADS in {256, 128}, ACTIVATION in {0, 1})
kernel matmul(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N]) {
    let blocks_m = (M + BM - 1) / BM
    let blocks_n = (N + BN - 1) / BN
    // A group is GROUP_M block-rows (fewer in the last group), walked column by column.
    let group_blocks = GROUP_M * blocks_n
    let first_row = ctx.block.x / group_blocks * GROUP_M
    let group_rows = minimum(blocks_m - first_row, GROUP_M)
    let in_group = ctx.block.x % group_blocks
    let m = (first_row + in_group % group_rows) * BM
    let n = in_group / group_rows * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    if ACTIVATION == 1 {
        acc = leaky_relu(acc)
    }
    c[m :+ BM, n :+ BN] = f16(acc)
}
