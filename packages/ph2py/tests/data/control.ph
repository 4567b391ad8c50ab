fn sign(x: i32) -> i32 {
    if x > 0 {
        return 1
    } else if x < 0 {
        return -1
    }
    return 0
}

fn nothing() {
}

kernel control(t: tensor<f32>[N], n: i32) {
    var k = 0
    while k < n && k < 8 {
        k += sign(n)
    }
    for i in 0 .. N step 4 { t[i :+ 4] = t[i :+ 4] + 1.0 }
    for j in 2 .. n {
    }
    for z in 0i32 .. n { }
    if n == 1 {
        t[0] = 1.0
    } else if n == 2 {
        t[0] = 2.0
    } else if n == 3 {
        t[0] = 3.0
    } else {
        // the else of an else-if chain keeps its comment
        if n == 4 {
            t[0] = 4.0
        }
    }
    nothing()
    k /= 2
    k %= 3
}
