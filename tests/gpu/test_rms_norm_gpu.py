"""Tutorial 07's RMS norm on the GPU against torch in float64, f16 and bf16, through the
tutorial's wrappers (``kernel[grid](...)`` with the tuner choosing every name the wrapper
leaves to it) and at fixed variants of both paths of the forward and of the backward (one
tile, and the wide kernels); every output NaN-poisoned before the launch."""

from __future__ import annotations

import pytest

from phobos.autotune import WRONG
from tests.test_tutorials import load

pytestmark = pytest.mark.gpu

tutorial = load("07_rms_norm.py")
EPS = 1e-6
# (M, N): widths no tile divides, one column band, the widest one-tile row, then rows wider
# than every tile (the forward's chunks, the wide backward): one column past it, a width no
# tile divides, a few rows (most groups idle), and the benchmark's widest.
SIZES = [
    (37, 300), (4096, 3000), (1000, 128), (513, 768), (300, 16384),
    (300, 16385), (513, 20000), (7, 40000), (64, 32768), (4096, 32768),
]  # fmt: skip


def torch_dtype(kind: str):
    import torch

    return {"f16": torch.float16, "bf16": torch.bfloat16}[kind]


def expected(x, w, dy) -> dict:
    return tutorial.torch_rms_norm(x.double(), w.double(), dy.double(), EPS)


def assert_close(got: dict, want: dict, kind: str, names) -> None:
    for name in names:
        value = got[name]
        assert not bool(value.isnan().any()), f"{kind} {name}: NaN (an element left unwritten?)"
        bound = tutorial.TOLERANCE["rstd" if name == "rstd" else kind]
        error = tutorial.relative_error(value, want[name])
        assert error < bound, f"{kind} {name}: relative error {error:.2e} (bound {bound})"


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("m, n", SIZES, ids=[f"{m}x{n}" for m, n in SIZES])
def test_forward_and_backward_tuned_match_torch_in_float64(kind, m, n):
    import torch

    x, w, dy = tutorial.gpu_inputs(m, n, torch_dtype(kind))
    want = expected(x, w, dy)
    out = tutorial.phobos_buffers(x)
    tutorial.forward(x, w, out["y"], out["rstd"], EPS)
    want["rstd"] = 1.0 / torch.sqrt(x.double().pow(2).mean(dim=1) + EPS)
    assert_close(out, want, kind, ("y", "rstd"))
    report = tutorial.FORWARD[kind].tuning_report()
    assert report is not None and report.choice, "the forward was not tuned"
    launches = tutorial.backward_launches(
        dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"]
    )
    tutorial.backward(dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"])
    torch.cuda.synchronize()
    assert_close(out, want, kind, ("dx", "dw"))
    for kernel, *_ in launches:  # the tuner saw no variant that cannot be right
        report = kernel.tuning_report()
        assert report is not None and report.choice, f"{kernel.name} was not tuned"
        assert all(v.status != WRONG for v in report.variants), str(report)
    if n <= tutorial.MAX_TILE:  # the tuner chose among the tiles that hold the row
        assert "BLOCK_N" not in launches[0][3]
        assert launches[0][0].tuning_report().choice["BLOCK_N"] >= n
    else:
        assert [k.name for k, *_ in launches[:2]] == [
            f"rms_norm_backward_c_{kind}",
            f"rms_norm_backward_chunked_{kind}",
        ]


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize(
    "rows, block_n, n",
    [(1, 1024, 3000), (4, 256, 1000), (8, 128, 300), (2, 3072, 3000), (1, 16384, 12288)],
)
def test_fixed_forward_variants_match_torch(kind, rows, block_n, n):
    """Both paths of the forward: chunks of BLOCK_N (``N > BLOCK_N``) and one tile."""
    m = 4 * rows + 3  # the last block has 3 of its rows
    x, w, dy = tutorial.gpu_inputs(m, n, torch_dtype(kind))
    want = expected(x, w, dy)
    out = tutorial.phobos_buffers(x)
    tutorial.forward(x, w, out["y"], out["rstd"], EPS, ROWS=rows, BLOCK_N=block_n)
    assert_close(out, want, kind, ("y",))


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize("rows, groups", [(1, 7), (2, 264), (8, 3), (4, 1)])
def test_fixed_backward_variants_match_torch(kind, rows, groups):
    import torch

    m, n = 1000, 3000
    x, w, dy = tutorial.gpu_inputs(m, n, torch_dtype(kind))
    want = expected(x, w, dy)
    out = tutorial.phobos_buffers(x)
    out["dw_partial"] = torch.full((groups, n), float("nan"), device="cuda")
    tutorial.forward(x, w, out["y"], out["rstd"], EPS)
    tutorial.backward(
        dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"],
        dw_names={"BLOCK_G": 16, "BLOCK_N": 128}, ROWS=rows, BLOCK_N=3072,
    )  # fmt: skip
    assert_close(out, want, kind, ("dx", "dw"))
    partial_total = out["dw_partial"].double().sum(dim=0)
    assert tutorial.relative_error(partial_total, want["dw"]) < 1e-5  # f32 partial sums


@pytest.mark.parametrize("kind", ["f16", "bf16"])
@pytest.mark.parametrize(
    "rows, block_n, n, groups",
    [(1, 256, 3000, 264), (2, 1024, 3000, 7), (4, 4096, 20000, 264), (1, 2048, 16385, 1)],
)
def test_fixed_wide_backward_variants_match_torch(kind, rows, block_n, n, groups):
    """The wide kernels at fixed variants (a BLOCK_N narrower than the row takes them), with
    partial bands and chunks (M = 1000 rows: 62 chunks of 16 and one of 8)."""
    import torch

    m = 1000
    x, w, dy = tutorial.gpu_inputs(m, n, torch_dtype(kind))
    want = expected(x, w, dy)
    out = tutorial.phobos_buffers(x)
    out["dw_partial"] = torch.full((groups, n), float("nan"), device="cuda")
    tutorial.forward(x, w, out["y"], out["rstd"], EPS)
    tutorial.backward(
        dy, x, w, out["rstd"], out["dx"], out["dw"], out["dw_partial"],
        dw_names={"BLOCK_G": 16, "BLOCK_N": 128}, ROWS=rows, BLOCK_N=block_n,
    )  # fmt: skip
    assert_close(out, want, kind, ("dx", "dw"))
    partial_total = out["dw_partial"].double().sum(dim=0)
    assert tutorial.relative_error(partial_total, want["dw"]) < 1e-5  # f32 partial sums
