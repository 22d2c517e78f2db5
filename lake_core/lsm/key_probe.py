"""Which keys of a merge, chunk by chunk in key order, are already stored in other sorted runs:
first-row compaction drops them (Java's ``FirstRowMergeFunctionWrapper`` asks ``LookupLevels``
whether a key is stored outside the unit).

Java looks each key up in a local lookup file built per data file; here the probed runs (a level's
files in key order, or one level-0 file) are walked alongside the merge. The merge hands over its
chunks in ascending key order, so a run's keys below a chunk are never needed again. A run is a
sequence of key-range blocks (files, split into their row groups once a probed key falls in the
file's range): a block no probed key falls in is never read, so a small commit reads the key
columns of the row groups its keys land in, not the bucket. A block that is read is read key
columns only, one chunk at a time: memory holds (runs x chunk) keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.format.float_order import java_order_key, sortable_array
from lake_core.lsm.merge_stream import count_below, key_at


@dataclass(frozen=True)
class KeyBlock:
    """Keys ``lo``..``hi`` (inclusive bounds, Python values) of a run, read by ``read()`` in key
    order; ``split()``: the same keys as finer blocks (row groups), or None."""

    lo: tuple
    hi: tuple
    read: Callable[[], Iterator[pa.Table]]
    split: Callable[[], Sequence[KeyBlock] | None] | None = None


class _Run:
    def __init__(self, blocks: Sequence[KeyBlock]):
        self.blocks = list(reversed(blocks))  # a stack: the next block last
        self.active: Iterator[pa.Table] | None = None
        self.buf: pa.Table | None = None


class SortedKeyProbe:
    """``present(keys)``: which rows of ``keys`` hold a key stored in one of ``runs``.

    Each run is a sequence of :class:`KeyBlock` in ascending, non-overlapping key order; the
    ``keys`` of successive calls must be sorted and ascending across calls (a merge's output)."""

    def __init__(self, runs: Sequence[Sequence[KeyBlock]], key_names: Sequence[str]):
        self._runs = [_Run(r) for r in runs]
        self._keys = list(key_names)

    def present(self, keys: pa.Table) -> np.ndarray:
        mask = np.zeros(keys.num_rows, dtype=bool)
        if keys.num_rows == 0:
            return mask
        lo = key_at(keys, self._keys, 0)
        hi = java_order_key(key_at(keys, self._keys, keys.num_rows - 1))
        for run in self._runs:
            self._probe(run, keys, lo, hi, mask)
        return mask

    def _probe(self, run: _Run, keys: pa.Table, lo: tuple, hi: tuple, mask: np.ndarray) -> None:
        while True:
            if run.buf is not None:
                buf = run.buf
                n = count_below(buf, self._keys, lo)  # below this chunk: below every later chunk too
                if n == buf.num_rows:
                    run.buf = None
                    continue
                buf = run.buf = buf.slice(n)
                if java_order_key(key_at(buf, self._keys, 0)) > hi:
                    return  # the run's next keys belong to a later chunk
                mask |= self._member(keys, buf)
                if java_order_key(key_at(buf, self._keys, buf.num_rows - 1)) > hi:
                    return  # keep the rest for the next chunk
                run.buf = None
            elif run.active is not None:
                run.buf = next(run.active, None)
                if run.buf is None:
                    run.active = None
            elif not run.blocks:
                return
            else:
                block = run.blocks[-1]
                if java_order_key(block.lo) > hi:
                    return
                if not self._any_within(keys, block):
                    if java_order_key(block.hi) > hi:
                        return  # a later chunk may still fall in it
                    run.blocks.pop()
                    continue
                run.blocks.pop()
                finer = block.split() if block.split is not None else None
                if finer is not None:
                    run.blocks.extend(reversed(finer))
                else:
                    run.active = block.read()

    def _any_within(self, keys: pa.Table, block: KeyBlock) -> bool:
        """Whether a key of the sorted ``keys`` lies in ``block.lo``..``block.hi``."""
        first = count_below(keys, self._keys, block.lo)
        if first == keys.num_rows:
            return False
        return java_order_key(key_at(keys, self._keys, first)) <= java_order_key(block.hi)

    def _member(self, keys: pa.Table, stored: pa.Table) -> np.ndarray:
        keys, stored = _comparable(keys, self._keys), _comparable(stored, self._keys)
        if len(self._keys) == 1:
            k = self._keys[0]
            return (
                pc.is_in(keys.column(k), value_set=stored.column(k).combine_chunks())
                .to_numpy(zero_copy_only=False)
                .astype(bool, copy=False)
            )
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


__all__ = ["KeyBlock", "SortedKeyProbe"]
