"""Phobos dtypes as numpy dtypes, and bf16 without a numpy bf16 type.

Values are computed in the numpy type of their Phobos dtype, so f16 math rounds
to f16 after every operation as the GPU does.  numpy has no bf16, so a bf16 value
is held as a float32 that is exactly representable in bf16: every operation that
makes a bf16 value rounds its float32 result to the nearest bf16 (ties to even).
bf16 tensors are numpy arrays of ``ml_dtypes.bfloat16``; they are read and written
through a uint16 view of their bits, so the interpreter needs ml_dtypes only to
recognise them.
"""

from __future__ import annotations

import numpy as np

_NUMPY = {
    "bool": np.dtype(np.bool_),
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(np.float32),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    # The interpreter always computes indices in 64 bits.
    "index": np.dtype(np.int64),
}


def compute_dtype(dtype: str) -> np.dtype:
    """The numpy dtype the interpreter holds values of ``dtype`` in."""
    return _NUMPY[dtype]


def bfloat16() -> np.dtype | None:
    """numpy's dtype for bf16 arrays, or None when ml_dtypes is not installed."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def array_dtype(dtype: str) -> np.dtype | None:
    """The dtype a numpy array for a ``tensor<dtype>`` must have (None: bf16 without ml_dtypes)."""
    return bfloat16() if dtype == "bf16" else _NUMPY[dtype]


def round_to_bf16(values):
    """Round float32 values (array or scalar) to the nearest bf16, ties to even; NaN stays NaN."""
    # At least 1-D: numpy warns about wrapping uint32 arithmetic on scalars, not on arrays.
    as_f32 = np.array(values, dtype=np.float32, ndmin=1)
    bits = as_f32.view(np.uint32)
    lowest_kept = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lowest_kept) & np.uint32(0xFFFF0000)
    quiet_nan = (bits & np.uint32(0xFFFF0000)) | np.uint32(0x00400000)
    out = np.where(np.isnan(as_f32), quiet_nan, rounded).view(np.float32)
    return out if np.ndim(values) else out[0]


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) to the float32 values they stand for."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """bf16-exact float32 values to their bf16 bit patterns (uint16)."""
    return (np.asarray(values, dtype=np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
