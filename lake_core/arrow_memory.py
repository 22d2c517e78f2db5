"""NumPy arrays in Arrow's memory pool, for the large temporaries of hot paths (a merge's keys,
orders and positions).

NumPy takes its memory from the C library's allocator, which maps an array of a few MB fresh and
unmaps it when freed: each such array costs one page fault per 4 KiB page it touches, every time
(a cold merged read of the benchmark table took ~8,000 of them, most of its system time). Arrow's
pool keeps freed memory for the next allocation and maps large pages, so the same arrays there
fault a handful of times. The arrays returned here own their memory (an Arrow buffer) and are
ordinary writable NumPy arrays otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def empty(n: int, dtype: np.dtype | type) -> np.ndarray:
    """An uninitialised array of ``n`` values of ``dtype``."""
    dt = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * dt.itemsize), dt, count=n)


def filled(count: int, value: int) -> np.ndarray:
    """``np.full(count, value, dtype=np.int64)``."""
    out = empty(count, np.int64)
    out.fill(value)
    return out


#: rows of the ascending block :func:`arange` adds its start to, a slice at a time
_IOTA_ROWS = 1 << 16
_iota: np.ndarray | None = None


def arange(start: int, count: int) -> np.ndarray:
    """``np.arange(start, start + count, dtype=np.int64)``."""
    global _iota
    if _iota is None:
        _iota = np.arange(_IOTA_ROWS, dtype=np.int64)  # built once (any thread; all build the same)
    out = empty(count, np.int64)
    for i in range(0, count, _IOTA_ROWS):
        m = min(_IOTA_ROWS, count - i)
        np.add(_iota[:m], start + i, out=out[i : i + m])
    return out


def concatenate(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """``np.concatenate(arrays)`` of one-dimensional arrays of one dtype (a single array is
    returned as it is, not copied)."""
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate(arrays, out=empty(sum(len(a) for a in arrays), arrays[0].dtype))


def take(values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``values[positions]`` for positions known to be within ``values`` (computed from it)."""
    # mode="clip": with an ``out``, NumPy's default bounds mode first gathers into a buffer of its own
    return np.take(values, positions, out=empty(len(positions), values.dtype), mode="clip")


def compress(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values[mask]`` for a boolean ``mask`` as long as one-dimensional ``values`` of a
    fixed-width type."""
    # Arrow's filter: NumPy's (also np.compress) first lists the kept positions in memory of its own
    return computed(pc.filter(pa.array(values), pa.array(mask)))


def one_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """``column`` as one Arrow array: a chunked column's only chunk as it is (Arrow's
    ``combine_chunks`` copies even a single chunk), several chunks concatenated."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def computed(array: pa.Array) -> np.ndarray:
    """A writable NumPy view of ``array``, a null-free array of a fixed-width numeric type that an
    Arrow kernel has just returned (its memory is held by nothing else). Arrow's own ``to_numpy``
    is read-only, and ``np.take`` copies read-only positions into memory of its own before every
    gather (one page fault per 4 KiB of them)."""
    buffer = array.buffers()[1]
    if array.null_count or buffer is None or not buffer.is_mutable:
        return array.to_numpy()
    dtype = np.dtype(array.type.to_pandas_dtype())
    return np.frombuffer(buffer, dtype, count=len(array), offset=array.offset * dtype.itemsize)
