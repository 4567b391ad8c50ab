"""The GPU gives what the interpreter gives where docs/language.md defines a result the
hardware might not: float→int casts saturate (NaN → 0), and integer division by zero gives
a quotient of 0 and a remainder equal to the dividend (``MIN / -1`` wraps to ``MIN``).

The runtime implements both (``phobos::saturated`` and ``phobos::divide``/``remainder`` in
``gpu/runtime/phobos_gpu.cuh``; the hardware's conversion wraps for 8- and 16-bit targets);
``test_emitted_host.py`` checks the same cases on the host, in CI.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.filterwarnings("ignore::phobos.compile.diagnostics.PhobosWarning"),
]

N = 16
SPECIAL = [
    float("nan"), float("inf"), float("-inf"), 300.7, -300.7, -0.5, 3e9, 1e20,
    -1e20, 127.9, 128.0, -129.0, 65535.5, 4294967296.0, -0.0, 0.99,
]  # fmt: skip

TORCH_DTYPES = {
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "f32": "float32", "f64": "float64",
}  # fmt: skip
NUMPY_DTYPES = {k: np.dtype(v) for k, v in TORCH_DTYPES.items()}


def on_gpu(array: np.ndarray):
    import torch

    # torch has no from_numpy for every unsigned type: go through the bits.
    signed = {np.dtype(np.uint16): np.int16, np.dtype(np.uint32): np.int32}
    if array.dtype in signed:
        bits = torch.from_numpy(array.view(signed[array.dtype])).cuda()
        return bits.view(getattr(torch, array.dtype.name))
    if array.dtype == np.uint64:
        return torch.from_numpy(array.view(np.int64)).cuda().view(torch.uint64)
    return torch.from_numpy(array).cuda()


def on_host(tensor, dtype: np.dtype) -> np.ndarray:
    import torch

    bits = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    return tensor.view(bits).cpu().numpy().view(dtype)


def cast_kernel(source: str, target: str):
    """``out = T(x)`` for 16 lanes, written as a module of its own (one variant per pair)."""
    import importlib.util
    import tempfile
    from pathlib import Path

    text = (
        "from __future__ import annotations\n\nimport phobos.lang as ph\n\n\n@ph.kernel\n"
        f"def cast(x: ph.tensor[ph.{source}][N], out: ph.tensor[ph.{target}][N]):\n"
        f"    out[0:+{N}] = ph.{target}(x[0:+{N}])\n"
    )
    path = Path(tempfile.mkdtemp()) / f"cast_{source}_{target}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cast


@pytest.mark.parametrize("target", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"])
@pytest.mark.parametrize("source", ["f32", "f64", "f16"])
def test_float_to_int_casts_saturate_as_in_the_interpreter(source, target):
    kernel = cast_kernel(source, target)
    x = np.array(SPECIAL, NUMPY_DTYPES[source])
    expected = np.zeros(N, NUMPY_DTYPES[target])
    kernel[(1,)](x, expected)
    out = on_gpu(np.zeros(N, NUMPY_DTYPES[target]))
    kernel[(1,)](on_gpu(x), out)
    np.testing.assert_array_equal(on_host(out, NUMPY_DTYPES[target]), expected)


def divide_kernel(dtype: str):
    import importlib.util
    import tempfile
    from pathlib import Path

    text = (
        "from __future__ import annotations\n\nimport phobos.lang as ph\n\n\n@ph.kernel\n"
        f"def divide(a: ph.tensor[ph.{dtype}][N], b: ph.tensor[ph.{dtype}][N],\n"
        f"           q: ph.tensor[ph.{dtype}][N], r: ph.tensor[ph.{dtype}][N]):\n"
        f"    q[0:+{N}] = a[0:+{N}] // b[0:+{N}]\n"
        f"    r[0:+{N}] = a[0:+{N}] % b[0:+{N}]\n"
        "    q[16] = a[0] // b[0]\n"
        "    r[16] = a[0] % b[0]\n"
    )
    path = Path(tempfile.mkdtemp()) / f"divide_{dtype}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.divide


def typed(values: list[int], dtype: np.dtype) -> np.ndarray:
    """Python ints as ``dtype``, negative ones wrapped for an unsigned type."""
    bits = 8 * dtype.itemsize
    return np.array([v % (1 << bits) if dtype.kind == "u" else v for v in values], dtype)


@pytest.mark.parametrize("dtype", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"])
def test_integer_division_by_zero_as_in_the_interpreter(dtype):
    kernel = divide_kernel(dtype)
    np_dtype = NUMPY_DTYPES[dtype]
    info = np.iinfo(np_dtype)
    a = typed(
        [7, -7, 5, info.min, info.min, 0, 9, 100, info.max, 1, -1, 3, info.min, 13, -13, 0, 0],
        np_dtype,
    )
    b = typed([0, 0, 0, -1, 1, 0, -2, 3, 0, 0, 0, 7, 0, -5, 5, 3, 0], np_dtype)
    a[0], b[0] = 7, 0  # the scalar division: 7 / 0
    q, r = np.zeros(17, np_dtype), np.zeros(17, np_dtype)
    kernel[(1,)](a, b, q, r)
    gq, gr = on_gpu(np.zeros(17, np_dtype)), on_gpu(np.zeros(17, np_dtype))
    kernel[(1,)](on_gpu(a), on_gpu(b), gq, gr)
    np.testing.assert_array_equal(on_host(gq, np_dtype), q)
    np.testing.assert_array_equal(on_host(gr, np_dtype), r)
