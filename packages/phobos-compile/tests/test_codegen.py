"""The GPU code generator end to end: Phobos text -> checker -> CUDA C++ -> NVRTC PTX (no GPU).

Every generated source is compiled for compute_80 and compute_90; NVRTC must accept it
without a warning, and the PTX must use no local memory.
"""

from __future__ import annotations

import functools
import os
import re

from phobos.compile.check import lower
from phobos.compile.codegen import (
    RUNTIME_DIR,
    GeneratedKernel,
    Specialization,
    TensorSpecialization,
    generate,
)
from phobos.compile.contract import Contract, Slot
from phobos.compile.ir import nodes as ir
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
    assert "load_group<16, false>" in source and "store_group<16, false>" in source
    odd = SAXPY.replace("ctx.block.x * BLOCK", "ctx.block.x * BLOCK + 1")
    assert "load_group<16, true>" in generate_text(odd, "saxpy", BLOCK=1024).source


def test_line_directives_name_the_users_file():
    source = generate_text(SAXPY, "saxpy", BLOCK=256).source
    assert '#line 3 "kernel.ph"' in source
    assert '#line 4 "kernel.ph"' in source
    ptx = compile_both(source)[1]
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
    large = generate_text(SAXPY, "saxpy", BLOCK=8192).contract.block[0]
    assert large == 512
    fixed = generate_text(SAXPY, "saxpy", BLOCK=1024, NUM_THREADS=128)
    assert fixed.contract.block == (128, 1, 1)
    assert "__launch_bounds__(128)" in fixed.source
    assert fixed.contract.values == {"BLOCK": 1024, "NUM_THREADS": 128}


def test_small_tile_guards_threads_without_lanes():
    generated = generate_text(SAXPY, "saxpy", BLOCK=16)
    assert "g < 4" in generated.source  # 16 lanes in groups of 4 over 32 threads
    compile_both(generated.source)


def test_64_bit_indices():
    generated = generate_text(SAXPY, "saxpy", index_width=64, BLOCK=1024)
    assert "typedef phobos::i64 index_t;" in generated.source
    assert generated.contract.index_width == 64
    assert generated.contract.slots[-1] == Slot("extent", "i64", "N")
    ptx = compile_both(generated.source)[1]
    assert ".param .u64 phobos_saxpy_param_4" in ptx
    assert count(r"ld\.global\.v4\.f32", ptx) > 0
