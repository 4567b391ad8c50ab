// Every construct of the grammar, in canonical layout.
const BLOCK_M = 64

const EPS = 1e-06

const SCALE = 2.5f16

const MASK = 255u32

fn gelu(x: f32) -> f32 {
    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
}

fn nothing(a: f32, b: i32) {
    return
}

@autotune(BM in [16, 128], BN in {64, 128, 256}, STAGES in {2, 3})
kernel matmul(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N], bias: tensor<f32>[4]) {
    let m = ctx.block.x * BM
    let n = ctx.block.y * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    for i in 0 .. 4 {
        acc += bias[i]
    }
    c[m :+ BM, n :+ BN] = acc
}

kernel everything(t: tensor<f32>[N], out: tensor<f32>[N], flags: tensor<i32>[N], n: index) {
    let i = ctx.grid.z - 1 + ctx.block.y
    var x = t[i :+ 128]
    x -= 1
    x *= 2.0
    x /= 3
    x %= 4
    var bits = flags[i :+ 128]
    bits &= 7i64
    bits |= 8
    bits ^= 9
    bits <<= 1
    bits >>= 2
    let row = x[:, newaxis] * x[newaxis, :]
    let total = sum(row, axis=1) + max(row, axis=0) @ trans(row)
    let m = where(x > 0.0 && !(x == 1.0) || x != x, x, -x)
    let p = a - (b - c) - d * (e + f) / (g % h)
    let q = (a | b) & c ^ d | ~e & f << 2 >> 1 | g ^ (h ^ i)
    let o = (a & b) < c && (d || e)
    let r = -(a + b) * --c
    let s = a < b == c >= d != (e != f)
    let u = (x + 1)[0]
    let casts = f16(t[i]) + i32(-1) + 2.5f16 + 7i64 + 1.0bf16 + 100000000.0
    let tiles = zeros<f16>[4, 8][1, 2 :+ 4]
    let flag = true || false
    out[i :+ 128] = fill(x, 0.0)
    atomic_add(out[0], total)
    if n > 0 {
        out[0] = 1.0
    } else if n < 0 {
        out[0] = 2.0
    } else if n == 0 {
        out[0] = 3.0
    } else {
        return
    }
    if flag {
    }
    while n > 1 {
        n = n / 2
    }
}
