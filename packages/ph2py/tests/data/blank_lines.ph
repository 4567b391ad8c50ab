const A = 1
const B = 2

const C = 3


// after two blank lines
const D = 4
kernel spaced(t: tensor<f32>[N]) {

    let a = 1.0



    let b = 2.0
    // a comment

    // a second paragraph
    t[0] = a + b

    // after a blank line at the end of the block
}
const E = 5
