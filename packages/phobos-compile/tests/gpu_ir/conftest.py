"""Helpers of the GPU back end's CPU tests: lowering inline ``.ph`` text, running the passes in
``pipeline.PASSES``'s order up to any of them (the verifier after each, as ``pipeline.build``
runs it), executing GPU IR next to the interpreter.

``memoised_layouts`` caches ``Layout.coords()`` and ``Layout.valid()`` (pure functions of a
frozen layout, which the executor recomputes in Python on every op: most of its time) as
read-only arrays, so an accidental in-place write fails loudly.  The tests run
``executor.Executor`` itself: it applies a masked reduction's mask
(``test_executor_hazards.py::test_executor_runs_a_masked_register_reduction``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.gpu import executor as gpu_executor
from phobos.compile.gpu import ir, layouts, pipeline
from phobos.compile.gpu.lower import lower_kernel
from phobos.compile.gpu.verify import Stage, verify
from phobos.compile.ir import nodes as tir
from phobos.compile.syntax import parse

# ---------------------------------------------------------------------------- the passes

# ``pipeline.PASSES`` under the names of their functions (``eliminate_dead_code``, run four
# times, is told apart by ``build_until``'s ``occurrence``), each with the stage the verifier
# checks after it.
PASSES: tuple[tuple[str, Callable[[ir.Kernel], None]], ...] = tuple(
    (run.__name__, run) for _, run, _ in pipeline.PASSES
)
_STAGES: tuple[Stage, ...] = tuple(stage for _, _, stage in pipeline.PASSES)


def specialisation(kernel: tir.Kernel, specialised: bool) -> dict[str, dict[str, object]]:
    tensors = [p.name for p in kernel.params if isinstance(p, tir.TensorParam)]
    return {
        "unit_stride": dict.fromkeys(tensors, specialised),
        "align": dict.fromkeys(tensors, 16 if specialised else 1),
    }


def build_until(
    kernel: tir.Kernel,
    last: str | None = None,
    *,
    arch: str = "sm_90a",
    specialised: bool = True,
    occurrence: int = 1,
) -> ir.Kernel:
    """Lower ``kernel`` and run the passes up to and including ``last`` (its ``occurrence``-th
    run, for dead-code elimination); None: lowering alone; "all": the whole pipeline."""
    gk = lower_kernel(kernel, arch=arch, index_width=32, **specialisation(kernel, specialised))
    verify(gk, Stage(), "lowering")
    if last is None:
        return gk
    seen = 0
    for (name, run), stage in zip(PASSES, _STAGES):
        run(gk)
        verify(gk, stage, name)
        if name == last:
            seen += 1
            if seen == occurrence:
                return gk
    if last != "all":
        raise KeyError(f"no pass {last!r} (run {occurrence}) in the pipeline")
    return gk


def lower_text(text: str, kernel: str, **values: int) -> tir.Kernel:
    """The tile IR of one variant of ``kernel`` in the ``.ph`` ``text``."""
    return lower(parse(text, "test.ph"), kernel, values)


def build_text(
    text: str, kernel: str, last: str | None = "all", *, arch: str = "sm_90a", **values: int
) -> ir.Kernel:
    return build_until(lower_text(text, kernel, **values), last, arch=arch)


# ---------------------------------------------------------------------------- IR queries


def ops(block: ir.Block | ir.Kernel, kind: type | tuple[type, ...] = ir.Op) -> list[ir.Op]:
    """Every op of ``kind`` in ``block`` and its regions, in order."""
    return [op for op in block.walk() if isinstance(op, kind)]


def top_ops(block: ir.Block, kind: type | tuple[type, ...] = ir.Op) -> list[ir.Op]:
    """The ops of ``kind`` directly in ``block`` (not in its regions)."""
    return [op for op in block.ops if isinstance(op, kind)]


def names(block: ir.Block) -> list[str]:
    """The op names of ``block`` and its regions, in order (``Op.NAME``)."""
    return [op.NAME for op in block.walk()]


def only(items: Sequence[object]) -> object:
    assert len(items) == 1, f"expected exactly one, got {len(items)}: {items}"
    return items[0]


def loop(kernel: ir.Kernel, index: int = 0) -> ir.For:
    """The ``index``-th ``for`` of the kernel (outermost first)."""
    loops = ops(kernel, ir.For)
    assert len(loops) > index, f"the kernel has {len(loops)} loops"
    return loops[index]  # type: ignore[return-value]


def defining(kernel: ir.Kernel) -> dict[ir.Value, ir.Op]:
    return ir.definitions(kernel)


# ---------------------------------------------------------------------------- the executor


def execute(
    kernel: ir.Kernel, grid: tuple[int, ...], args: Sequence[object]
) -> gpu_executor.Executor:
    """Run ``kernel`` in ``executor.Executor`` on ``grid``; the runner, for its state."""
    runner = gpu_executor.Executor(kernel, args)
    runner.run(grid)
    return runner


_coords = layouts.Layout.coords
_valid = layouts.Layout.valid


@functools.lru_cache(maxsize=4096)
def _cached_coords(layout: layouts.Layout) -> np.ndarray:
    out = _coords(layout)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=4096)
def _cached_valid(layout: layouts.Layout) -> np.ndarray:
    out = _valid(layout)
    out.setflags(write=False)
    return out


@pytest.fixture(scope="module")
def memoised_layouts() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(layouts.Layout, "coords", _cached_coords)
        patch.setattr(layouts.Layout, "valid", _cached_valid)
        yield


# ---------------------------------------------------------------------------- comparing


def tolerance(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol relative to the largest magnitude) for outputs of ``dtype``."""
    if dtype == np.float16 or dtype.name == "bfloat16":  # bf16: one rounding step is 2^-8
        return 1e-2, 1e-2
    if dtype == np.float32:
        return 1e-4, 1e-5
    return 1e-12, 0.0


def assert_same_tensors(
    names: Sequence[str],
    expected: Sequence[object],
    got: Sequence[object],
    before: Sequence[object],
) -> list[str]:
    """Every tensor argument equal between the interpreter (``expected``) and the executor
    (``got``) to its dtype's tolerance, NaN where NaN; returns the tensors the interpreter
    wrote (which must be some)."""
    written = []
    for name, want, have, old in zip(names, expected, got, before):
        if not isinstance(want, np.ndarray):
            continue
        if not np.array_equal(want, old, equal_nan=True):
            written.append(name)
        w, h = want.astype(np.float64), have.astype(np.float64)
        assert np.array_equal(np.isnan(w), np.isnan(h)), (
            f"{name}: NaN at {int(np.isnan(w).sum())} places in the interpreter's result, "
            f"{int(np.isnan(h).sum())} in the executor's"
        )
        assert np.array_equal(np.isinf(w), np.isinf(h)) and np.array_equal(
            w[np.isinf(w)], h[np.isinf(h)]
        ), f"{name}: infinities differ"
        finite = np.isfinite(w)
        scale = float(np.abs(w[finite]).max()) if finite.any() else 1.0
        rtol, atol = tolerance(want.dtype)
        np.testing.assert_allclose(h[finite], w[finite], rtol=rtol, atol=atol * scale, err_msg=name)
    assert written, "the interpreter wrote none of the tensors: the comparison would be vacuous"
    return written
