"""A k-way merge of sorted runs in vectorized chunks, so compaction memory is bounded by
(runs x chunk) and not by the bucket.

Every input file is sorted by key and holds each key at most once. Each round reads the next
chunk of the files whose buffer ran empty, takes the smallest of the buffers' last keys as the
bound, and cuts from every buffer the prefix with keys <= bound: no file can hold such a key
beyond its buffer, so those rows are complete and are merged now; the rest is carried over.
"""
from __future__ import annotations

from typing import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.format.float_order import java_order_key, sortable_array, sortable_scalar


class _Cursor:
    def __init__(self, chunks: Iterator[pa.Table]):
        self._chunks = chunks
        self.buf: pa.Table | None = None
        self.exhausted = False

    def fill(self) -> None:
        while (self.buf is None or self.buf.num_rows == 0) and not self.exhausted:
            try:
                self.buf = next(self._chunks)
            except StopIteration:
                self.exhausted = True
                self.buf = None

    @property
    def has_rows(self) -> bool:
        return self.buf is not None and self.buf.num_rows > 0


def _last_key(buf: pa.Table, keys: Sequence[str]) -> tuple:
    row = buf.slice(buf.num_rows - 1, 1)
    return tuple(row.column(k)[0].as_py() for k in keys)


def _count_le(buf: pa.Table, keys: Sequence[str], bound: tuple) -> int:
    """Rows of the sorted ``buf`` whose key is <= ``bound`` (they form a prefix). Float keys are
    compared in Java's ``Double.compare`` order (-0.0 < 0.0, NaN largest), the order runs are
    sorted in."""
    cols, bounds = [], []
    for k, b in zip(keys, bound):
        col = buf.column(k)
        if pa.types.is_floating(col.type):
            width = 4 if col.type == pa.float32() else 8
            col, b = sortable_array(col), sortable_scalar(b, width)
        cols.append(col)
        bounds.append(b)
    if len(cols) == 1:
        col = cols[0]
        if pa.types.is_integer(col.type) and col.null_count == 0:
            arr = col.to_numpy() if isinstance(col, pa.Array) or col.num_chunks == 1 \
                else col.combine_chunks().to_numpy()
            return int(np.searchsorted(arr, bounds[0], side="right"))
    le = None
    eq_prefix = None  # all earlier key columns equal to the bound
    for col, b in zip(cols, bounds):
        s = pa.scalar(b, col.type)
        less = pc.less(col, s)
        equal = pc.equal(col, s)
        term = less if eq_prefix is None else pc.and_(eq_prefix, less)
        le = term if le is None else pc.or_(le, term)
        eq_prefix = equal if eq_prefix is None else pc.and_(eq_prefix, equal)
    le = pc.or_(le, eq_prefix)
    return int(pc.sum(pc.cast(le, pa.int64())).as_py() or 0)


def merge_sorted_runs(runs: Sequence[Iterator[pa.Table]], keys: Sequence[str],
                      merge: Callable[[pa.Table], pa.Table]) -> Iterator[pa.Table]:
    """Merged chunks, in key order. ``runs`` are chunk iterators of key-sorted files, oldest
    first (so a stable sort keeps each key's rows in sequence order); ``merge`` reduces one
    chunk's key groups (every group in a chunk is complete)."""
    cursors = [_Cursor(iter(r)) for r in runs]
    while True:
        for c in cursors:
            c.fill()
        live = [c for c in cursors if c.has_rows]
        if not live:
            return
        pending = [c for c in live if not c.exhausted]
        # the smallest in Java's order (Python's min puts -0.0 == 0.0 and cannot order NaN)
        bound = min((_last_key(c.buf, keys) for c in pending), key=java_order_key) if len(live) > 1 else None
        parts = []
        for c in live:
            n = c.buf.num_rows if bound is None else _count_le(c.buf, keys, bound)
            if n:
                parts.append(c.buf.slice(0, n))
                c.buf = c.buf.slice(n)
        rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        yield merge(rows)
