// The module's opening comment leads the first constant.

// A second paragraph, after a blank line.
const SCALE = 2 // on a const
const EPS = 1e-5 //on a const, no space after the marker

// Leads the function.
fn clamp(x: f32, lo: f32, hi: f32) -> f32 { // after the opening brace
    return minimum(maximum(x, lo), hi) // after a return
}

@autotune(BLOCK in [64, 1024]) // on the autotune line
kernel scale(
    // before the first parameter
    x: tensor<f32>[N], // after a parameter
    // between parameters
    out: tensor<f32>[N],
    // after the last parameter
) {
    let base = ctx.block.x * BLOCK // after a token
    let tile = x[base :+ BLOCK] * SCALE

    // after a blank line
    if base > N { // on the if line
        return
        // ends the then block, before else
    } else { // on the else line
        out[base :+ BLOCK] = clamp(tile, 0.0, 1.0)
    }
    for k in 0 .. 4 {
        // only comments in this loop
    }
    let total = (tile
        // inside a multi-line expression
        + EPS) // after the closing parenthesis
    out[base :+ BLOCK] = total
    // at the end of the kernel
}
//
//   the end of the file, indented inside the comment
