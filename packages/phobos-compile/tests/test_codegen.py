"""The GPU code generator end to end: Phobos text -> checker -> CUDA C++ -> NVRTC PTX (no GPU).

Every generated source is compiled for compute_80 and compute_90; NVRTC must accept it
without a warning, and the PTX must use no local memory.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from phobos.compile.check import lower
from phobos.compile.codegen import (
    RUNTIME_DIR,
    GeneratedKernel,
    Specialization,
    TensorSpecialization,
    generate,
)
from phobos.compile.contract import Contract, Slot
from phobos.compile.diagnostics import PhobosError
from phobos.compile.ir import nodes as ir
from phobos.compile.span import Span
from phobos.compile.syntax import parse


def lower_text(text: str, kernel: str, **values: int) -> ir.Kernel:
    return lower(parse(text, "kernel.ph"), kernel, values)


def uniform_spec(
    kernel: ir.Kernel, align: int = 16, unit_stride: bool = True, index_width: int = 32
) -> Specialization:
    facts = TensorSpecialization(align, unit_stride)
    return Specialization.of(index_width, **{t.name: facts for t in kernel.tensors})


def generate_text(
    text: str,
    kernel: str,
    align: int = 16,
    unit_stride: bool = True,
    index_width: int = 32,
    **values: int,
) -> GeneratedKernel:
    lowered = lower_text(text, kernel, **values)
    return generate(lowered, uniform_spec(lowered, align, unit_stride, index_width), "sm_90")


@functools.cache
def compile_ptx(source: str, arch: str = "compute_90") -> str:
    """NVRTC-compile generated source (as the toolchain does) and return the PTX."""
    import nvidia
    from cuda.bindings import nvrtc

    cuda_include = os.path.join(nvidia.__path__[0], "cu13", "include")
    err, program = nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    options = [
        f"-arch={arch}".encode(),
        b"--std=c++17",
        b"-lineinfo",
        f"--include-path={RUNTIME_DIR}".encode(),
        f"--include-path={cuda_include}".encode(),
    ]
    (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
    _, size = nvrtc.nvrtcGetProgramLogSize(program)
    log = b" " * size
    nvrtc.nvrtcGetProgramLog(program, log)
    assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode() + "\n" + source
    assert not log.strip(b"\0 "), log.decode()
    _, size = nvrtc.nvrtcGetPTXSize(program)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(program, ptx)
    nvrtc.nvrtcDestroyProgram(program)
    return ptx.rstrip(b"\0 ").decode()


def compile_both(source: str) -> list[str]:
    """PTX for sm_80 and sm_90; each must be free of local memory (spills, stack arrays)."""
    out = []
    for arch in ("compute_80", "compute_90"):
        ptx = compile_ptx(source, arch)
        assert ".local" not in ptx and "__local_depot" not in ptx, f"local memory on {arch}"
        out.append(ptx)
    return out


def count(pattern: str, ptx: str) -> int:
    return len(re.findall(pattern, ptx))


def entry_ptx(ptx: str, entry: str) -> str:
    """The PTX of one kernel of a module."""
    start = ptx.index(f".entry {entry}(")
    end = ptx.find(".entry ", start + 1)
    return ptx[start : end if end >= 0 else len(ptx)]


def compile_90(source: str) -> str:
    """PTX for sm_90, free of local memory (compute_80 is covered by one batched test)."""
    ptx = compile_ptx(source, "compute_90")
    assert ".local" not in ptx and "__local_depot" not in ptx
    return ptx


SAXPY = """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
"""


def test_aligned_saxpy_moves_16_byte_vectors_with_several_in_flight():
    generated = generate_text(SAXPY, "saxpy", BLOCK=1024)
    assert generated.entry == "phobos_saxpy"
    for ptx in compile_both(generated.source):
        assert ".entry phobos_saxpy(" in ptx
        repeats = 1024 // 4 // generated.contract.block[0]
        assert repeats >= 4  # at least 4 x 16 B of each input in flight per thread
        assert count(r"ld\.global\.v4\.f32", ptx) == 2 * repeats
        assert count(r"st\.global\.v4\.f32", ptx) == repeats
        assert ".maxntid" in ptx


def test_window_start_multiple_of_the_vector_needs_no_alignment_test():
    source = generate_text(SAXPY, "saxpy", BLOCK=1024).source
    assert "load_group<16, false>" in source and "store_group<4, 16, false>" in source
    odd = SAXPY.replace("ctx.block.x * BLOCK", "ctx.block.x * BLOCK + 1")
    assert "load_group<16, true>" in generate_text(odd, "saxpy", BLOCK=1024).source


def test_line_directives_name_the_users_file():
    source = generate_text(SAXPY, "saxpy", BLOCK=256).source
    assert '#line 3 "kernel.ph"' in source
    assert '#line 4 "kernel.ph"' in source
    ptx = compile_90(source)
    assert '.file\t1 "kernel.ph"' in ptx or 'kernel.ph"' in ptx


def test_contract_fields():
    contract = generate_text(SAXPY, "saxpy", BLOCK=1024).contract
    assert contract.kernel == "saxpy" and contract.entry == "phobos_saxpy"
    assert contract.arch == "sm_90" and contract.index_width == 32
    assert contract.block[1:] == (1, 1) and contract.block[0] % 32 == 0
    assert contract.values == {"BLOCK": 1024}
    assert contract.params == ("x", "y", "out", "alpha")
    assert contract.slots == (
        Slot("pointer", "u64", "x"),
        Slot("pointer", "u64", "y"),
        Slot("pointer", "u64", "out"),
        Slot("scalar", "f32", "alpha"),
        Slot("extent", "i32", "N"),
    )
    by_name = {t.name: t for t in contract.tensors}
    assert (by_name["x"].read, by_name["x"].written) == (True, False)
    assert (by_name["out"].read, by_name["out"].written) == (False, True)
    assert by_name["y"].align == 16 and by_name["y"].unit_stride
    assert contract.written == ("out",)
    assert contract.static_smem == 0 and contract.dynamic_smem == 0
    assert contract.source_file == "kernel.ph"
    assert Contract.from_json(contract.to_json()) == contract


def test_cta_size_follows_the_tile_and_num_threads():
    small = generate_text(SAXPY, "saxpy", BLOCK=16).contract.block[0]
    assert small == 32  # never less than a warp
    assert generate_text(SAXPY, "saxpy", BLOCK=1024).contract.block[0] == 64  # 16 lanes each
    large = generate_text(SAXPY, "saxpy", BLOCK=8192).contract.block[0]
    assert large == 256  # 8 warps, then more lanes per thread
    fixed = generate_text(SAXPY, "saxpy", BLOCK=1024, NUM_THREADS=128)
    assert fixed.contract.block == (128, 1, 1)
    assert "__launch_bounds__(128)" in fixed.source
    assert fixed.contract.values == {"BLOCK": 1024, "NUM_THREADS": 128}


def test_small_tile_guards_threads_without_lanes():
    generated = generate_text(SAXPY, "saxpy", BLOCK=16)
    assert "g < 4" in generated.source  # 16 lanes in groups of 4 over 32 threads
    compile_90(generated.source)


def test_64_bit_indices():
    generated = generate_text(SAXPY, "saxpy", index_width=64, BLOCK=1024)
    assert "typedef phobos::i64 index_t;" in generated.source
    assert generated.contract.index_width == 64
    assert generated.contract.slots[-1] == Slot("extent", "i64", "N")
    ptx = compile_90(generated.source)
    assert ".param .u64 phobos_saxpy_param_4" in ptx
    assert count(r"ld\.global\.v4\.f32", ptx) > 0


ELEMENTWISE_2D = """\
kernel scale_rows(x: tensor<f32>[M, N], bias: tensor<f32>[N], out: tensor<f32>[M, N], s: f32) {
    let m = ctx.block.y * 16
    let n = ctx.block.x * 128
    let t = x[m :+ 16, n :+ 128] * s + bias[n :+ 128][newaxis, :]
    out[m :+ 16, n :+ 128] = where(t > 0.0, t, 0.0)
}
"""


def test_2d_rows_use_vectors_behind_a_run_time_alignment_test():
    generated = generate_text(ELEMENTWISE_2D, "scale_rows")
    assert "load_group<16, true>" in generated.source  # a row stride may misalign a row
    slots = [(s.kind, s.param, s.axis) for s in generated.contract.slots]
    assert ("stride", "x", 0) in slots and ("stride", "x", 1) not in slots
    assert generated.contract.static_smem > 0  # the bias row is broadcast through shared memory
    ptx = compile_90(generated.source)
    assert count(r"ld\.global\.v4\.f32", ptx) > 0
    assert "bar.sync" in ptx


def test_unaligned_specialisation_has_no_vector_access():
    generated = generate_text(SAXPY, "saxpy", align=4, BLOCK=1024)
    assert "load_group<0, false>" in generated.source
    assert [t.align for t in generated.contract.tensors] == [4, 4, 4]
    ptx = compile_90(generated.source)
    assert count(r"\.v[248]\.", ptx) == 0
    assert count(r"ld\.global\.f32", ptx) > 0


def test_8_byte_alignment_gives_8_byte_vectors():
    ptx = compile_90(generate_text(SAXPY, "saxpy", align=8, BLOCK=1024).source)
    assert count(r"ld\.global\.v2\.f32", ptx) > 0 and count(r"\.v4\.", ptx) == 0


def test_strided_specialisation_takes_a_stride_and_has_no_vector_access():
    generated = generate_text(SAXPY, "saxpy", unit_stride=False, BLOCK=256)
    slots = [(s.kind, s.param, s.axis) for s in generated.contract.slots]
    assert slots[:2] == [("pointer", "x", None), ("stride", "x", 0)]
    assert not generated.contract.tensors[0].unit_stride
    assert "load_group_strided" in generated.source
    ptx = compile_90(generated.source)
    assert count(r"\.v[248]\.", ptx) == 0


COPY = """\
kernel copy(x: tensor<{t}>[N], out: tensor<{t}>[N]) {{
    let b = ctx.block.x * 128
    out[b :+ 128] = {value}
}}
"""
DTYPES = {
    "bool": "x[b :+ 128] && x[b :+ 128]",
    "i8": "x[b :+ 128] + i8(1)",
    "i16": "x[b :+ 128] * i16(3)",
    "i32": "x[b :+ 128] / 7 + x[b :+ 128] % 5",
    "i64": "(x[b :+ 128] << 2i64) ^ 1i64",
    "u8": "x[b :+ 128] - u8(1)",
    "u16": "x[b :+ 128] | u16(8)",
    "u32": "x[b :+ 128] >> u32(1)",
    "u64": "x[b :+ 128] & u64(255)",
    "f16": "x[b :+ 128] * 2.0f16 - x[b :+ 128]",
    "bf16": "-x[b :+ 128] + 1.0bf16",
    "f32": "x[b :+ 128] / 3.0",
    "f64": "maximum(x[b :+ 128], 0.5f64)",
}


def _dtype_kernels() -> str:
    """One translation unit with a copy kernel per dtype (one NVRTC run for all)."""
    sources = []
    for dtype, value in sorted(DTYPES.items()):
        text = COPY.format(t=dtype, value=value).replace("kernel copy", f"kernel copy_{dtype}")
        sources.append(generate_text(text, f"copy_{dtype}").source)
    return "\n".join(sources)


def test_every_dtype_moves_16_byte_vectors():
    ptx = compile_ptx(_dtype_kernels())
    assert ".local" not in ptx
    sixteen_bytes = r"\.global\.(v4\.|v2\.[fbsu]64)"
    for dtype in DTYPES:
        body = entry_ptx(ptx, f"phobos_copy_{dtype}")
        assert count("ld" + sixteen_bytes, body) > 0, dtype
        assert count("st" + sixteen_bytes, body) > 0, dtype


MATH = """\
kernel math(x: tensor<f16>[N], y: tensor<bf16>[N], z: tensor<f64>[N], o: tensor<f16>[N],
            p: tensor<bf16>[N], q: tensor<f64>[N], c: tensor<i32>[N]) {
    let b = ctx.block.x * 64
    let xf = f32(x[b :+ 64])
    o[b :+ 64] = f16(exp(xf) + exp2(xf) + log(abs(xf)) + log2(xf) + sqrt(xf) + rsqrt(xf))
    p[b :+ 64] = exp(y[b :+ 64]) + sqrt(abs(y[b :+ 64])) + bf16(minimum(xf, 1.0))
    q[b :+ 64] = exp(z[b :+ 64]) + log(z[b :+ 64]) + f64(x[b :+ 64])
    c[b :+ 64] = i32(xf) + i32(y[b :+ 64]) + i32(z[b :+ 64] > 0.0)
}
"""


def test_half_precision_math_and_casts():
    source = generate_text(MATH, "math").source
    assert "phobos::exp(" in source and "phobos::cast<phobos::f16>" in source
    ptx = compile_90(source)
    assert "ex2.approx" in ptx  # expf's fast core; accuracy fixed up around it
    assert "cvt.rn.f16.f32" in ptx and "cvt.rn.bf16.f32" in ptx


SOFTMAX = """\
@autotune(BN in [64, 4096])
kernel softmax(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x
    let t = x[row :+ 1, 0 :+ BN]
    let e = exp(t - max(t, axis=1)[:, newaxis])
    out[row :+ 1, 0 :+ BN] = e / sum(e, axis=1)[:, newaxis]
}
"""


@pytest.mark.parametrize("bn", [64, 2048])
def test_row_reductions_use_warp_shuffles(bn):
    generated = generate_text(SOFTMAX, "softmax", BN=bn)
    # A row of 16 groups is reduced by shuffles alone and stays in the row's threads;
    # a longer one also combines one partial per warp through shared memory.
    assert (generated.contract.static_smem > 0) == (bn > 32 * 4)
    # max and sum: each one barrier pair at most, their rows' presence riding along
    # one barrier per reduction: the two take different slots of the partials buffer
    assert generated.source.count("__syncthreads();") == (2 if bn > 32 * 4 else 0)
    ptx = compile_90(generated.source)
    assert "shfl.sync.bfly.b32" in ptx
    assert count(r"ld\.global\.v4\.f32", ptx) > 0


CONTROL = """\
kernel rowsum(x: tensor<f32>[M, N], out: tensor<f32>[M], n: i32) {
    let row = ctx.block.x
    if row >= M {
        return
    }
    var acc = zeros<f32>[256]
    for k in 0 .. N step 256 {
        acc += fill(x[row, k :+ 256], 0.0)
    }
    var i = 0
    while i < n {
        acc = acc * 0.5
        i += 1
    }
    out[row] = sum(acc, axis=0)
    let cols = sum(trans(x[0 :+ 8, 0 :+ 4]), axis=0)
    out[0 :+ 8] = cols + f32(arange(8))
}
"""


def test_control_flow_scalar_stores_transpose_and_iota():
    generated = generate_text(CONTROL, "rowsum")
    source = generated.source
    assert "for (index_t v_k = 0;" in source
    assert "while (true)" in source and "return;" in source
    assert "if (tid == 0 &&" in source  # a scalar store is made once per block
    compile_90(source)


MATMUL = """\
@autotune(BM in [16, 128], BN in [16, 128], BK in [16, 64])
kernel matmul(a: tensor<{t}>[M, K], b: tensor<{t}>[K, N], c: tensor<f32>[M, N]) {{
    let m = ctx.block.y * BM
    let n = ctx.block.x * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {{
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }}
    c[m :+ BM, n :+ BN] = acc
}}
"""


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_dot_runs_on_the_tensor_cores_and_keeps_the_accumulator_in_registers(dtype):
    generated = generate_text(MATMUL.format(t=dtype), "matmul", BM=64, BN=64, BK=32)
    source = generated.source
    loop = source[source.index("for (index_t v_k") : source.index('#line 9 "kernel.ph"')]
    assert "v_acc[r][i] = " in loop and "staged" not in loop  # no layout change per step
    # software-pipelined: the first k-step's copies before the loop, the next one's inside
    assert source.count("copy_group_async") == 4 and loop.count("copy_group_async") == 2
    assert loop.index("copy_async_wait") < loop.index("copy_group_async") < loop.index("mma_16816")
    ptx = compile_90(source)
    warps = generated.contract.block[0] // 32
    per_thread = (64 // 16) * (64 // 8) // warps * (32 // 16)  # tiles per warp x k-steps
    assert (
        count(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{dtype}\.{dtype}\.f32", ptx)
        == per_thread
    )
    assert "cp.async.cg.shared.global" in ptx  # window loads go straight to shared memory
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx  # a fragments
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx  # two b fragments at once
    # the accumulator fragments are stored as they are: pairs of columns, 8-byte vectors
    assert "staged" not in source[source.index('#line 9 "kernel.ph"') :]
    assert count(r"st\.global\.v2\.f32", ptx) > 0


def test_dot_of_other_shapes_and_dtypes_uses_the_cuda_cores():
    text = """\
kernel small(a: tensor<f32>[M, K], b: tensor<f32>[K, N], c: tensor<f32>[M, N]) {
    c[0 :+ 8, 0 :+ 8] = dot(a[0 :+ 8, 0 :+ 12], b[0 :+ 12, 0 :+ 8], zeros<f32>[8, 8])
}
"""
    ptx = compile_90(generate_text(text, "small").source)
    assert "mma.sync" not in ptx and "fma.rn.f32" in ptx


def test_an_unsupported_operation_is_an_error_at_its_line():
    kernel = lower_text(SAXPY, "saxpy", BLOCK=256)
    define, store = kernel.body
    span = Span("kernel.ph", 4, 5, 4, 20)
    tanh = ir.Math("tanh", store.value, store.value.type, span)
    broken = replace(kernel, body=(define, replace(store, value=tanh)))
    with pytest.raises(PhobosError) as caught:
        generate(broken, uniform_spec(broken), "sm_90")
    assert "not supported by the GPU code generator yet" in caught.value.message
    assert caught.value.span == span


def test_every_kernel_compiles_for_sm_80_too():
    sources = [
        generate_text(SAXPY, "saxpy", BLOCK=1024).source,
        generate_text(ELEMENTWISE_2D, "scale_rows").source,
        generate_text(MATH, "math").source,
        generate_text(SOFTMAX, "softmax", BN=1024).source,
        generate_text(CONTROL, "rowsum").source,
        generate_text(MATMUL.format(t="bf16"), "matmul", BM=32, BN=32, BK=16).source,
        _dtype_kernels(),
    ]
    ptx = compile_ptx("\n".join(sources), "compute_80")
    assert ".target sm_80" in ptx and ".local" not in ptx
    assert count(r"\.entry ", ptx) == 6 + len(DTYPES)
    assert "mma.sync.aligned.m16n8k16" in ptx


def test_a_tensor_read_and_written_orders_the_blocks_accesses():
    text = """\
kernel shift(x: tensor<f32>[N], y: tensor<f32>[N]) {
    x[1 :+ 255] = x[0 :+ 255] * 2.0 + y[0 :+ 255]
}
"""
    source = generate_text(text, "shift").source
    body = source[source.index("#line 2") :]
    # one barrier before the load of x and one before its store; none for y
    assert body.count("__syncthreads();") == 2
    assert "__syncthreads" not in generate_text(SAXPY, "saxpy", BLOCK=256).source


def test_staging_beyond_48_kib_uses_dynamic_shared_memory():
    text = """\
kernel flip(x: tensor<f32>[N, N], y: tensor<f32>[N, N]) {
    y[0 :+ 128, 0 :+ 128] = trans(x[0 :+ 128, 0 :+ 128])
}
"""
    generated = generate_text(text, "flip")
    assert generated.contract.dynamic_smem >= 128 * 128 * 4
    assert generated.contract.static_smem == 0
    assert "extern __shared__" in generated.source
    compile_90(generated.source)


ATOMICS = """\
kernel accumulate(x: tensor<f32>[N], total: tensor<f32>[64], big: tensor<f32>[1],
                  lock: tensor<i32>[1], h: tensor<bf16>[2], wide: tensor<i64>[2]) {
    let b = ctx.block.x * 64
    atomic_add(total[0 :+ 64], fill(x[b :+ 64], 0.0))
    atomic_max(big[0], max(x[b :+ 64], axis=0))
    atomic_add(h[0 :+ 2], bf16(x[b :+ 2]))
    atomic_add(wide[0], 1i64)
    var old = atomic_cas(lock[0], 0, 1)
    while old != 0 {
        old = atomic_cas(lock[0], 0, 1)
    }
    let prev = atomic_xchg(lock[0], 0)
}
"""


def test_atomics_use_the_hardware_or_a_compare_and_swap_loop():
    generated = generate_text(ATOMICS, "accumulate")
    tensors = {t.name: t for t in generated.contract.tensors}
    assert tensors["total"].written and tensors["total"].read and not tensors["x"].written
    for arch in ("compute_80", "compute_90"):
        ptx = compile_ptx(generated.source, arch)
        assert "atom.global.add.f32" in ptx
        assert "atom.global.cas.b32" in ptx  # the lock, and f32 max as a CAS loop
        # bf16 adds: native on sm_90, a 16-bit compare-and-swap loop on sm_80
        assert "add.noftz.bf16" in ptx if arch == "compute_90" else "atom.global.cas.b16" in ptx
        assert "atom.global.add.u64" in ptx
        assert "atom.global.exch.b32" in ptx


def test_atomics_on_bytes_are_refused_at_their_line():
    # The checker refuses these too; the code generator does not rely on it.
    kernel = lower_text("kernel k(c: tensor<i32>[4]) {\n    atomic_add(c[0], 1)\n}\n", "k")
    (atomic,) = kernel.body
    tensor = replace(atomic.tensor, dtype="u8")
    value = ir.Const(1, ir.ScalarT("u8"))
    broken = replace(kernel, params=(tensor,), body=(replace(atomic, tensor=tensor, value=value),))
    with pytest.raises(PhobosError) as caught:
        generate(broken, uniform_spec(broken), "sm_90")
    assert caught.value.span.line == 2
    assert "not supported by the GPU code generator yet" in caught.value.message


ONLINE = """\
kernel online(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    var row_max = zeros<f32>[2] - 1000.0
    var row_sum = zeros<f32>[2]
    for start in 0 .. N step 2048 {
        let chunk = fill(x[ctx.block.x * 2 :+ 2, start :+ 2048], -1000.0)
        let new_max = maximum(row_max, max(chunk, axis=1))
        row_sum = row_sum * exp(row_max - new_max) + sum(exp(chunk - new_max[:, newaxis]), axis=1)
        row_max = new_max
    }
    out[ctx.block.x * 2 :+ 2] = row_sum
}
"""


def test_running_row_reductions_stay_with_the_rows_threads():
    source = generate_text(ONLINE, "online").source
    loop = source[source.index("for (index_t v_start") : source.index('#line 10 "kernel.ph"')]
    # only the two reductions' barriers: the running max and sum never change layout, and
    # the sum's barrier frees the max's slot for the next iteration
    assert loop.count("__syncthreads();") == 2
    compile_90(source)


ONE_REDUCTION_LOOP = """\
kernel oneloop(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    let first = ctx.block.x * 2
    var total = zeros<f32>[2]
    for start in 0 .. N step 1024 {
        total = total + sum(fill(x[first :+ 2, start :+ 1024], 0.0), axis=1)
    }
    out[first :+ 2] = total / max(fill(x[first :+ 2, 0 :+ 1024], 1.0), axis=1)
}
"""


def test_partials_slots_across_a_loop():
    """One staging per iteration reuses its slot: a barrier at the top keeps the previous
    iteration's readers ahead of the next write; the reduction after the loop takes the
    other slot, which no iteration touched, with no barrier of its own."""
    source = generate_text(ONE_REDUCTION_LOOP, "oneloop").source
    loop = source[source.index("for (index_t v_start") : source.index('#line 7 "kernel.ph"')]
    assert loop.count("__syncthreads();") == 2
    assert "phobos_partials + 0 *" in loop
    after = source[source.index('#line 7 "kernel.ph"') :]
    assert "__syncthreads();" not in after[: after.index("phobos_partials + 1 *")]
    compile_90(source)


ATTENTION = Path(__file__).parents[3] / "examples" / "attention.ph"


def test_attention_forward_runs_both_dots_on_mma_without_contended_bit_sets():
    """``q`` and ``trans(k[...])`` (window loads) go to shared memory with cp.async, ``k``
    as it lies; ``f16(p)`` is staged from registers for mma.sync, and the k bit sets
    behind a result lane's presence (contended shared atomics) are built only when a
    block-wide vote finds an absent lane: the usual block skips them."""
    generated = generate_text(
        ATTENTION.read_text(),
        "attention_forward",
        D=64,
        BLOCK_M=64,
        BLOCK_N=64,
        NUM_THREADS=256,
        CAUSAL=0,
    )
    source = generated.source
    assert "for (int k = 0;" not in source  # no scalar fallback product
    # trans(k[...]) is copied as it lies, with no layout conversion first
    assert re.search(r"copy_group_async<8, true>\(dot_b\d+ \+ c0 \* 72 \+ c1, p_k", source)
    assert source.index("dot_b") < source.index("staged")
    # acc * rescale[:, newaxis] stays in the fragments: only the rescale rows are staged
    loop = source[source.index("for (index_t v_kv") : source.index("#line 33 ")]
    assert not re.search(r"staged\d+\[[^\]]*\] = v_acc", loop)
    assert re.search(r"staged\d+\[g / \d+\] = v_rescale\[r\]\[i\];", loop)
    # scores leave the fragments once for max and exp2 (and once in the causal branch)
    assert len(re.findall(r"staged\d+\[[^\]]*\] = v_scores\[r\]\[i\];", loop)) == 2
    votes = re.findall(r"const bool (dot_a\d+_full) = __syncthreads_and\(", source)
    assert len(votes) == 1  # one block-wide vote, for the dot staged from registers
    unusual = source.index(f"if (!{votes[0]}) {{")
    unusual = source[unusual : source.index("store_vectors", unusual)]
    assert source.count("phobos::set_bit(") == unusual.count("phobos::set_bit(") > 0
    ptx = compile_90(source)
    warps = generated.contract.block[0] // 32
    tiles = (64 // 16) * (64 // 8) // warps
    k_steps = 64 // 16
    mma = r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32"
    assert count(mma, ptx) == 2 * tiles * k_steps
    assert count(r"bar\.red\.and", ptx) == 1
