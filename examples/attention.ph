// log2(e): exp(x) is exp2(x * LOG2E).
const LOG2E = 1.4426950408889634

// Tutorial 06, forward: BLOCK_M queries of one head per block, keys in BLOCK_N blocks with
// the online softmax (exp2, scale sm_scale * log2(e)); stores o and each row's logsumexp.
@autotune(D in {64, 128, 16, 32}, BLOCK_M in {64, 128}, BLOCK_N in {64, 32}, NUM_THREADS in {256, 128}, CAUSAL in {0, 1})
kernel attention_forward(q: tensor<f16>[BH, S, D], k: tensor<f16>[BH, S, D], v: tensor<f16>[BH, S, D], o: tensor<f16>[BH, S, D], lse: tensor<f32>[BH, S], sm_scale: f32) {
    let start = ctx.block.x * BLOCK_M
    let head = ctx.block.y
    let scale = sm_scale * LOG2E
    let queries = q[head, start :+ BLOCK_M, 0 :+ D]
    let rows = start + arange(BLOCK_M)
    var row_max = zeros<f32>[BLOCK_M] - inf
    var row_sum = zeros<f32>[BLOCK_M]
    var acc = zeros<f32>[BLOCK_M, D]
    var end = S
    if CAUSAL == 1 {
        end = minimum(S, start + BLOCK_M)
    }
    for kv in 0 .. end step BLOCK_N {
        var scores = dot(queries, trans(k[head, kv :+ BLOCK_N, 0 :+ D])) * scale
        if CAUSAL == 1 {
            let cols = kv + arange(BLOCK_N)
            scores = where(rows[:, newaxis] >= cols[newaxis, :], scores, -inf)
        }
        let new_max = maximum(row_max, max(scores, axis=1))
        let rescale = exp2(row_max - new_max)
        let p = exp2(scores - new_max[:, newaxis])
        row_sum = row_sum * rescale + sum(p, axis=1)
        acc = dot(f16(p), v[head, kv :+ BLOCK_N, 0 :+ D], acc * rescale[:, newaxis])
        row_max = new_max
    }
    o[head, start :+ BLOCK_M, 0 :+ D] = f16(acc / row_sum[:, newaxis])
    lse[head, start :+ BLOCK_M] = (row_max + log2(row_sum)) / LOG2E
}

// Backward, first kernel: delta = rowsum(o * do) in fp32, BLOCK_M rows per block.
@autotune(D in {64, 128, 16, 32}, BLOCK_M in {64, 32, 128})
kernel attention_backward_preprocess(o: tensor<f16>[BH, S, D], do: tensor<f16>[BH, S, D], delta: tensor<f32>[BH, S]) {
    let start = ctx.block.x * BLOCK_M
    let head = ctx.block.y
    let out = f32(o[head, start :+ BLOCK_M, 0 :+ D])
    let grad = f32(do[head, start :+ BLOCK_M, 0 :+ D])
    delta[head, start :+ BLOCK_M] = sum(out * grad, axis=1)
}

// Backward, second kernel: a block owns BLOCK_N keys of one head and loops over the query
// blocks that see them, accumulating dk and dv in fp32.
@autotune(D in {64, 128, 16, 32}, BLOCK_M in {32, 64}, BLOCK_N in {64}, NUM_THREADS in {256, 128}, CAUSAL in {0, 1})
kernel attention_backward_dkdv(q: tensor<f16>[BH, S, D], k: tensor<f16>[BH, S, D], v: tensor<f16>[BH, S, D], do: tensor<f16>[BH, S, D], lse: tensor<f32>[BH, S], delta: tensor<f32>[BH, S], dk: tensor<f16>[BH, S, D], dv: tensor<f16>[BH, S, D], sm_scale: f32) {
    let start = ctx.block.x * BLOCK_N
    let head = ctx.block.y
    let scale = sm_scale * LOG2E
    let keys = k[head, start :+ BLOCK_N, 0 :+ D]
    let values = v[head, start :+ BLOCK_N, 0 :+ D]
    let key_index = start + arange(BLOCK_N)
    var dk_acc = zeros<f32>[BLOCK_N, D]
    var dv_acc = zeros<f32>[BLOCK_N, D]
    var first = 0index
    if CAUSAL == 1 {
        first = start / BLOCK_M * BLOCK_M
    }
    for qs in first .. S step BLOCK_M {
        let queries = q[head, qs :+ BLOCK_M, 0 :+ D]
        let grad = do[head, qs :+ BLOCK_M, 0 :+ D]
        // Transposed: row j is key start + j, column i is query qs + i.
        let scores_t = dot(keys, trans(queries)) * scale
        var p_t = exp2(scores_t - lse[head, qs :+ BLOCK_M][newaxis, :] * LOG2E)
        if CAUSAL == 1 {
            let query_index = qs + arange(BLOCK_M)
            p_t = where(query_index[newaxis, :] >= key_index[:, newaxis], p_t, 0.0)
        }
        dv_acc = dot(f16(p_t), grad, dv_acc)
        let dp_t = dot(values, trans(grad))
        let ds_t = p_t * (dp_t - delta[head, qs :+ BLOCK_M][newaxis, :])
        dk_acc = dot(f16(ds_t), queries, dk_acc)
    }
    dk[head, start :+ BLOCK_N, 0 :+ D] = f16(dk_acc * sm_scale)
    dv[head, start :+ BLOCK_N, 0 :+ D] = f16(dv_acc)
}

// Backward, third kernel: a block owns BLOCK_M queries of one head and loops over the key
// blocks they see, accumulating dq in fp32.
@autotune(D in {64, 128, 16, 32}, BLOCK_M in {64}, BLOCK_N in {32, 64}, NUM_THREADS in {256, 128}, CAUSAL in {0, 1})
kernel attention_backward_dq(q: tensor<f16>[BH, S, D], k: tensor<f16>[BH, S, D], v: tensor<f16>[BH, S, D], do: tensor<f16>[BH, S, D], lse: tensor<f32>[BH, S], delta: tensor<f32>[BH, S], dq: tensor<f16>[BH, S, D], sm_scale: f32) {
    let start = ctx.block.x * BLOCK_M
    let head = ctx.block.y
    let scale = sm_scale * LOG2E
    let queries = q[head, start :+ BLOCK_M, 0 :+ D]
    let grad = do[head, start :+ BLOCK_M, 0 :+ D]
    let row_lse = lse[head, start :+ BLOCK_M] * LOG2E
    let row_delta = delta[head, start :+ BLOCK_M]
    let query_index = start + arange(BLOCK_M)
    var dq_acc = zeros<f32>[BLOCK_M, D]
    var end = S
    if CAUSAL == 1 {
        end = minimum(S, start + BLOCK_M)
    }
    for kv in 0 .. end step BLOCK_N {
        let keys = k[head, kv :+ BLOCK_N, 0 :+ D]
        var p = exp2(dot(queries, trans(keys)) * scale - row_lse[:, newaxis])
        if CAUSAL == 1 {
            let key_index = kv + arange(BLOCK_N)
            p = where(query_index[:, newaxis] >= key_index[newaxis, :], p, 0.0)
        }
        let dp = dot(grad, trans(v[head, kv :+ BLOCK_N, 0 :+ D]))
        let ds = p * (dp - row_delta[:, newaxis])
        dq_acc = dot(f16(ds), keys, dq_acc)
    }
    dq[head, start :+ BLOCK_M, 0 :+ D] = f16(dq_acc * sm_scale)
}
