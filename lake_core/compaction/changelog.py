"""Changelog rows from a key's value before and after a compaction, as Paimon's
``LookupChangelogMergeFunctionWrapper.setChangelog`` and ``FullChangelogMergeFunctionWrapper``
decide them, vectorized over aligned Arrow tables:

- no (live) value before, an added value after: ``+I`` (after);
- a value before, a retraction after (the key was deleted): ``-D`` (before);
- a value before and after: ``-U`` (before), ``+U`` (after), unless
  ``changelog-producer.row-deduplicate`` is on and the two values are equal;
- no value before and a retraction after: nothing.

Rows keep their own ``_SEQUENCE_NUMBER``; the output is in the order of ``after`` (key order), a
key's ``-U`` before its ``+U``, as Java writes them while merging.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND, SEQ


def _is_add(kinds: np.ndarray) -> np.ndarray:
    return (kinds == rowkind.INSERT) | (kinds == rowkind.UPDATE_AFTER)


def values_equal(before: pa.Table, after: pa.Table, names) -> np.ndarray:
    """Row-wise equality of the value columns ``names`` (NULL equals NULL, nested values compared
    whole), as Java's record equaliser in ``changelog-producer.row-deduplicate``."""
    import polars as pl  # noqa: PLC0415 - polars (about 0.3 s and 35 MB to import) only where a checksum or diff is computed, not in every process importing lake_core

    n = after.num_rows
    equal = np.ones(n, bool)
    if n == 0:
        return equal
    b = pl.from_arrow(before.select(list(names)))
    a = pl.from_arrow(after.select(list(names)))
    if isinstance(b, pl.Series):  # a single column comes back as a Series
        b = b.to_frame()
    if isinstance(a, pl.Series):
        a = a.to_frame()
    for name in names:
        equal &= a[name].eq_missing(b[name]).fill_null(False).to_numpy()
    return equal


def changelog_rows(
    before: pa.Table, has_before: np.ndarray, after: pa.Table, *, value_names, row_deduplicate: bool
) -> pa.Table:
    """The changelog of keys whose value went from ``before`` to ``after``. Both tables hold the
    table's columns plus ``_SEQUENCE_NUMBER``/``_VALUE_KIND``, one row per key, aligned (row i is the
    same key); ``has_before[i]`` False means the key had no stored value (row i of ``before`` is
    ignored)."""
    n = after.num_rows
    before = before.select(after.column_names)
    after_add = _is_add(after[KIND].to_numpy()) if n else np.zeros(0, bool)
    before_kinds = (
        np.asarray(before[KIND].fill_null(rowkind.DELETE).to_numpy(zero_copy_only=False)) if n else np.zeros(0, np.int8)
    )
    before_add = has_before & _is_add(before_kinds)
    both = before_add & after_add
    if row_deduplicate and both.any():
        idx = np.flatnonzero(both)
        same = values_equal(before.take(idx), after.take(idx), value_names)
        both[idx[same]] = False
        unchanged = np.zeros(n, bool)
        unchanged[idx[same]] = True
    else:
        unchanged = np.zeros(n, bool)
    insert = ~before_add & after_add
    delete = before_add & ~after_add & ~unchanged
    b_mask = both | delete
    a_mask = both | insert
    b_idx, a_idx = np.flatnonzero(b_mask), np.flatnonzero(a_mask)
    b_rows = before.take(b_idx)
    a_rows = after.take(a_idx)
    b_kind = np.where(both[b_idx], rowkind.UPDATE_BEFORE, rowkind.DELETE).astype(np.int8)
    a_kind = np.where(both[a_idx], rowkind.UPDATE_AFTER, rowkind.INSERT).astype(np.int8)
    kind_field = after.schema.field(KIND)
    b_rows = b_rows.set_column(b_rows.schema.get_field_index(KIND), kind_field, pa.array(b_kind, kind_field.type))
    a_rows = a_rows.set_column(a_rows.schema.get_field_index(KIND), kind_field, pa.array(a_kind, kind_field.type))
    out = pa.concat_tables([b_rows.cast(after.schema), a_rows])
    # key order, the retraction of a key first
    order = np.argsort(np.concatenate([b_idx * 2, a_idx * 2 + 1]), kind="stable")
    return out.take(pa.array(order, pa.int64()))


__all__ = ["changelog_rows", "values_equal", "SEQ", "KIND"]
