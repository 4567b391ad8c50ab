"""The CUDA toolchain wrappers, on hand-written CUDA (no GPU needed)."""

from __future__ import annotations

import sys

import pytest

from phobos.compile.toolchain import (
    INSTALL_HINT,
    CudaCompileError,
    Resources,
    ToolchainError,
    ToolchainMissingError,
    compile_cuda,
    headers,
    parse_ptxas_info,
    toolchain_versions,
)

SCALE = """\
#include <cuda_fp16.h>
extern "C" __global__ void scale(const __half* x, float* y, int n) {
    __shared__ float staged[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[threadIdx.x] = i < n ? __half2float(x[i]) : 0.0f;
    __syncthreads();
    if (i < n) y[i] = staged[255 - threadIdx.x] * 2.0f;
}
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_compiles_to_ptx_and_cubin_for_the_card(arch):
    build = compile_cuda(SCALE, arch=arch, name="scale")
    assert f".target {arch}" in build.ptx
    assert ".entry scale(" in build.ptx
    assert build.cubin.startswith(b"\x7fELF")
    assert build.resources is None


def test_line_info_follows_line_directives():
    include, body = SCALE.split("\n", 1)
    source = f'{include}\n#line 7 "saxpy.ph"\n{body}'
    with_lines = compile_cuda(source, arch="sm_80", name="scale")
    assert 'saxpy.ph"' in with_lines.ptx and ".loc" in with_lines.ptx
    without = compile_cuda(source, arch="sm_80", name="scale", line_info=False)
    assert ".loc" not in without.ptx


def test_verbose_reports_ptxas_resources():
    build = compile_cuda(SCALE, arch="sm_90", name="scale", verbose=True)
    assert build.resources is not None
    assert build.resources.registers > 0
    assert build.resources.shared_bytes == 256 * 4
    assert build.resources.spill_stores == build.resources.spill_loads == 0
    assert "Compiling entry function 'scale'" in build.log


def test_user_include_paths_come_first(tmp_path):
    (tmp_path / "factor.h").write_text("#define FACTOR 3.0f\n")
    source = '#include "factor.h"\nextern "C" __global__ void k(float* y) { y[0] *= FACTOR; }\n'
    build = compile_cuda(source, arch="sm_80", name="k", include_paths=[str(tmp_path)])
    assert "3.0" in build.ptx or "0f40400000" in build.ptx


def test_a_compile_error_is_an_internal_error_with_the_nvrtc_log():
    source = 'extern "C" __global__ void k() { undefined_fn(); }\n'
    with pytest.raises(CudaCompileError) as raised:
        compile_cuda(source, arch="sm_90", name="broken")
    message = str(raised.value)
    assert "internal compiler error" in message
    assert 'identifier "undefined_fn" is undefined' in message
    assert "broken.cu(1)" in message


def test_an_arch_that_is_not_a_name_is_a_value_error():
    with pytest.raises(ValueError, match="sm_80 or sm_90a"):
        compile_cuda(SCALE, arch="hopper", name="scale")


def test_an_arch_nvrtc_cannot_target_lists_the_ones_it_can():
    with pytest.raises(ToolchainError, match=r"cannot compile for sm_30; it supports .*sm_90"):
        compile_cuda(SCALE, arch="sm_30", name="scale")


def test_missing_cuda_bindings_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    with pytest.raises(ToolchainMissingError) as raised:
        compile_cuda(SCALE, arch="sm_90", name="scale")
    assert INSTALL_HINT in str(raised.value)
    assert INSTALL_HINT == "pip install 'phobos-compile[cuda]'"


def test_headers_fall_back_to_cuda_home(monkeypatch, tmp_path):
    include = tmp_path / "include"
    include.mkdir()
    (include / "cuda_fp16.h").write_text("")
    monkeypatch.setattr(headers, "_nvidia_wheel_roots", list)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert headers.cuda_include_dir() == include


def test_missing_headers_say_where_they_looked(monkeypatch, tmp_path):
    monkeypatch.setattr(headers, "_nvidia_wheel_roots", list)
    monkeypatch.setattr(headers, "_TOOLKIT_DEFAULT", str(tmp_path / "nowhere"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with pytest.raises(ToolchainMissingError) as raised:
        headers.cuda_include_dir()
    assert str(tmp_path / "nowhere" / "include") in str(raised.value)
    assert INSTALL_HINT in str(raised.value)


def test_the_wheel_headers_are_found():
    assert (headers.cuda_include_dir() / "cuda_bf16.h").is_file()


def test_toolchain_versions():
    versions = toolchain_versions()
    assert set(versions) == {"nvrtc"}
    assert all(v.count(".") == 1 and v.replace(".", "").isdigit() for v in versions.values())


# A real ptxas report (nvJitLink 13.5, -maxrregcount=24) with a device function and two kernels.
PTXAS_LOG = """\
ptxas info    : Overriding maximum register limit 256 for 'k' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for _Z1gf
ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'k2' for 'sm_80'
ptxas info    : Function properties for k2
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
ptxas         .     232 bytes stack frame, 420 bytes spill stores, 416 bytes spill loads
ptxas info    : Used 24 registers, used 1 barriers, 2048 bytes smem, 364 bytes cmem[0]
ptxas info    : Compile time = 21.886 ms
"""


def test_parse_ptxas_info_reads_each_entry_function():
    found = parse_ptxas_info(PTXAS_LOG)
    assert found == {
        "k2": Resources(registers=24, spill_stores=0, spill_loads=0, stack_bytes=0, shared_bytes=0),
        "k": Resources(
            registers=24, spill_stores=420, spill_loads=416, stack_bytes=232, shared_bytes=2048
        ),
    }
    assert found["k"].summary().startswith("24 registers, 420 bytes spill stores")


def test_parse_ptxas_info_reports_a_serialized_wgmma_pipeline():
    log = (
        "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are "
        "serialized due to non wgmma instructions reading accumulator registers of  a wgmma "
        "between start and end of the pipeline stage in the function 'k' in line 0\n" + PTXAS_LOG
    )
    found = parse_ptxas_info(log)
    reason = (
        "due to non wgmma instructions reading accumulator registers of a wgmma "
        "between start and end of the pipeline stage"
    )
    assert found["k"].wgmma_serialized == reason
    assert found["k2"].wgmma_serialized is None
    assert found["k"].summary().endswith(f"wgmma serialized by ptxas: {reason}")


def test_parse_ptxas_info_counts_the_waits_ptxas_injects():
    line = (
        "ptxas info    : (C7517) wgmma.wait_group is injected in around line {} by compiler to "
        "allow use of registers defined by GMMA in function 'k'\n"
    )
    found = parse_ptxas_info(line.format(7433) + line.format(7500) + PTXAS_LOG)
    assert (found["k"].wgmma_waits_injected, found["k2"].wgmma_waits_injected) == (2, 0)
    assert found["k"].summary().endswith("; 2 wgmma waits injected by ptxas")


def test_parse_ptxas_info_reports_an_ignored_setmaxnreg_for_the_entry_after_it():
    line = (
        "ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to "
        "determine register count at entry.\n"
    )
    entry = "ptxas info    : Compiling entry function 'k' for"
    first, second = PTXAS_LOG.split(entry)
    log = first + line + entry + second
    found = parse_ptxas_info(log)
    assert found["k"].registers_not_rebalanced and not found["k2"].registers_not_rebalanced
    assert found["k"].summary().endswith("; setmaxnreg ignored by ptxas")
