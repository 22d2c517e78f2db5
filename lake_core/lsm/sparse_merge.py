"""Merging one large sorted run with a few small ones without sorting the large one (the usual
shape of a bucket read between compactions: a top level, and the recent commits above it).

Only the keys the small runs hold can have more than one row. So the large run's rows with those
keys are picked among the small runs' rows by the merge engine; every other row of the large
run is the only row of its key and stays as it is (an engine whose run is already merged,
``run_is_merged``), retractions dropped. Both sequences are sorted by key, so they are interleaved
by binary search, and the result is gathered in one ``take``: no sort of the large run, and no
group boundaries computed over it.

Used when the key is one column whose values NumPy can order as Java does (integers, dates,
timestamps, floats as their ``Double.compare`` bits) and the large run holds each key once;
otherwise the caller merges the whole chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND
from lake_core.merge.sort import numpy_column, numpy_key, sorted_find

#: the small runs together hold at most this share of the large run's rows: above, the full merge (a
#: pick on the key, sequence and kind columns only, then one gather) costs less; the probe pays off
#: below about 4% (measured beside a 250k-row run: 5.9 against 7.2 ms CPU at 0.5%, 7.4 against 6.8
#: at 5%, 12.5 against 8.1 at 10%)
_PICK_SMALL_SHARE = 0.03


def _probe(parts: Sequence[pa.Table], key: str, small_share: float) -> tuple[int, np.ndarray, np.ndarray] | None:
    """(index of the largest run, its keys, its sorted distinct row positions whose key a smaller
    run holds); None when the shape does not apply: one run, the small runs above ``small_share``
    of the large one, keys not NumPy-ordered, or a key stored twice in the large run."""
    if len(parts) < 2:
        return None
    big_i = max(range(len(parts)), key=lambda i: parts[i].num_rows)
    big = parts[big_i]
    small = sum(p.num_rows for i, p in enumerate(parts) if i != big_i)
    if small > small_share * big.num_rows:
        return None
    big_keys = numpy_key(big.column(key))
    if big_keys is None or (len(big_keys) > 1 and not np.all(big_keys[1:] > big_keys[:-1])):
        return None  # not NumPy-ordered, or a key stored twice in the run
    small_keys = [k for k in (numpy_key(p.column(key)) for i, p in enumerate(parts) if i != big_i) if k is not None]
    if len(small_keys) != len(parts) - 1:
        return None  # a small run's keys are not NumPy-comparable
    probe = np.concatenate(small_keys) if small_keys else big_keys[:0]
    at, found = sorted_find(big_keys, probe)
    return big_i, big_keys, _distinct_sorted(at[found])


def sparse_pick(
    parts: Sequence[pa.Table],
    key: str,
    pick: Callable[[pa.Table], np.ndarray],
    pick_columns: Sequence[str],
    columns: Sequence[str],
    small_share: float = _PICK_SMALL_SHARE,
) -> pa.Table | None:
    """:func:`sparse_merge` for an engine whose merged row is one of the stored rows (``pick``:
    the positions of the winning rows of a table of ``pick_columns``, retractions dropped): only
    the key, sequence and kind columns of the overlap are merged, and ``columns`` of the result
    are gathered from the runs in one ``take``. None when this shape does not apply."""
    probed = _probe(parts, key, small_share)
    if probed is None:
        return None
    big_i, big_keys, hits = probed
    big = parts[big_i]

    # where each part's rows start in the concatenation of the parts
    starts = np.cumsum([0] + [p.num_rows for p in parts])[:-1]
    # the rows of the keys several runs hold (the large run's in its place, so the runs stay oldest
    # first), narrowed to what the engine compares; ``source``: their positions in the concatenation
    overlap, source = [], []
    for i, p in enumerate(parts):
        narrow = p.select(pick_columns)
        if i == big_i:
            overlap.append(narrow.take(pa.array(hits)))
            source.append(starts[i] + hits)
        else:
            overlap.append(narrow)
            source.append(starts[i] + np.arange(p.num_rows))
    rows = pa.concat_tables(overlap)
    chosen = pick(rows)
    merged_keys = numpy_key(rows.column(key))
    if merged_keys is None:
        return None
    merged_keys = merged_keys[chosen]
    chosen = np.concatenate(source)[chosen]

    alone = np.ones(big.num_rows, dtype=bool)
    alone[hits] = False
    alone &= ~rowkind.is_retract(numpy_column(big.column(KIND)))
    keep = np.flatnonzero(alone)
    # merged keys never equal a kept key (those are the hits), so where they go is unambiguous
    slots = np.searchsorted(big_keys[keep], merged_keys) + np.arange(len(merged_keys))
    from_merged = np.zeros(len(keep) + len(merged_keys), dtype=bool)
    from_merged[slots] = True
    order = np.empty(len(from_merged), dtype=np.int64)
    order[from_merged] = chosen
    order[~from_merged] = starts[big_i] + keep
    return pa.concat_tables([p.select(columns) for p in parts]).take(pa.array(order))


def _distinct_sorted(positions: np.ndarray) -> np.ndarray:
    """``np.unique(positions)``: already so when one small run probed (its keys are sorted and
    distinct); else sorted and deduplicated (NumPy 2's ``unique`` costs 5x a sort here)."""
    if len(positions) < 2 or np.all(positions[1:] > positions[:-1]):
        return positions
    positions = np.sort(positions)
    keep = np.empty(len(positions), dtype=bool)
    keep[0] = True
    np.not_equal(positions[1:], positions[:-1], out=keep[1:])
    return positions[keep]


__all__ = ["sparse_pick"]
