"""trace and assert in generated CUDA: printf and __assertfail naming the user's file and line."""

from __future__ import annotations

import pytest

from phobos.compile import pipeline
from phobos.compile.codegen.debug import c_string, printf_format
from phobos.compile.syntax import parse

DEBUGGED = """\
kernel k(x: tensor<f16>[M, N], out: tensor<f16>[M, N]) {
    let t = x[ctx.block.x * 4 :+ 4, 0 :+ 64]
    let s = sum(f32(t), axis=1)
    trace(ctx.block.x, max(s, axis=0), t, when=ctx.block.x == 1)
    assert(t >= 0.0f16, "x must not be negative")
    assert(max(s, axis=0) < 100.0)
    out[ctx.block.x * 4 :+ 4, 0 :+ 64] = t
}
"""


@pytest.fixture(scope="module")
def compiled():
    module = parse(DEBUGGED, "/src/user kernels/k.ph")
    return pipeline.compile_kernel(module, "k", {}, arch="sm_90")


def test_traces_print_with_the_users_file_and_line(compiled):
    source = compiled.cuda_source
    head = '"%s:%d: block (%d, %d, %d): %s'
    assert f'printf({head} = %lld\\n", "/src/user kernels/k.ph", 4, ' in source
    assert '"ctx.block.x", (long long)(' in source
    assert f'printf({head}[%d, %d] = %g\\n", "/src/user kernels/k.ph", 4, ' in source
    assert '"t", c0, c1, (double)(float)(' in source
    assert source.count("if (tid == 0)") >= 2, "a scalar is printed by one thread"
    assert "vprintf" in compiled.ptx


def test_asserts_call_assertfail_with_the_message_file_and_line(compiled):
    source = compiled.cuda_source
    assert '__assertfail("x must not be negative", "/src/user kernels/k.ph", 5, __func__, 1);' in (
        source
    )
    assert '__assertfail("max(s, axis=0) < 100.0", "/src/user kernels/k.ph", 6, __func__, 1);' in (
        source
    )
    assert '#line 5 "/src/user kernels/k.ph"' in source
    assert "__assertfail" in compiled.ptx


def test_c_strings_and_printf_conversions():
    assert c_string('a "b" \\ c') == '"a \\"b\\" \\\\ c"'
    assert printf_format("u64", "v") == ("%llu", "(unsigned long long)(v)")
    assert printf_format("bf16", "v") == ("%g", "(double)(float)(v)")
    assert printf_format("f64", "v") == ("%g", "(v)")
    assert printf_format("bool", "v") == ("%d", "(int)(v)")
