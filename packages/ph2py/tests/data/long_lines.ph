// Statements too long for one line, wrapped as ruff format wraps them (line length 100).
const A_RATHER_LONG_CONSTANT_NAME_FOR_THE_SIZE_OF_THE_WORKSPACE = 1024 * 1024 * 16 + 4096 * 8 - 12345678

@autotune(BLOCK_SIZE_M in {64, 128, 256}, BLOCK_SIZE_N in [16, 16384], GROUP in {1, 2, 4, 8}, NUM_THREADS in {128, 256}) // tuned
kernel long_lines(input_tensor: tensor<f16>[BATCH, HEADS, SEQUENCE, HEAD_DIM], output_tensor: tensor<f16>[BATCH, HEADS, SEQUENCE, HEAD_DIM], scale: f32) { // header
    let first_row_of_the_block = ctx.block.x * BLOCK_SIZE_M + ctx.block.y * BLOCK_SIZE_N * GROUP * NUM_THREADS
    let rows = input_tensor[0, 0, first_row_of_the_block :+ BLOCK_SIZE_M, 0 :+ HEAD_DIM] * scale * scale // scaled
    var accumulator = zeros<f32>[BLOCK_SIZE_M, BLOCK_SIZE_N] + dot(f16(rows), trans(rows), zeros<f32>[BLOCK_SIZE_M, BLOCK_SIZE_M])
    if first_row_of_the_block + BLOCK_SIZE_M > SEQUENCE && first_row_of_the_block < SEQUENCE * 2 - BLOCK_SIZE_M { // tail
        accumulator = where(accumulator > 0.0, accumulator * scale, accumulator / scale - 1.0) // the masked lanes
    } else if first_row_of_the_block + BLOCK_SIZE_M > SEQUENCE * HEADS && !(first_row_of_the_block < SEQUENCE) {
        accumulator += sum(accumulator, axis=1)[:, newaxis] * max(accumulator, axis=1)[:, newaxis] * scale
    }
    for k in first_row_of_the_block .. first_row_of_the_block + BLOCK_SIZE_M * HEADS * SEQUENCE step BLOCK_SIZE_N {
        output_tensor[0, 0, k :+ BLOCK_SIZE_M, 0 :+ HEAD_DIM] = f16(accumulator[0 :+ BLOCK_SIZE_M, 0 :+ HEAD_DIM] * scale)
    }
    assert(first_row_of_the_block < SEQUENCE * HEADS * BATCH, "the block starts past the end of the sequence")
}

@autotune(BLOCK_SIZE_M in {64, 128, 256}, BLOCK_SIZE_N in [16, 16384], GROUP in {1, 2, 4, 8}, NUM_THREADS in {128})
kernel commented_parameters(
    input_tensor: tensor<f16>[BATCH, HEADS, SEQUENCE, HEAD_DIM], // read
    // written
    output_tensor: tensor<f16>[BATCH, HEADS, SEQUENCE, HEAD_DIM],
) {
    output_tensor[0, 0, 0 :+ BLOCK_SIZE_M, 0 :+ HEAD_DIM] = input_tensor[0, 0, 0 :+ BLOCK_SIZE_M, 0 :+ HEAD_DIM]
}

fn helper_function_with_a_long_name(first_argument_value: f32, second_argument_value: f32) -> f32 {
    return first_argument_value * second_argument_value + first_argument_value / second_argument_value
}
