"""Paimon's ``LookupMergeFunction`` (tables with ``changelog-producer`` = ``lookup``): a key's row
written at a level >= 1 already holds the key's whole merged value (the compaction looked up the
older value and merged it in), while the older copies may still sit in higher levels. So among a
key's rows from levels >= 1 only the newest is merged, with the key's level-0 rows: merging every
copy would count an aggregation (or a partial update's retraction) twice. Used by merge-on-read
and by compaction rewrites of such tables.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_ROW, _HLEVEL = "__lookup_row", "__lookup_hlevel"
LEVEL = "_LEVEL"  # the level of each row's file, for merges that depend on it


def with_level(chunks, level: int):
    """The chunks of one file with its level as column ``_LEVEL``."""
    for chunk in chunks:
        yield chunk.append_column(LEVEL, pa.array(np.full(chunk.num_rows, level, np.int32)))


def newest_high_level_mask(rows: pa.Table, key_names: Sequence[str], levels: np.ndarray) -> np.ndarray | None:
    """Which rows to merge (None: all of them): every level-0 row, and of each key's rows at
    levels >= 1 the one at the lowest level (data only moves up, so it is the newest; a sorted run
    holds a key once)."""
    high = levels > 0
    if int(np.count_nonzero(high)) <= 1:
        return None
    hlevel = pa.array(levels.astype(np.int32), pa.int32(), mask=~high)
    t = (
        rows.select(list(key_names))
        .append_column(_ROW, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        .append_column(_HLEVEL, hlevel)
    )
    newest = t.group_by(list(key_names), use_threads=False).aggregate([(_HLEVEL, "min"), (_HLEVEL, "count")])
    if newest.num_rows and int(pc.max(newest[_HLEVEL + "_count"]).as_py() or 0) <= 1:
        return None  # no key has two copies above level 0
    joined = t.join(
        newest.select(list(key_names) + [_HLEVEL + "_min"]),
        keys=list(key_names),
        join_type="left outer",
        use_threads=False,
    )
    idx = joined[_ROW].to_numpy()
    top = joined[_HLEVEL + "_min"].fill_null(-1).to_numpy()
    keep = np.ones(rows.num_rows, bool)
    keep[idx] = ~high[idx] | (levels[idx] == top)
    return keep


def needs_lookup_merge(store) -> bool:
    """Whether ``store`` merges with Paimon's ``LookupMergeFunction`` and it changes the result
    (partial-update and aggregation; the newest row wins anyway for deduplicate and first-row)."""
    return (
        bool(store.schema.primary_keys)
        and store.options.changelog_producer == "lookup"
        and store.merge_engine().lookup_needs_old_value
    )


__all__ = ["LEVEL", "newest_high_level_mask", "needs_lookup_merge", "with_level"]
