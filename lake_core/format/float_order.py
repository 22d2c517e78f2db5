"""Java's ``Double.compare``/``Float.compare`` order for float values, vectorized.

Paimon compares key fields (merge grouping, key sorting, predicates) with these semantics:
every NaN equals every other NaN and sorts above +inf; -0.0 sorts below 0.0, so they are two
keys. Mapping a float to the integer of its IEEE bits (NaN canonicalised, negative values
flipped) gives exactly that order as plain integer order.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory


def sortable_bits(values: np.ndarray) -> np.ndarray:
    """int32/int64 per float32/float64 value, ordered and equal as ``Double.compare``."""
    itype = np.int32 if values.dtype.itemsize == 4 else np.int64
    canon = np.where(np.isnan(values), values.dtype.type(np.nan), values)  # one NaN, as doubleToLongBits
    bits: np.ndarray = canon.astype(values.dtype, copy=False).view(itype)
    return np.where(bits < 0, bits ^ np.iinfo(itype).max, bits)


def sortable_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``sortable_bits`` of a float Arrow array, keeping its NULLs."""
    arr = arrow_memory.one_array(arr)
    values = arr.fill_null(0).to_numpy(zero_copy_only=False) if arr.null_count else arr.to_numpy(zero_copy_only=False)
    mask = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    return pa.array(sortable_bits(values), mask=mask)


def sortable_scalar(value: float, width: int = 8) -> int:
    """``sortable_bits`` of one Python float (as a float32 when ``width`` is 4)."""
    fmt, ifmt, top = ("<f", "<i", 0x7FFFFFFF) if width == 4 else ("<d", "<q", 0x7FFFFFFFFFFFFFFF)
    if value != value:
        value = float("nan")
    (bits,) = struct.unpack(ifmt, struct.pack(fmt, value))
    return bits ^ top if bits < 0 else bits


def java_order_key(values: Any) -> tuple:
    """A key tuple whose Python order is Java's (floats mapped by ``sortable_scalar``)."""
    return tuple(sortable_scalar(v) if isinstance(v, float) else v for v in values)
