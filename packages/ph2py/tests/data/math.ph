// Every elementwise math function, in both spellings.
kernel math(x: tensor<f32>[N], n: tensor<i32>[N], u: tensor<u32>[N], out: tensor<f32>[N],
            flags: tensor<bool>[N], bits: tensor<i32>[N], high: tensor<u32>[N]) {
    let i = ctx.block.x * 256
    let v = x[i :+ 256]
    let gelu = 0.5 * v * (1.0 + tanh(0.7978846 * fma(0.044715 * v, v * v, v)))
    let smooth = sigmoid(v) + erf(v) + expm1(v) + log1p(abs(v)) + sin(v) * cos(v)
    let whole = floor(v) + ceil(v) + round(v) + trunc(v) + sign(v)
    out[i :+ 256] = gelu + smooth + whole + clamp(pow(abs(v), 1.5), 0.0, 6.0)
    flags[i :+ 256] = isnan(v) || isinf(v) || !isfinite(v)
    let k = n[i :+ 256]
    bits[i :+ 256] = popcount(k) + sign(k) + (k << 3 >> 1 & 255 | 1 ^ ~k)
    high[i :+ 256] = umulhi(u[i :+ 256], 0xD2511F53u32)
}
