"""Which keys of a merge, chunk by chunk in key order, are already stored in other sorted runs:
first-row compaction drops them (Java's ``FirstRowMergeFunctionWrapper`` asks ``LookupLevels``
whether a key is stored outside the unit).

Java looks each key up; here the probed runs (a level's files chained, or one level-0 file) are
read alongside the merge, key columns only, one chunk per run at a time: the merge's chunks
come in ascending key order, so a run's rows below a chunk are never needed again. Memory holds
(runs x chunk) keys, not the bucket; each probed file is read once per compaction.
"""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.format.float_order import java_order_key, sortable_array
from lake_core.lsm.merge_stream import count_below, key_at


class _Run:
    def __init__(self, chunks: Iterator[pa.Table]):
        self._chunks = chunks
        self.buf: pa.Table | None = None

    def current(self) -> pa.Table | None:
        """The buffered chunk, reading the next non-empty one when it ran empty (None: exhausted)."""
        while self.buf is None or self.buf.num_rows == 0:
            self.buf = next(self._chunks, None)
            if self.buf is None:
                return None
        return self.buf


class SortedKeyProbe:
    """``present(keys)``: which rows of ``keys`` hold a key stored in one of ``runs``.

    ``runs`` are chunk iterators of key-sorted tables holding at least the ``key_names`` columns;
    the ``keys`` of successive calls must be sorted and ascending across calls (a merge's output)."""

    def __init__(self, runs: Iterable[Iterator[pa.Table]], key_names: Sequence[str]):
        self._runs = [_Run(iter(r)) for r in runs]
        self._keys = list(key_names)

    def present(self, keys: pa.Table) -> np.ndarray:
        mask = np.zeros(keys.num_rows, dtype=bool)
        if keys.num_rows == 0:
            return mask
        lo = key_at(keys, self._keys, 0)
        hi = java_order_key(key_at(keys, self._keys, keys.num_rows - 1))
        for run in self._runs:
            while (buf := run.current()) is not None:
                n = count_below(buf, self._keys, lo)  # below this chunk: below every later chunk too
                if n:
                    run.buf = buf = buf.slice(n)
                    if buf.num_rows == 0:
                        continue
                if java_order_key(key_at(buf, self._keys, 0)) > hi:
                    break  # the run's next keys belong to a later chunk
                mask |= self._member(keys, buf)
                if java_order_key(key_at(buf, self._keys, buf.num_rows - 1)) > hi:
                    break  # keep the rest for the next chunk
                run.buf = None
        return mask

    def _member(self, keys: pa.Table, stored: pa.Table) -> np.ndarray:
        keys, stored = _comparable(keys, self._keys), _comparable(stored, self._keys)
        if len(self._keys) == 1:
            k = self._keys[0]
            return pc.is_in(keys.column(k), value_set=stored.column(k).combine_chunks()) \
                .to_numpy(zero_copy_only=False).astype(bool, copy=False)
        probe = keys.append_column("__row", pa.array(np.arange(keys.num_rows, dtype=np.int64)))
        hit = probe.join(stored, keys=self._keys, join_type="left semi", use_threads=False)
        out = np.zeros(keys.num_rows, dtype=bool)
        out[hit.column("__row").to_numpy()] = True
        return out


def _comparable(t: pa.Table, key_names: Sequence[str]) -> pa.Table:
    """The key columns, floats as their ``Double.compare`` bits: -0.0 and 0.0 are two keys, every
    NaN one (Arrow's equality says otherwise)."""
    cols = [t.column(k) for k in key_names]
    cols = [sortable_array(c) if pa.types.is_floating(c.type) else c for c in cols]
    return pa.table(cols, names=list(key_names))


__all__ = ["SortedKeyProbe"]
