// Phobos groups like C; Python does not. Every line keeps its meaning.
kernel precedence(t: tensor<i32>[N], out: tensor<bool>[N], x: tensor<f32>[N]) {
    let a = t[0]
    let b = t[1]
    let c = t[2]
    let d = t[3]
    out[0] = a & 1 == 0
    out[1] = (a & 1) == 0
    out[2] = a | b ^ c & d
    out[3] = ((a | b) ^ c) & d
    out[4] = !(a < b)
    out[5] = !(a < b) && c > d || a == d
    out[6] = (a < b || c < d) && a != b
    out[7] = a < b == (c < d)
    out[8] = a == !(b < c)
    out[9] = (a == b) == (c == d)
    let e = -(a * b) + ~a & b
    let f = a - (b - c) - d
    let g = a / b / c + a / (b / c)
    let h = a << b + c
    let i = (a << b) + c
    let j = a % b * c + a * (b % c)
    let k = -(-a) - -b
    let w = x[a + 1 :+ 2 * 4] + x[(a - b) :+ 4]
    x[0] = x[0] / 2.0 + x[1] / x[2]
}
