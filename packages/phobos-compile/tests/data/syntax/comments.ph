// A file whose comments sit in every place the tree keeps them.
// Two lines of them, even.
// Before a constant.
const C = 4 // after a constant

// Before a function.
fn f(
    // before a parameter
    a: f32, // after a parameter
    b: f32,
) -> f32 {
    // before a statement
    let x = a + b // after a statement
    //
    //   indented text inside a comment
    return x
    // at the end of a block
    // after a function
}

// Before the autotune line.
@autotune(B in [16, 1024])
kernel k(t: tensor<f32>[N]) {
    for i in 0 .. N step B {
        // inside a loop
        t[i :+ B] = t[i :+ B] * 2.0
        // after a loop
    }
    if C > 2 {
        // a comment that keeps an else-if as a nested block
        if C > 3 {
        }
    } else {
        // leading the nested if
        if C > 1 {
        }
        // after the if
    }
    while false {
        // only comments here
    }
}

// The file's last words.
