"""Zero-copy NumPy views of Arrow column buffers (fixed-width values, string/binary offsets and
data, null masks), shared by the vectorized ``BinaryRow`` encoder and the bucket hash."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory
from lake_core.errors import SchemaMismatchError


def as_array(col: Any, t: pa.DataType) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = arrow_memory.one_array(col)
    elif not isinstance(col, pa.Array):
        col = pa.array(col, type=t)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if col.type != t:
        try:
            col = col.cast(t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatchError(f"column of type {col.type} cannot be encoded as {t}: {e}") from None
    return col


def null_mask(arr: pa.Array) -> np.ndarray | None:
    if arr.null_count == 0:
        return None
    return arr.is_null().to_numpy(zero_copy_only=False)


def fixed_values(arr: pa.Array, dtype: str, null: np.ndarray | None) -> np.ndarray:
    """Zero-copy view of a fixed-width Arrow buffer (nulls forced to 0, like Java's zero slot)."""
    buf = arr.buffers()[1]
    if buf is None:  # e.g. an all-null array without a data buffer
        return np.zeros(len(arr), dtype)
    values = np.frombuffer(buf, dtype=dtype, count=len(arr) + arr.offset)[arr.offset :]
    if null is not None:
        values = np.where(null, 0, values).astype(dtype, copy=False)
    return values


def ragged_index(lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ragged ranges of ``lens`` items laid end to end: ``first`` (exclusive cumsum, where
    range i starts) and ``within`` (each item's position inside its own range)."""
    first = np.cumsum(lens) - lens
    within = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(first, lens)
    return first, within


def unaligned_words(data: np.ndarray) -> np.ndarray:
    """uint64 view whose element p holds ``data[p:p+8]`` (little-endian, zero past the end), so
    any byte range can be read a word at a time."""
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[: len(data)] = data
    return np.ndarray((len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))


# LOW_BYTES[r] keeps the first r (0..8) bytes of a little-endian word.
LOW_BYTES = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)


def bytes_layout(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, lens, data)`` of a string/binary column: value i is
    ``data[starts[i]:starts[i]+lens[i]]`` (meaningless for null rows)."""
    if (
        pa.types.is_fixed_size_binary(arr.type)
        or pa.types.is_string_view(arr.type)
        or pa.types.is_binary_view(arr.type)
    ):
        arr = arr.cast(pa.large_binary())
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=arr.offset + len(arr) + 1)[
        arr.offset :
    ].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets[:-1], np.diff(offsets), data
