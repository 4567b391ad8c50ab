kernel attention_forward(q: tensor<f16>[B, H, S, D], k: tensor<f16>[B, H, S, D], v: tensor<f16>[B, H, S, D], out: tensor<f16>[B, H, S, D], scale: f32) {
    out[0, 0, 0, 0 :+ D] = q[0, 0, 0, 0 :+ D] * scale
}

kernel row_mean(x: tensor<f32>[M, N], out: tensor<f32>[M], eps: f32, count: i32, n: i32) {
    out[0] = x[0, 0] + eps
}

kernel written_on_lines(x: tensor<f32>[N],
                        y: tensor<f32>[N]) {
    y[0] = x[0]
}
