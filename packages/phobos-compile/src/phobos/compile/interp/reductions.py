"""``Reduce`` and ``Dot``: absent lanes count as the operation's identity.

A result lane is absent only when every lane it combines is absent.  The
identities and combines are ``ir/reduction_ops.py``'s.  Sums and products of
f16/bf16, and dots of f16/bf16, accumulate in f32 (as the GPU's reductions and
tensor cores do) and round once to the result type.
"""

from __future__ import annotations

import numpy as np

from phobos.compile.interp.dtypes import compute_dtype, round_to_bf16
from phobos.compile.interp.tiles import Tile, both_valid
from phobos.compile.ir import reduction_ops


def identity(op: str, dtype: str) -> np.generic:
    """The value an absent lane of a ``dtype`` operand counts as (``ir/reduction_ops.py``)."""
    return compute_dtype(dtype).type(reduction_ops.identity(op, dtype))


def reduce(op: str, tile: Tile, axis: int, operand_dtype: str, result_dtype: np.dtype):
    """Reduce ``tile`` along ``axis``; a 1-D tile gives a scalar (the identity if all absent)."""
    values = tile.present(identity(op, operand_dtype))
    accumulate = compute_dtype(reduction_ops.accumulator(op, operand_dtype))
    combine = getattr(np, reduction_ops.REDUCTIONS[op].numpy)
    reduced = combine.reduce(values, axis=axis, dtype=accumulate).astype(result_dtype)
    if operand_dtype == "bf16":
        reduced = round_to_bf16(reduced)
    if tile.values.ndim == 1:
        return result_dtype.type(reduced)
    return Tile(reduced, None if tile.valid is None else tile.valid.any(axis=axis))


def dot(a: Tile, b: Tile, acc: Tile, result_dtype: str) -> Tile:
    """``acc + a @ b``, with absent lanes of ``a`` and ``b`` as zeros."""
    result = compute_dtype(result_dtype)
    if a.values.dtype.kind == "f":
        wide = np.float64 in (a.values.dtype, result)
        accumulate = np.dtype(np.float64 if wide else np.float32)
    else:
        accumulate = result
    zero = a.values.dtype.type(0)
    product = a.present(zero).astype(accumulate) @ b.present(zero).astype(accumulate)
    values = (acc.values.astype(accumulate) + product).astype(result)
    if result_dtype == "bf16":
        values = round_to_bf16(values)
    return Tile(values, both_valid(acc.valid, _some_product_present(a, b)))


def _some_product_present(a: Tile, b: Tile) -> np.ndarray | None:
    """Which lanes of ``a @ b`` have at least one pair of present operands."""
    if a.valid is None and b.valid is None:
        return None
    a_valid = np.ones(a.values.shape, np.float32) if a.valid is None else a.valid.astype(np.float32)
    b_valid = np.ones(b.values.shape, np.float32) if b.valid is None else b.valid.astype(np.float32)
    return (a_valid @ b_valid) > 0
