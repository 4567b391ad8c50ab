// Tutorial 07: RMS norm, y = x * rstd * w with rstd = 1 / sqrt(mean(x * x) + eps), forward and
// backward, for f16 and bf16 rows (a kernel per element type; the fns hold the arithmetic).
// The backward's row kernels give each block chunks of CHUNK rows, a grid's worth apart.
const CHUNK = 16

// rstd of each row from the sum of its squares.
fn inverse_rms(squares: f32, n: f32, eps: f32) -> f32 {
    return rsqrt(squares / n + eps)
}

// dx from xhat = x * rstd, wdy = w * dy, the row's c = mean(xhat * wdy) and rstd.
fn row_gradient(xhat: f32, wdy: f32, c: f32, inv: f32) -> f32 {
    return (wdy - xhat * c) * inv
}

// dx of ROWS whole rows, each held in one tile: c from the row's own sum.
fn input_gradient(xhat: f32, wdy: f32, inv: f32, n: f32) -> f32 {
    return row_gradient(xhat, wdy, sum(xhat * wdy, axis=1)[:, newaxis] / n, inv)
}

// Forward: ROWS rows a block. A row that fits one BLOCK_N tile is read once and held in
// registers; a wider row is read twice, BLOCK_N columns at a time (its squares, then y).
@autotune(ROWS in {1, 2, 4, 8}, BLOCK_N in {16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288})
kernel rms_norm_forward_f16(x: tensor<f16>[M, N], w: tensor<f16>[N], y: tensor<f16>[M, N], rstd: tensor<f32>[M], eps: f32) {
    let first = ctx.block.x * ROWS
    if N <= BLOCK_N {
        let values = f32(x[first :+ ROWS, 0 :+ BLOCK_N])
        let inv = inverse_rms(sum(values * values, axis=1), f32(N), eps)
        rstd[first :+ ROWS] = inv
        y[first :+ ROWS, 0 :+ BLOCK_N] = f16(values * inv[:, newaxis] * f32(w[0 :+ BLOCK_N]))
    } else {
        var squares = zeros<f32>[ROWS]
        for start in 0 .. N step BLOCK_N {
            let chunk = f32(x[first :+ ROWS, start :+ BLOCK_N])
            squares += fill(sum(chunk * chunk, axis=1), 0.0)
        }
        let inv = inverse_rms(squares, f32(N), eps)
        rstd[first :+ ROWS] = inv
        for start in 0 .. N step BLOCK_N {
            let chunk = f32(x[first :+ ROWS, start :+ BLOCK_N])
            y[first :+ ROWS, start :+ BLOCK_N] = f16(chunk * inv[:, newaxis] * f32(w[start :+ BLOCK_N]))
        }
    }
}

// The forward for bf16 rows: the same program with bf16 tensors.
@autotune(ROWS in {1, 2, 4, 8}, BLOCK_N in {16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288})
kernel rms_norm_forward_bf16(x: tensor<bf16>[M, N], w: tensor<bf16>[N], y: tensor<bf16>[M, N], rstd: tensor<f32>[M], eps: f32) {
    let first = ctx.block.x * ROWS
    if N <= BLOCK_N {
        let values = f32(x[first :+ ROWS, 0 :+ BLOCK_N])
        let inv = inverse_rms(sum(values * values, axis=1), f32(N), eps)
        rstd[first :+ ROWS] = inv
        y[first :+ ROWS, 0 :+ BLOCK_N] = bf16(values * inv[:, newaxis] * f32(w[0 :+ BLOCK_N]))
    } else {
        var squares = zeros<f32>[ROWS]
        for start in 0 .. N step BLOCK_N {
            let chunk = f32(x[first :+ ROWS, start :+ BLOCK_N])
            squares += fill(sum(chunk * chunk, axis=1), 0.0)
        }
        let inv = inverse_rms(squares, f32(N), eps)
        rstd[first :+ ROWS] = inv
        for start in 0 .. N step BLOCK_N {
            let chunk = f32(x[first :+ ROWS, start :+ BLOCK_N])
            y[first :+ ROWS, start :+ BLOCK_N] = bf16(chunk * inv[:, newaxis] * f32(w[start :+ BLOCK_N]))
        }
    }
}

// Backward, first kernel: block g takes the chunks of CHUNK rows from g * CHUNK, a grid's worth
// apart, ROWS rows at a time (so which rows it adds up does not depend on ROWS), each row in one
// BLOCK_N tile. It writes their dx and adds their dy * xhat into a [ROWS, BLOCK_N] f32 tile,
// whose column sums become row g of dw_partial. Right only where the tile holds the row
// (N <= BLOCK_N): the kernel requires it (one_tile_requirement), and rows wider
// than every tile take the wide backward below (rms_norm_backward_c_*, then _chunked_*).
@autotune(ROWS in {1, 2, 4, 8}, BLOCK_N in {16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288})
kernel rms_norm_backward_f16(dy: tensor<f16>[M, N], x: tensor<f16>[M, N], w: tensor<f16>[N], rstd: tensor<f32>[M], dx: tensor<f16>[M, N], dw_partial: tensor<f32>[GROUPS, N]) {
    let group = ctx.block.x
    var dw_sum = zeros<f32>[ROWS, BLOCK_N]
    for chunk in group * CHUNK .. M step ctx.grid.x * CHUNK {
        for i in 0 .. CHUNK step ROWS {
            let first = chunk + i
            let inv = rstd[first :+ ROWS][:, newaxis]
            let xhat = f32(x[first :+ ROWS, 0 :+ BLOCK_N]) * inv
            let grad = f32(dy[first :+ ROWS, 0 :+ BLOCK_N])
            let wdy = grad * f32(w[0 :+ BLOCK_N])
            dw_sum += fill(grad * xhat, 0.0)
            dx[first :+ ROWS, 0 :+ BLOCK_N] = f16(input_gradient(xhat, wdy, inv, f32(N)))
        }
    }
    dw_partial[group, 0 :+ BLOCK_N] = sum(dw_sum, axis=0)
}

// The backward's first kernel for bf16 rows.
@autotune(ROWS in {1, 2, 4, 8}, BLOCK_N in {16384, 128, 256, 512, 768, 1024, 2048, 3072, 4096, 8192, 12288})
kernel rms_norm_backward_bf16(dy: tensor<bf16>[M, N], x: tensor<bf16>[M, N], w: tensor<bf16>[N], rstd: tensor<f32>[M], dx: tensor<bf16>[M, N], dw_partial: tensor<f32>[GROUPS, N]) {
    let group = ctx.block.x
    var dw_sum = zeros<f32>[ROWS, BLOCK_N]
    for chunk in group * CHUNK .. M step ctx.grid.x * CHUNK {
        for i in 0 .. CHUNK step ROWS {
            let first = chunk + i
            let inv = rstd[first :+ ROWS][:, newaxis]
            let xhat = f32(x[first :+ ROWS, 0 :+ BLOCK_N]) * inv
            let grad = f32(dy[first :+ ROWS, 0 :+ BLOCK_N])
            let wdy = grad * f32(w[0 :+ BLOCK_N])
            dw_sum += fill(grad * xhat, 0.0)
            dx[first :+ ROWS, 0 :+ BLOCK_N] = bf16(input_gradient(xhat, wdy, inv, f32(N)))
        }
    }
    dw_partial[group, 0 :+ BLOCK_N] = sum(dw_sum, axis=0)
}

// Backward for rows wider than one tile, first kernel: each row's c = mean(xhat * wdy), ROWS
// rows a block, BLOCK_N columns at a time (sum(xhat * wdy) is rstd times sum(x * wdy)).
@autotune(ROWS in {2, 1, 4}, BLOCK_N in {1024, 256, 512, 2048, 4096})
kernel rms_norm_backward_c_f16(dy: tensor<f16>[M, N], x: tensor<f16>[M, N], w: tensor<f16>[N], rstd: tensor<f32>[M], c: tensor<f32>[M]) {
    let first = ctx.block.x * ROWS
    var dots = zeros<f32>[ROWS, BLOCK_N]
    for start in 0 .. N step BLOCK_N {
        let wdy = f32(dy[first :+ ROWS, start :+ BLOCK_N]) * f32(w[start :+ BLOCK_N])
        dots += fill(f32(x[first :+ ROWS, start :+ BLOCK_N]) * wdy, 0.0)
    }
    c[first :+ ROWS] = sum(dots, axis=1) * rstd[first :+ ROWS] / f32(N)
}

// The wide backward's second kernel: dx, and dw's partial sums, in bands of BLOCK_N columns.
// Block (g, b) takes bands b, b + ctx.grid.y, ...; for each it takes the rows block g of the
// one-tile kernel takes, ROWS at a time, and adds their dy * xhat into a [ROWS, BLOCK_N] f32
// tile, whose column sums become that band of row g of dw_partial: a block holds one band's
// partial sums at a time, however wide the row.
@autotune(ROWS in {1, 2, 4}, BLOCK_N in {1024, 256, 512, 2048, 4096})
kernel rms_norm_backward_chunked_f16(dy: tensor<f16>[M, N], x: tensor<f16>[M, N], w: tensor<f16>[N], rstd: tensor<f32>[M], c: tensor<f32>[M], dx: tensor<f16>[M, N], dw_partial: tensor<f32>[GROUPS, N]) {
    let group = ctx.block.x
    for start in ctx.block.y * BLOCK_N .. N step ctx.grid.y * BLOCK_N {
        let weight = f32(w[start :+ BLOCK_N])
        var dw_sum = zeros<f32>[ROWS, BLOCK_N]
        for chunk in group * CHUNK .. M step ctx.grid.x * CHUNK {
            for i in 0 .. CHUNK step ROWS {
                let first = chunk + i
                let inv = rstd[first :+ ROWS][:, newaxis]
                let xhat = f32(x[first :+ ROWS, start :+ BLOCK_N]) * inv
                let grad = f32(dy[first :+ ROWS, start :+ BLOCK_N])
                dw_sum += fill(grad * xhat, 0.0)
                let wdy = grad * weight
                dx[first :+ ROWS, start :+ BLOCK_N] = f16(row_gradient(xhat, wdy, c[first :+ ROWS][:, newaxis], inv))
            }
        }
        dw_partial[group, start :+ BLOCK_N] = sum(dw_sum, axis=0)
    }
}

// The wide backward's first kernel for bf16 rows.
@autotune(ROWS in {2, 1, 4}, BLOCK_N in {1024, 256, 512, 2048, 4096})
kernel rms_norm_backward_c_bf16(dy: tensor<bf16>[M, N], x: tensor<bf16>[M, N], w: tensor<bf16>[N], rstd: tensor<f32>[M], c: tensor<f32>[M]) {
    let first = ctx.block.x * ROWS
    var dots = zeros<f32>[ROWS, BLOCK_N]
    for start in 0 .. N step BLOCK_N {
        let wdy = f32(dy[first :+ ROWS, start :+ BLOCK_N]) * f32(w[start :+ BLOCK_N])
        dots += fill(f32(x[first :+ ROWS, start :+ BLOCK_N]) * wdy, 0.0)
    }
    c[first :+ ROWS] = sum(dots, axis=1) * rstd[first :+ ROWS] / f32(N)
}

// The wide backward's second kernel for bf16 rows.
@autotune(ROWS in {1, 2, 4}, BLOCK_N in {1024, 256, 512, 2048, 4096})
kernel rms_norm_backward_chunked_bf16(dy: tensor<bf16>[M, N], x: tensor<bf16>[M, N], w: tensor<bf16>[N], rstd: tensor<f32>[M], c: tensor<f32>[M], dx: tensor<bf16>[M, N], dw_partial: tensor<f32>[GROUPS, N]) {
    let group = ctx.block.x
    for start in ctx.block.y * BLOCK_N .. N step ctx.grid.y * BLOCK_N {
        let weight = f32(w[start :+ BLOCK_N])
        var dw_sum = zeros<f32>[ROWS, BLOCK_N]
        for chunk in group * CHUNK .. M step ctx.grid.x * CHUNK {
            for i in 0 .. CHUNK step ROWS {
                let first = chunk + i
                let inv = rstd[first :+ ROWS][:, newaxis]
                let xhat = f32(x[first :+ ROWS, start :+ BLOCK_N]) * inv
                let grad = f32(dy[first :+ ROWS, start :+ BLOCK_N])
                dw_sum += fill(grad * xhat, 0.0)
                let wdy = grad * weight
                dx[first :+ ROWS, start :+ BLOCK_N] = bf16(row_gradient(xhat, wdy, c[first :+ ROWS][:, newaxis], inv))
            }
        }
        dw_partial[group, start :+ BLOCK_N] = sum(dw_sum, axis=0)
    }
}

// Backward, last kernel (after either path): each block sums BLOCK_N columns of dw_partial
// over all GROUPS rows, BLOCK_G rows at a time, in f32, and rounds the sum once to w's type.
@autotune(BLOCK_G in {32, 16, 64}, BLOCK_N in {64, 32, 128, 256})
kernel rms_norm_backward_dw_f16(dw_partial: tensor<f32>[GROUPS, N], dw: tensor<f16>[N]) {
    let start = ctx.block.x * BLOCK_N
    var dw_sum = zeros<f32>[BLOCK_G, BLOCK_N]
    for first in 0 .. GROUPS step BLOCK_G {
        dw_sum += fill(dw_partial[first :+ BLOCK_G, start :+ BLOCK_N], 0.0)
    }
    dw[start :+ BLOCK_N] = f16(sum(dw_sum, axis=0))
}

// The backward's last kernel for bf16 weights.
@autotune(BLOCK_G in {32, 16, 64}, BLOCK_N in {64, 32, 128, 256})
kernel rms_norm_backward_dw_bf16(dw_partial: tensor<f32>[GROUPS, N], dw: tensor<bf16>[N]) {
    let start = ctx.block.x * BLOCK_N
    var dw_sum = zeros<f32>[BLOCK_G, BLOCK_N]
    for first in 0 .. GROUPS step BLOCK_G {
        dw_sum += fill(dw_partial[first :+ BLOCK_G, start :+ BLOCK_N], 0.0)
    }
    dw[start :+ BLOCK_N] = bf16(sum(dw_sum, axis=0))
}
