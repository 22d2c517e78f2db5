"""Arrow columns as NumPy values and back: ints, floats, temporal types (as their integer view)
and DECIMAL(p<=18) (as unscaled int64), with a validity mask for NULLs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def validity(values: pa.Array) -> np.ndarray:
    if values.null_count == 0:
        return np.ones(len(values), bool)
    return values.is_valid().to_numpy(zero_copy_only=False)


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t)


def _int_view_type(t: pa.DataType) -> pa.DataType:
    return pa.int64() if t.bit_width == 64 else pa.int32()


def numeric_view(values: pa.Array, fill) -> tuple[np.ndarray, np.ndarray] | None:
    """(NumPy values with NULLs replaced by ``fill``, validity) for ints, floats, temporal types
    and DECIMAL(p<=18) (as unscaled int64); None when the type has no NumPy form."""
    t = values.type
    valid = validity(values)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        arr = values
    elif _is_temporal(t):
        arr = values.view(_int_view_type(t))
    elif pa.types.is_decimal128(t) and t.precision <= 18:
        x = _decimal_to_int64(values)
        if not valid.all():
            x = np.where(valid, x, fill)
        return x, valid
    else:
        return None
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(fill, arr.type))
    return arr.to_numpy(zero_copy_only=False), valid


def from_numeric(x: np.ndarray, valid: np.ndarray | None, t: pa.DataType) -> pa.Array:
    mask = None if valid is None or valid.all() else ~valid
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pa.array(x.astype(t.to_pandas_dtype(), copy=False), type=t, mask=mask)
    if _is_temporal(t):
        vt = _int_view_type(t)
        return pa.array(x.astype(vt.to_pandas_dtype(), copy=False), type=vt, mask=mask).view(t)
    if pa.types.is_decimal128(t):
        return _int64_to_decimal(x.astype(np.int64, copy=False), mask, t)
    raise TypeError(t)


def _decimal_to_int64(values: pa.Array) -> np.ndarray:
    """Unscaled int64 of a decimal128 array whose values fit in 64 bits (precision <= 18)."""
    buf = values.buffers()[1]
    words = np.frombuffer(buf, dtype=np.int64, count=2 * (len(values) + values.offset))
    return words[2 * values.offset :: 2].copy()


def _int64_to_decimal(x: np.ndarray, mask: np.ndarray | None, t: pa.DataType) -> pa.Array:
    words = np.empty(2 * len(x), np.int64)
    words[0::2] = x
    words[1::2] = x >> 63  # sign extension of the 128-bit two's complement
    validity = None
    null_count = 0
    if mask is not None and mask.any():
        validity = pa.array(~mask).buffers()[1]
        null_count = int(mask.sum())
    return pa.Array.from_buffers(t, len(x), [validity, pa.py_buffer(words.tobytes())], null_count=null_count)
