const MASK = 0xFF_FFu32
const BIG = 1_000_000
const HALF = 0.5f16
const TINY = 1e-30
const ROWS = 4

kernel literals(x: tensor<f32>[N], y: tensor<f16>[N, 4], out: tensor<f32>[N], n: i64) {
    let i = ctx.block.x * ROWS
    var best = -inf
    let filled = fill(x[i :+ ROWS], inf)
    let wide = 7i64 + n / 2 // integer division reads as //
    let ratio = x[i] / 2.0 // float division stays /
    let half = (N + ROWS - 1) / ROWS
    let h = f16(x[i]) * 2.5f16 + HALF + f16(-1.5)
    let grid = x[i :+ 4][:, newaxis] * x[i :+ 4][newaxis, :]
    let z = zeros<f32>[4, 4] + grid + f32(y[i, 0 :+ 4])[newaxis, :]
    let yes = true && !false
    let one = 1f32 + 2.i32 + bool(true)
    best = maximum(best, sum(z, axis=1)[0])
    out[i] = best / ratio + TINY
}
