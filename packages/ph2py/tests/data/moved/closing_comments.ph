// Comments after a closing brace: Python has no line that ends a block.
kernel closing(t: tensor<f32>[N], n: i32) {
    for i in 0 .. n {
        t[i] = 0.0
    } // after a loop
    if n > 0 {
        t[0] = 1.0
    } else if n < 0 {
        t[0] = 2.0
    } // after an else-if chain
    while n > 4 {
        n = n - 1
        // the loop's own end comment
    } // after a while
} // after the kernel
