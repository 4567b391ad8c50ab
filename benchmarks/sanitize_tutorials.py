"""Every tutorial kernel, every variant of its ``@autotune`` space, at sizes no tile divides.

    bash benchmarks/sanitize_tutorials.sh                  # memcheck, racecheck, synccheck
    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_tutorials.py [FILTER]

Each variant is launched with all its names fixed (no tuning) on torch arrays filled with NaN
where the kernel writes, and its outputs are checked against the tutorial's float64
reference: a launch the sanitizer lets through but that computes the wrong thing (or leaves
elements unwritten) fails too.  ``FILTER`` keeps the cases whose name contains it.
Exits 1 when any variant is wrong; the sanitizer's own summary says whether it found errors.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = ROOT / "docs" / "tutorials"
# The tutorials' own tolerances (tests/gpu/test_tutorials_gpu.py): fp32 kernels, and every
# output of a kernel with fp16 inputs.
FP32, FP16 = 1e-5, 1e-2


def tutorial(stem: str):
    spec = importlib.util.spec_from_file_location(f"tutorial_{stem}", TUTORIALS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variants(kernel, keep: Callable[[dict], bool] = lambda v: True, **fixed: int) -> list[dict]:
    """The variants of ``kernel``'s space that agree with ``fixed`` and that ``keep`` keeps."""
    chosen = []
    for values in kernel.space.variants():
        values = dict(values)
        if all(values.get(k, v) == v for k, v in fixed.items()) and keep(values):
            chosen.append(values)
    return chosen


class Checker:
    """Runs the cases and counts the wrong outputs."""

    def __init__(self, torch) -> None:
        self.torch = torch
        self.launches = 0
        self.wrong: list[str] = []
        self.pruned: list[str] = []

    def ran(self, launcher, *args, **values: int) -> bool:
        """``launcher(*args, **values)``; False for a variant past a limit (a thread cannot
        hold its dot's result), which the tuner prunes, and so does this script."""
        from phobos.compile.diagnostics import PhobosError

        try:
            launcher(*args, **values)
        except PhobosError as exc:
            if not exc.only_limits:
                raise
            self.pruned.append(f"{values}: {exc.message}")
            return False
        return True

    def gpu(self, array: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(array)).cuda()

    def poisoned(self, shape, dtype):
        return self.torch.full(shape, float("nan"), dtype=dtype, device="cuda")

    def expect(self, case: str, values: dict, got, expected: np.ndarray, tolerance: float) -> None:
        self.torch.cuda.synchronize()
        self.launches += 1
        result = got.double().cpu().numpy()
        scale = max(float(np.abs(expected).max()), 1e-30)
        error = float(np.abs(result - expected).max() / scale)
        if not np.isfinite(result).all() or not error < tolerance:
            self.wrong.append(
                f"{case} {values}: relative error {error:.3g} (NaN left: {np.isnan(result).sum()})"
            )


def vector_add(c: Checker) -> Iterator[str]:
    t = tutorial("01_vector_add")
    rng = np.random.default_rng(1)
    n = 100_003
    x, y = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    expected = x.astype(np.float64) + y
    for values in variants(t.vector_add):
        out = c.poisoned((n,), c.torch.float32)
        if not c.ran(t.vector_add[t.grid], c.gpu(x), c.gpu(y), out, **values):
            continue
        c.expect("vector_add", values, out, expected, FP32)
        yield f"vector_add {values}"


def softmax(c: Checker) -> Iterator[str]:
    t = tutorial("02_fused_softmax")
    rng = np.random.default_rng(2)
    for kernel, (m, n), keep in [
        (t.softmax, (37, 1000), lambda v: v["BLOCK_N"] >= 1000),
        (t.softmax_online, (37, 3000), lambda v: 64 <= v["BLOCK_N"] <= 4096),
    ]:
        x = (3 * rng.standard_normal((m, n))).astype(np.float32)
        expected = t.reference(x)
        for values in variants(kernel, keep):
            out = c.poisoned((m, n), c.torch.float32)
            if not c.ran(kernel[t.grid], c.gpu(x), out, **values):
                continue
            c.expect(kernel.name, values, out, expected, FP32)
            yield f"{kernel.name} {values}"


def layer_norm(c: Checker) -> Iterator[str]:
    t = tutorial("05_layer_norm")
    torch = c.torch
    rng = np.random.default_rng(5)
    m, n = 37, 1000
    x = rng.standard_normal((m, n)).astype(np.float16)
    w, b = (rng.standard_normal(n).astype(np.float16) for _ in range(2))
    dy = rng.standard_normal((m, n)).astype(np.float16)
    ref = t.reference(x, w, b, dy)
    wide = lambda v: v["BLOCK_N"] >= n  # noqa: E731 - one tile holds the row
    xs, ws, bs, dys = (c.gpu(a) for a in (x, w, b, dy))
    for values in variants(t.layer_norm_forward, wide):
        y = c.poisoned((m, n), torch.float16)
        mean, rstd = (c.poisoned((m,), torch.float32) for _ in range(2))
        if not c.ran(t.layer_norm_forward[(m,)], xs, ws, bs, y, mean, rstd, 1e-5, **values):
            continue
        c.expect("layer_norm_forward", values, y, ref["y"], FP16)
        c.expect("layer_norm_forward mean", values, mean, ref["mean"], FP16)
        c.expect("layer_norm_forward rstd", values, rstd, ref["rstd"], FP16)
        yield f"layer_norm_forward {values}"
    mean, rstd = (c.gpu(ref[k].astype(np.float32)) for k in ("mean", "rstd"))
    for values in variants(t.layer_norm_backward_dx, wide):
        groups = t.groups(m, values["ROWS"])
        dx = c.poisoned((m, n), torch.float16)
        dw_partial, db_partial = (c.poisoned((groups, n), torch.float32) for _ in range(2))
        if not c.ran(
            t.layer_norm_backward_dx[(groups,)],
            dys,
            xs,
            ws,
            mean,
            rstd,
            dx,
            dw_partial,
            db_partial,
            **values,
        ):
            continue
        c.expect("layer_norm_backward_dx", values, dx, ref["dx"], FP16)
        yield f"layer_norm_backward_dx {values}"
        if values["ROWS"] != 16:
            continue
        for tiles in variants(t.layer_norm_backward_dwdb):
            dw, db = (c.poisoned((n,), torch.float16) for _ in range(2))
            blocks = -(-n // tiles["BLOCK_N"])
            if not c.ran(
                t.layer_norm_backward_dwdb[(blocks,)], dw_partial, db_partial, dw, db, **tiles
            ):
                continue
            c.expect("layer_norm_backward_dwdb dw", tiles, dw, ref["dw"], FP16)
            c.expect("layer_norm_backward_dwdb db", tiles, db, ref["db"], FP16)
            yield f"layer_norm_backward_dwdb {tiles}"


def rms_norm(c: Checker) -> Iterator[str]:
    t = tutorial("07_rms_norm")
    torch = c.torch
    rng = np.random.default_rng(7)
    # N=1000: the forward's tiles below 1000 take the chunked path, the others hold the row.
    m, n, groups = 37, 1000, 3
    for kind, dtype in (("f16", torch.float16), ("bf16", torch.bfloat16)):
        tol, rstd_tol = t.TOLERANCE[kind], t.TOLERANCE["rstd"]

        def typed(array: np.ndarray, dtype=dtype):
            return c.gpu(array.astype(np.float32)).to(dtype)

        xs = typed(2 * rng.standard_normal((m, n)) + 0.5)
        ws = typed(rng.uniform(0.5, 1.5, n))
        dys = typed(rng.standard_normal((m, n)))
        ref = t.reference(*(a.double().cpu().numpy() for a in (xs, ws, dys)))
        forward, backward, dw_kernel = t.FORWARD[kind], t.BACKWARD[kind], t.BACKWARD_DW[kind]
        for values in variants(forward):
            y, rstd = c.poisoned((m, n), dtype), c.poisoned((m,), torch.float32)
            if not c.ran(forward[t.row_blocks], xs, ws, y, rstd, 1e-6, **values):
                continue
            c.expect(f"{forward.name} y", values, y, ref["y"], tol)
            c.expect(f"{forward.name} rstd", values, rstd, ref["rstd"], rstd_tol)
            yield f"{forward.name} {values}"
        rstd = c.gpu(ref["rstd"].astype(np.float32))
        for values in variants(backward, lambda v: v["BLOCK_N"] >= n):  # the row in one tile
            dx, partial = c.poisoned((m, n), dtype), c.poisoned((groups, n), torch.float32)
            if not c.ran(backward[t.partial_blocks], dys, xs, ws, rstd, dx, partial, **values):
                continue
            c.expect(f"{backward.name} dx", values, dx, ref["dx"], tol)
            c.expect(f"{backward.name} dw_partial", values, partial.sum(dim=0), ref["dw"], 1e-5)
            yield f"{backward.name} {values}"
        # The wide backward, every variant: 1000 columns are several bands for tiles below.
        rows_kernel, chunked = t.BACKWARD_C[kind], t.BACKWARD_CHUNKED[kind]
        x64, w64, dy64 = (a.double().cpu().numpy() for a in (xs, ws, dys))
        c_ref = (x64 * ref["rstd"][:, None] * (w64 * dy64)).sum(axis=1) / n
        for values in variants(rows_kernel):
            cs = c.poisoned((m,), torch.float32)
            if not c.ran(rows_kernel[t.row_blocks], dys, xs, ws, rstd, cs, **values):
                continue
            c.expect(f"{rows_kernel.name} c", values, cs, c_ref, rstd_tol)
            yield f"{rows_kernel.name} {values}"
        cs = c.gpu(c_ref.astype(np.float32))
        for values in variants(chunked):
            dx, partial = c.poisoned((m, n), dtype), c.poisoned((groups, n), torch.float32)
            args = (dys, xs, ws, rstd, cs, dx, partial)
            if not c.ran(chunked[t.band_blocks], *args, **values):
                continue
            c.expect(f"{chunked.name} dx", values, dx, ref["dx"], tol)
            c.expect(f"{chunked.name} dw_partial", values, partial.sum(dim=0), ref["dw"], 1e-5)
            yield f"{chunked.name} {values}"
        partial = rng.standard_normal((groups * 13, n)).astype(np.float32)
        for values in variants(dw_kernel):
            dw = c.poisoned((n,), dtype)
            if not c.ran(dw_kernel[t.column_blocks], c.gpu(partial), dw, **values):
                continue
            c.expect(dw_kernel.name, values, dw, partial.sum(axis=0, dtype=np.float64), tol)
            yield f"{dw_kernel.name} {values}"


def cross_entropy(c: Checker) -> Iterator[str]:
    t = tutorial("08_cross_entropy")
    torch = c.torch
    # V=5000: two chunks and a partial one up to 2048 lanes, one partial chunk past 4096;
    # labels at the first and the last column, 3 ignored (zero rows, no read).
    data = t.cpu_inputs(13, 5000, ignored=3, seed=8)
    ref = t.reference(**data)
    logits, labels = c.gpu(data["logits"]), c.gpu(data["labels"])
    n_valid = c.gpu(np.array([ref["n_valid"]], np.float32))
    lse = c.gpu(ref["lse"].astype(np.float32))
    one = torch.ones(1, device="cuda")
    ignore = t.IGNORE_INDEX
    for values in variants(t.cross_entropy_forward):
        losses, row_lse = (c.poisoned((13,), torch.float32) for _ in range(2))
        forward = t.cross_entropy_forward[t.row_blocks]
        if not c.ran(forward, logits, labels, losses, row_lse, ignore, **values):
            continue
        c.expect("cross_entropy_forward losses", values, losses, ref["losses"], FP32)
        c.expect("cross_entropy_forward lse", values, row_lse, ref["lse"], FP32)
        yield f"cross_entropy_forward {values}"
    for values in variants(t.cross_entropy_backward):
        grad = c.poisoned((13, 5000), torch.float32)
        backward = t.cross_entropy_backward[t.row_blocks]
        if not c.ran(backward, logits, labels, lse, one, n_valid, grad, ignore, **values):
            continue
        c.expect("cross_entropy_backward grad", values, grad, ref["grad"], FP32)
        yield f"cross_entropy_backward {values}"
    for values in variants(t.cross_entropy_fused):
        in_place = logits.clone()
        losses, row_lse = (c.poisoned((13,), torch.float32) for _ in range(2))
        fused = t.cross_entropy_fused[t.row_blocks]
        if not c.ran(fused, in_place, labels, losses, row_lse, one, n_valid, ignore, **values):
            continue
        c.expect("cross_entropy_fused losses", values, losses, ref["losses"], FP32)
        c.expect("cross_entropy_fused grad", values, in_place, ref["grad"], FP32)
        yield f"cross_entropy_fused {values}"
    count, mean = c.poisoned((1,), torch.float32), c.poisoned((1,), torch.float32)
    c.ran(t.cross_entropy_count[t.ONE_BLOCK], labels, count, ignore)
    c.expect("cross_entropy_count", {}, count, np.array([ref["n_valid"]], np.float64), FP32)
    c.ran(t.cross_entropy_mean[t.ONE_BLOCK], c.gpu(ref["losses"].astype(np.float32)), count, mean)
    c.expect("cross_entropy_mean", {}, mean, np.array([ref["loss"]]), FP32)
    yield "cross_entropy_count, cross_entropy_mean"


def matmul(c: Checker) -> Iterator[str]:
    t = tutorial("03_matmul")
    rng = np.random.default_rng(3)
    m, n, k = 300, 200, 170
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    expected = {act: t.reference(a, b, bool(act)) for act in (0, 1)}
    for values in variants(t.matmul):
        out = c.poisoned((m, n), c.torch.float16)
        if not c.ran(t.matmul[t.grid], c.gpu(a), c.gpu(b), out, **values):
            continue
        c.expect("matmul", values, out, expected[values["ACTIVATION"]], FP16)
        yield f"matmul {values}"


def attention(c: Checker) -> Iterator[str]:
    t = tutorial("06_fused_attention")
    torch = c.torch
    rng = np.random.default_rng(6)
    bh, s = 3, 200
    for d in (64, 128):
        q, k, v, do = (rng.standard_normal((bh, s, d)).astype(np.float16) for _ in range(4))
        qs, ks, vs, dos = (c.gpu(x) for x in (q, k, v, do))
        scale = 1.0 / d**0.5
        for causal in (0, 1):
            ref = t.reference(q, k, v, do, scale, bool(causal))
            fixed = {"D": d, "CAUSAL": causal}
            for values in variants(t.attention_forward, **fixed):
                o = c.poisoned((bh, s, d), torch.float16)
                lse = c.poisoned((bh, s), torch.float32)
                if not c.ran(
                    t.attention_forward[t.blocks_of("BLOCK_M")], qs, ks, vs, o, lse, scale, **values
                ):
                    continue
                c.expect("attention_forward o", values, o, ref["o"], FP16)
                c.expect("attention_forward lse", values, lse, ref["lse"], FP16)
                yield f"attention_forward {values}"
            o, lse = c.gpu(ref["o"].astype(np.float16)), c.gpu(ref["lse"].astype(np.float32))
            delta_ref = (ref["o"] * do.astype(np.float64)).sum(axis=-1)
            for values in variants(t.attention_backward_preprocess, D=d):
                delta = c.poisoned((bh, s), torch.float32)
                if not c.ran(
                    t.attention_backward_preprocess[t.blocks_of("BLOCK_M")], o, dos, delta, **values
                ):
                    continue
                c.expect("attention_backward_preprocess", values, delta, delta_ref, FP16)
                yield f"attention_backward_preprocess {values}"
            for values in variants(t.attention_backward_dkdv, **fixed):
                dk, dv = (c.poisoned((bh, s, d), torch.float16) for _ in range(2))
                if not c.ran(
                    t.attention_backward_dkdv[t.blocks_of("BLOCK_N")],
                    qs,
                    ks,
                    vs,
                    dos,
                    lse,
                    delta,
                    dk,
                    dv,
                    scale,
                    **values,
                ):
                    continue
                c.expect("attention_backward_dkdv dk", values, dk, ref["dk"], FP16)
                c.expect("attention_backward_dkdv dv", values, dv, ref["dv"], FP16)
                yield f"attention_backward_dkdv {values}"
            for values in variants(t.attention_backward_dq, **fixed):
                dq = c.poisoned((bh, s, d), torch.float16)
                if not c.ran(
                    t.attention_backward_dq[t.blocks_of("BLOCK_M")],
                    qs,
                    ks,
                    vs,
                    dos,
                    lse,
                    delta,
                    dq,
                    scale,
                    **values,
                ):
                    continue
                c.expect("attention_backward_dq", values, dq, ref["dq"], FP16)
                yield f"attention_backward_dq {values}"


CASES = {
    "vector_add": vector_add,
    "softmax": softmax,
    "layer_norm": layer_norm,
    "rms_norm": rms_norm,
    "cross_entropy": cross_entropy,
    "matmul": matmul,
    "attention": attention,
}


def main(argv: list[str]) -> int:
    import torch

    wanted = argv[0] if argv else ""
    checker = Checker(torch)
    start = time.time()
    for name, case in CASES.items():
        if wanted not in name:
            continue
        for step in case(checker):
            print(f"sanitize: {step}", flush=True)
    seconds = time.time() - start
    print(f"sanitize: {checker.launches} outputs checked in {seconds:.0f} s")
    for line in checker.pruned:
        print(f"sanitize: pruned {line}")
    for line in checker.wrong:
        print(f"sanitize: WRONG {line}")
    return 1 if checker.wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
