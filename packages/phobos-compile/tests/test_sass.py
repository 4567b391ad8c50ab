"""What the GPU runs, read from the SASS of the cubins (nvdisasm, from the nvidia-cuda-nvdisasm wheel).

Hopper's attention forward multiplies both of its products on the warpgroup tensor
cores (``HGMMA``: QKᵀ with both operands from shared memory, PV with ``p`` in
registers), keeps the scores, ``p`` and the rescale in registers (no shared-memory
exchange in the whole kernel: its only shared memory is the copies of ``q``, ``k``
and ``v``), and passes no barrier in its KV loop (mbarriers order the stages, which a
producer warpgroup fills: ``USETMAXREG`` gives its registers to the consumers).  Both copy their loops' windows by TMA
(``UTMALDG``, no ``LDGSTS``: only attention's ``q``, loaded once, is copied by the
threads).  Matmul's k-loop issues each k-step's ``HGMMA`` behind the last with no
wait between (one product in flight), and every spelling of the k-loop gives the same
instructions.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from phobos.compile.contract import Slot
from phobos.compile.gpu import ir
from phobos.compile.pipeline import compile_kernel, parse_file
from phobos.compile.syntax import parse

ROOT = Path(__file__).resolve().parents[3]


def _nvdisasm() -> str | None:
    try:
        import nvidia

        for base in nvidia.__path__:
            for candidate in Path(base).glob("*/bin/nvdisasm"):
                return str(candidate)
    except ImportError:
        pass
    return shutil.which("nvdisasm")


NVDISASM = _nvdisasm()
pytestmark = pytest.mark.skipif(
    NVDISASM is None, reason="needs nvdisasm (pip install nvidia-cuda-nvdisasm)"
)


def sass(cubin: bytes, tmp_path: Path) -> list[str]:
    """The instructions' opcodes with their modifiers, in order."""
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin)
    text = subprocess.run(
        [NVDISASM, "-c", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+[^;]*);", text)


def opcodes(instructions: list[str]) -> Counter:
    return Counter(i.split()[0].split(".")[0] for i in instructions)


@pytest.mark.parametrize("d", [64, 128])
def test_attention_forward_runs_both_products_on_wgmma_with_no_barrier_in_its_loop(tmp_path, d):
    module = parse_file(ROOT / "examples" / "attention.ph")
    values = {"D": d, "BLOCK_M": 128, "BLOCK_N": 64, "NUM_THREADS": 256, "CAUSAL": 0}
    compiled = compile_kernel(module, "attention_forward", values, arch="sm_90a", verbose=True)
    code = sass(compiled.cubin, tmp_path)
    counts = opcodes(code)
    wgmma = [i for i in code if i.startswith("HGMMA")]
    # QKᵀ: D / 16 k-steps from shared memory; PV: BLOCK_N / 16 with p in registers.
    assert len(wgmma) == d // 16 + 64 // 16
    from_registers = [i for i in wgmma if re.match(r"HGMMA\S* R\d+, R\d+, gdesc", i)]
    assert len(from_registers) == 64 // 16
    assert counts["HMMA"] == 0
    # No barrier in the KV loop: mbarriers order its stages, and the row max and sum are
    # shuffles.  At D 128 the CTA is alone on its SM (its shared memory), so a producer
    # warpgroup copies k and v and gives its registers to the consumers: every thread's
    # barrier after the mbarriers' initialisation, then the consumers' (named) where q's
    # copy lands.  At D 64 two CTAs share an SM and it stays whole: one barrier.
    barriers = [i for i in code if i.startswith("BAR")]
    if d == 128:
        assert barriers == ["BAR.SYNC.DEFER_BLOCKING 0x0 ", "BAR.SYNC.DEFER_BLOCKING 0x1, 0x100 "]
        assert counts["USETMAXREG"] == 2
    else:
        assert barriers == ["BAR.SYNC.DEFER_BLOCKING 0x0 "] and counts["USETMAXREG"] == 0
    # k and v by TMA: a box per 64 columns (128 bytes) each a stage, in the loop and the
    # two stages issued before it; q, loaded once, by the threads' cp.async (its tested
    # and untested copies).
    assert counts["UTMALDG"] == 2 * (d // 64) * 3
    assert counts["LDGSTS"] == 2 * 128 * d * 2 // 16 // 256
    shared = [
        op for op in compiled.gpu_ir.walk() if isinstance(op, (ir.SharedStore, ir.SharedLoad))
    ]
    assert shared == []  # scores, p and the rescale never leave the registers
    used = compiled.resources
    assert (used.spill_stores, used.spill_loads) == (0, 0)


SPELLINGS = """
@autotune(BM in {128}, BN in {128}, BK in {64}, NUM_THREADS in {256})
kernel plus_equals(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N]) {
    let m = ctx.block.x * BM
    let n = ctx.block.y * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc += a[m :+ BM, k :+ BK] @ b[k :+ BK, n :+ BN]
    }
    c[m :+ BM, n :+ BN] = f16(acc)
}

@autotune(BM in {128}, BN in {128}, BK in {64}, NUM_THREADS in {256})
kernel lets(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N]) {
    let m = ctx.block.x * BM
    let n = ctx.block.y * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        let x = a[m :+ BM, k :+ BK]
        let y = b[k :+ BK, n :+ BN]
        let p = dot(x, y, acc)
        acc = p
    }
    c[m :+ BM, n :+ BN] = f16(acc)
}

@autotune(BM in {128}, BN in {128}, BK in {64}, NUM_THREADS in {256})
kernel accumulator(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f16>[M, N]) {
    let m = ctx.block.x * BM
    let n = ctx.block.y * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    c[m :+ BM, n :+ BN] = f16(maximum(acc * 0.5, 0.0))
}
"""


def test_every_spelling_of_the_k_loop_gets_the_same_instructions(tmp_path):
    module = parse(SPELLINGS, "spellings.ph")
    mixes = {}
    for name in ("plus_equals", "lets", "accumulator"):
        values = {"BM": 128, "BN": 128, "BK": 64, "NUM_THREADS": 256}
        compiled = compile_kernel(module, name, values, arch="sm_90a")
        (loop,) = [  # the consumers' loop (the producer's refills its rings)
            op
            for op in compiled.gpu_ir.walk()
            if isinstance(op, ir.For) and any(isinstance(o, ir.Wgmma) for o in op.body.walk())
        ]
        body = [op.NAME for op in loop.body.walk()]
        counts = opcodes(sass(compiled.cubin, tmp_path))
        mixes[name] = (body, counts["HGMMA"], counts["LDGSTS"], counts["BAR"])
    first = mixes["plus_equals"]
    assert first[1] == 64 // 16  # one k-step's wgmmas, no mma.sync
    assert all(mix == first for mix in mixes.values()), mixes


def test_matmul_copies_its_k_loop_by_tma(tmp_path):
    """a and b by TMA (one box for a's 128 x 64, two for b's 64 x 128, into each of the
    three stages the loop and its prologue issue), and not one cp.async."""
    module = parse_file(ROOT / "examples" / "matmul.ph")
    values = {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "NUM_THREADS": 256, "ACTIVATION": 0}
    compiled = compile_kernel(module, "matmul", values, arch="sm_90a", verbose=True)
    counts = opcodes(sass(compiled.cubin, tmp_path))
    assert counts["UTMALDG"] == 3 * 3 and counts["LDGSTS"] == 0
    # Every thread's barrier after the mbarriers' initialisation and the consumers' one
    # before the k-loop; none in it.  The producer warpgroup gives its registers away.
    assert counts["BAR"] == 2 and counts["USETMAXREG"] == 2
    assert compiled.contract.slots[-2:] == (
        Slot("tensormap", "tmap", "a", box=(128, 64)),
        Slot("tensormap", "tmap", "b", box=(64, 64)),
    )


def test_matmul_keeps_one_k_step_in_flight(tmp_path):
    module = parse_file(ROOT / "examples" / "matmul.ph")
    values = {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "NUM_THREADS": 256, "ACTIVATION": 0}
    code = sass(compile_kernel(module, "matmul", values, arch="sm_90a").cubin, tmp_path)
    products = [i for i, text in enumerate(code) if text.startswith("HGMMA")]
    assert len(products) == 64 // 16  # one k-step of m64n128k16, per warpgroup
    between = code[products[0] : products[-1] + 1]
    assert not [text for text in between if text.startswith("WARPGROUP.DEPBAR")]
    # The release that frees the older k-step's stage: all but the newest product done,
    # the stage handed back (an arrival on its empty mbarrier); then the next iteration,
    # with no wait for the newest (ptxas adds none of its own).
    assert code[products[-1] + 1].startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1")
    release = products[-1] + 1
    arrive = next(i for i in range(release, len(code)) if code[i].startswith("SYNCS.ARRIVE"))
    assert not [t for t in code[release + 1 : arrive] if t.startswith("WARPGROUP")]
    # The one wait for every product: after the loop, before the epilogue reads them.
    assert sum(text.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0") for text in code) == 1
