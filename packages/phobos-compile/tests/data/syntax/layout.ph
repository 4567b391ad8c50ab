// Text in a loose layout; the printer tidies it (see layout.expected.ph).
const   X=0x1F   // hex
const Y = 1_000_000
const Z = 2.
const W = 1E-6
const V = f16(2.5)
const U = i64(7)
const T = f16(-2.5)
@autotune(B in [16, 64])
@autotune(C in {1, 2,
                3})
kernel k(t: tensor<f32>[N,
                        64],
         n: i32,) {
    let a = ((x + y)) * (z)
    let b = f(1,
              // inside an expression
              2, axis = 3,)
    if a { return }
    for i in 0..N { t[i:+B]=t[i :+ B]+1.0 }
    let c = t[ : , newaxis ]
    let d = a+-b
}
