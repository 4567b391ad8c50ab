// Text in a loose layout; the printer tidies it (see layout.expected.ph).
const X = 31 // hex

const Y = 1000000

const Z = 2.0

const W = 1e-06

const V = 2.5f16

const U = 7i64

const T = f16(-2.5)

@autotune(B in [16, 64], C in {1, 2, 3})
kernel k(t: tensor<f32>[N, 64], n: i32) {
    let a = (x + y) * z
    // inside an expression
    let b = f(1, 2, axis=3)
    if a {
        return
    }
    for i in 0 .. N {
        t[i :+ B] = t[i :+ B] + 1.0
    }
    let c = t[:, newaxis]
    let d = a + -b
}
