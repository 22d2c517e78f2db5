"""A k-way merge of sorted runs in vectorized chunks, so compaction and merge-on-read hold
(runs x chunk) rows and not the bucket (Java merges record by record: ``SortMergeReader``).

Every input is sorted by key. Each round reads the next chunk of the runs whose buffer ran empty
and takes the smallest of the still-open runs' last buffered keys as the bound: no run can hold
a key below it beyond its buffer, so the rows with keys < bound are complete key groups and are
merged now; the rest is carried over, and the runs ending at the bound read their next chunk onto
it. So even a run holding one key many times (Paimon stores a key once per file, but its readers
do not rely on it) has that key merged whole, never split across rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core import arrow_memory
from lake_core.format.float_order import java_order_key, sortable_array, sortable_scalar


class _Cursor:
    def __init__(self, chunks: Iterator[pa.Table], rows: int | None = None):
        self._chunks = chunks
        self.buf: pa.Table | None = None
        self.exhausted = False
        self._left = rows  # rows the run is expected to hold and not yet read

    def fill(self) -> None:
        while (self.buf is None or self.buf.num_rows == 0) and not self.exhausted:
            self.extend()

    def extend(self) -> None:
        """Append the run's next non-empty chunk to the buffer (or mark the run exhausted)."""
        for chunk in self._chunks:
            if chunk.num_rows:
                self.buf = chunk if self.buf is None or self.buf.num_rows == 0 else pa.concat_tables([self.buf, chunk])
                if self._left is not None:
                    self._left -= chunk.num_rows
                    if self._left == 0:
                        # every expected row is in: ask the run for its end now (its reader checks the
                        # row count as it ends; a chunk beyond it is appended), so this round can
                        # merge the whole buffer instead of stopping at its last key
                        self._left = None
                        self.extend()
                return
        self.exhausted = True

    @property
    def has_rows(self) -> bool:
        return self.buf is not None and self.buf.num_rows > 0


def key_at(buf: pa.Table, keys: Sequence[str], i: int) -> tuple:
    """The key of row ``i`` of ``buf`` (Python values)."""
    row = buf.slice(i, 1)
    return tuple(row.column(k)[0].as_py() for k in keys)


def _last_key(buf: pa.Table, keys: Sequence[str]) -> tuple:
    return key_at(buf, keys, buf.num_rows - 1)


def count_below(buf: pa.Table, keys: Sequence[str], bound: tuple) -> int:
    """Rows of the sorted ``buf`` whose key is < ``bound`` (they form a prefix). Float keys are
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
            arr = arrow_memory.one_array(col).to_numpy()
            return int(np.searchsorted(arr, bounds[0], side="left"))
    lt = None
    eq_prefix = None  # all earlier key columns equal to the bound
    for col, b in zip(cols, bounds):
        s = pa.scalar(b, col.type)
        less = pc.less(col, s)
        term = less if eq_prefix is None else pc.and_(eq_prefix, less)
        lt = term if lt is None else pc.or_(lt, term)
        equal = pc.equal(col, s)
        eq_prefix = equal if eq_prefix is None else pc.and_(eq_prefix, equal)
    return int(pc.sum(pc.cast(lt, pa.int64())).as_py() or 0)


def merge_sorted_runs(
    runs: Sequence[Iterator[pa.Table]],
    keys: Sequence[str],
    merge: Callable[[pa.Table], pa.Table],
    sizes: Sequence[int | None] | None = None,
    merge_parts: Callable[[list[pa.Table]], pa.Table | None] | None = None,
) -> Iterator[pa.Table]:
    """Merged chunks, in key order. ``runs`` are chunk iterators of key-sorted files, oldest
    first (so a stable sort keeps each key's rows in sequence order); ``merge`` reduces one
    chunk's key groups (every group in a chunk is complete). Reads lazily: a run's next chunk is
    read only once its buffer is merged up to its last key. ``sizes``: the rows each run is
    expected to hold (a file's row count), so a run read to its end is known ended at once.
    ``merge_parts``: tried first on a round's parts (one per run, oldest first); None from it means
    ``merge`` of their concatenation."""
    cursors = [_Cursor(iter(r), sizes[i] if sizes is not None else None) for i, r in enumerate(runs)]
    while True:
        for c in cursors:
            c.fill()
        live = [c for c in cursors if c.has_rows]
        if not live:
            return
        pending = [c for c in live if not c.exhausted]
        if not pending:  # every run is fully buffered: the rest is complete
            parts = [c.buf for c in live]
            for c in live:
                c.buf = None
        else:
            last = [(_last_key(c.buf, keys), c) for c in pending]
            # the smallest in Java's order (Python's min puts -0.0 == 0.0 and cannot order NaN)
            bound_order = min(java_order_key(k) for k, _c in last)
            bound = next(k for k, _c in last if java_order_key(k) == bound_order)
            parts = []
            for c in live:
                buf = c.buf
                assert buf is not None  # live: it has rows
                n = count_below(buf, keys, bound)
                if n:
                    parts.append(buf.slice(0, n))
                    c.buf = buf.slice(n)
            # the runs ending at the bound kept only its rows: they read on at once
            for k, c in last:
                if java_order_key(k) == bound_order:
                    c.extend()
            if not parts:  # every buffered row was at the bound
                continue
        if merge_parts is not None and len(parts) > 1:
            out = merge_parts(parts)
            if out is not None:
                yield out
                continue
        rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        yield merge(rows)
