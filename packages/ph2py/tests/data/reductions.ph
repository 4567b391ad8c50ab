// Every reduction along an axis, in both spellings.
kernel reductions(x: tensor<f32>[M, N], n: tensor<i32>[M, N], total: tensor<f32>[M],
                  product: tensor<f32>[M], bits: tensor<i32>[M], flags: tensor<bool>[M, 2],
                  first: tensor<i32>[M]) {
    let r = ctx.block.x * 4
    let t = x[r :+ 4, 0 :+ 64]
    let k = n[r :+ 4, 0 :+ 64]
    total[r :+ 4] = sum(t, axis=1) + max(t, axis=1) - min(t, axis=-1)
    product[r :+ 4] = prod(t, axis=1)
    bits[r :+ 4] = xor_sum(k, axis=1) ^ xor_sum(n[r, 0 :+ 64])
    flags[r :+ 4, 0] = any(t > 0.0, axis=1) && !all(k, axis=1)
    flags[r :+ 4, 1] = all(isfinite(t), axis=1) || any(prod(t, axis=0) > 1.0)
    first[r :+ 4] = argmax(t, axis=1) + argmin(k, axis=1)
}
