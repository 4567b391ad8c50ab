"""Accepted programs compile with NVRTC: a sample of the fuzzer's accepted variants, and the
back-end problems the fuzzer found (issue 15), which the GPU back end now compiles.

A problem known at the time is marked ``xfail(strict=True)`` with the reason "codegen: <item>"
from ``tools.fuzz.nvrtc.known_issue``, which reads it off a variant's IR: when the back end
handles one, its cases XPASS, which strict marks report as failures, and the entry goes from
``known_issue``.  Issue 15's three have gone so (none is known now).  Needs NVRTC (the ``cuda``
extra), no GPU.
"""

from __future__ import annotations

import functools
import math
import warnings

import pytest

from phobos.compile.check import lower
from phobos.compile.syntax import parse
from tools.fuzz import nvrtc
from tools.fuzz.harness import ACCEPTED, run_input, walk_ir
from tools.fuzz.mutate import make_input
from tools.fuzz.seeds import load_seeds

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVRTC (pip install phobos-compile[cuda])")

SEED = 15
SAMPLE = 8
MAX_LANES = 1 << 14  # small variants only: NVRTC stays fast


def variant_of(text: str, name: str = "k") -> nvrtc.Variant:
    module = parse(text, f"{name}.ph")
    return nvrtc.Variant(
        module, module.kernels[0].name, {}, lower(module, module.kernels[0].name, {})
    )


def unary(op: str, dtype: str) -> str:
    return (
        f"kernel k(x: tensor<{dtype}>[N], out: tensor<{dtype}>[N]) {{\n"
        f"    out[ctx.block.x * 64 :+ 64] = {op}x[ctx.block.x * 64 :+ 64]\n"
        "}\n"
    )


TINY = """\
kernel k(x: tensor<{t}>[N], out: tensor<{t}>[N]) {{
    out[ctx.block.x * 64 :+ 64] = x[ctx.block.x * 64 :+ 64] * 1e-46
}}
"""
NON_ASCII = """\
kernel façade(x: tensor<f32>[N], out: tensor<f32>[N]) {
    let ñ = x[ctx.block.x * 64 :+ 64]
    out[ctx.block.x * 64 :+ 64] = ñ * 2.0
}
"""
ITEMS = {
    **{f"{op}{t}": unary(op, t) for op in "-~" for t in ("i8", "i16", "u8", "u16")},
    "tiny-f32": TINY.format(t="f32"),
    "tiny-bf16": TINY.format(t="bf16"),
    "tiny-f16": TINY.format(t="f16"),  # the fuzzer's 2.2250738585072014e-308 on an f16 tile
    "non-ascii": NON_ASCII,
    # Neighbours that compile today: the same constructs where the back end copes.
    "-i32": unary("-", "i32"),
    "~u32": unary("~", "u32"),
    "small-f16": TINY.format(t="f16").replace("1e-46", "1e-8"),  # 0 in f16, not in f32
}


def compiles(variant: nvrtc.Variant, request: pytest.FixtureRequest) -> None:
    """Compile ``variant``; a known back-end problem marks the test xfail(strict=True)."""
    reason = nvrtc.known_issue(variant.ir)
    if reason is not None:
        from phobos.compile.toolchain import CudaCompileError

        request.applymarker(pytest.mark.xfail(strict=True, reason=reason, raises=CudaCompileError))
    nvrtc.compile_variant(variant)


@pytest.mark.parametrize("item", ITEMS)
def test_the_fuzzers_back_end_findings(item, request):
    compiles(variant_of(ITEMS[item]), request)


def test_the_findings_are_no_longer_known_issues():
    """Each finding compiles (above) unmarked: none is a known issue any more."""
    reasons = {item: nvrtc.known_issue(variant_of(text).ir) for item, text in ITEMS.items()}
    assert reasons == dict.fromkeys(ITEMS)


@functools.cache
def sample() -> tuple[nvrtc.Variant, ...]:
    """The first ``SAMPLE`` small accepted variants of the fuzzer's inputs, seed ``SEED``."""
    import tempfile
    from pathlib import Path

    seeds = load_seeds()
    found: list[nvrtc.Variant] = []
    with (
        tempfile.TemporaryDirectory(prefix="phobos-fuzz-nvrtc-") as workdir,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        index = 0
        while len(found) < SAMPLE and index < 5000:
            accepted: list[nvrtc.Variant] = []
            inp = make_input(seeds, SEED, index)
            outcome = run_input(inp, Path(workdir), interpret=False, accepted=accepted)
            if outcome.status == ACCEPTED:
                found += [v for v in accepted if _lanes(v.ir) <= MAX_LANES][:1]
            index += 1
    return tuple(found)


def _lanes(kernel) -> int:
    return sum(
        math.prod(node.type.shape)
        for node, _ in walk_ir(kernel.body)
        if hasattr(getattr(node, "type", None), "shape")
    )


@pytest.mark.parametrize("position", range(SAMPLE))
def test_an_accepted_fuzz_variant_compiles(position, request):
    variants = sample()
    assert len(variants) == SAMPLE, "the fuzzer accepted too few small variants"
    compiles(variants[position], request)
