"""The diff of two merged states of one bucket, vectorized (Java ``IncrementalDiffSplitRead``'s
``DiffMerger`` with deletes kept): per key, a row only in the start state comes back as ``-D``, a
row only in the end state as it is (its own kind), a row in both whose values differ as the end
row, and an unchanged row not at all. Values are compared whole, NULL equal to NULL and NaN to NaN
(Java compares the binary rows)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core import arrow_memory
from lake_core.errors import FormatError
from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.merge.sort import group_rows


def diff_rows(before: pa.Table, after: pa.Table, key_columns: Sequence[str], columns: Sequence[str]) -> pa.Table:
    """``before`` and ``after``: one row per key, ``columns`` plus ``_VALUE_KIND``. Returns the diff
    rows (same columns), ordered by key."""
    both = pa.concat_tables(
        [before.select(list(columns) + [KIND]), after.select(list(columns) + [KIND])], promote_options="permissive"
    )
    side = np.concatenate([np.zeros(before.num_rows, np.int64), np.ones(after.num_rows, np.int64)])
    groups = group_rows(both.append_column(SEQ, pa.array(side)), tuple(key_columns))
    size = groups.ends - groups.starts
    if np.any(size > 2):
        raise FormatError("a merged state holds a key twice; refusing to diff it")  # merged reads are per key
    first, last = groups.first, groups.last
    removed = first[(size == 1) & (side[first] == 0)]
    added = first[(size == 1) & (side[first] == 1)]
    pairs = size == 2
    old, new = first[pairs], last[pairs]
    same = np.ones(len(old), dtype=bool)
    for c in columns:
        col = arrow_memory.one_array(both[c])
        same &= values_equal(col.take(pa.array(old)), col.take(pa.array(new)))
    changed = new[~same]
    take = np.concatenate([removed, added, changed])
    kinds = both[KIND].to_numpy()[take].astype(np.int8)
    kinds[: len(removed)] = rowkind.DELETE
    order = np.argsort(_group_position(groups, take), kind="stable")
    out = both.take(pa.array(take[order]))
    return out.set_column(out.schema.get_field_index(KIND), KIND, pa.array(kinds[order], pa.int8()))


def _group_position(groups, rows: np.ndarray) -> np.ndarray:
    """For input row indices, the position of their group in key order."""
    group_of = np.empty(len(groups.order), np.int64)
    group_of[groups.order] = np.repeat(np.arange(groups.count), groups.ends - groups.starts)
    return group_of[rows]


def values_equal(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Row-wise equality of two arrays of one type, NULL = NULL, NaN = NaN; nested types compared
    element by element (vectorized over their flattened children)."""
    n = len(a)
    if n == 0:
        return np.zeros(0, dtype=bool)
    a_null = a.is_null().to_numpy(zero_copy_only=False)
    b_null = b.is_null().to_numpy(zero_copy_only=False)
    t = a.type
    if pa.types.is_struct(t):
        eq = np.ones(n, dtype=bool)
        for i in range(t.num_fields):
            eq &= values_equal(a.field(i), b.field(i))
    elif pa.types.is_map(t):
        return values_equal(_map_as_list(a), _map_as_list(b))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        la = pc.list_value_length(a).fill_null(0).to_numpy(zero_copy_only=False)
        lb = pc.list_value_length(b).fill_null(0).to_numpy(zero_copy_only=False)
        eq = la == lb
        rows = np.flatnonzero(eq & ~a_null & ~b_null & (la > 0))
        if len(rows):
            sub_a, sub_b = a.take(pa.array(rows)), b.take(pa.array(rows))
            flat_a, flat_b = pc.list_flatten(sub_a), pc.list_flatten(sub_b)
            parents = pc.list_parent_indices(sub_a).to_numpy(zero_copy_only=False)
            child_eq = values_equal(flat_a, flat_b)
            bad = np.bincount(parents[~child_eq], minlength=len(rows)) > 0
            eq[rows[bad]] = False
    else:
        eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
        if pa.types.is_floating(t):
            eq |= pc.fill_null(pc.is_nan(a), False).to_numpy(zero_copy_only=False) & pc.fill_null(
                pc.is_nan(b), False
            ).to_numpy(zero_copy_only=False)
    return np.where(a_null | b_null, a_null & b_null, eq)


def _map_as_list(a: pa.MapArray) -> pa.ListArray:
    """A map column as list<struct<key, value>> (same entries, same order)."""
    a = pa.concat_arrays([a])  # no slice offset: offsets index keys/items directly
    entries = pa.StructArray.from_arrays([a.keys, a.items], ["key", "value"])
    return pa.ListArray.from_arrays(a.offsets, entries, mask=a.is_null())
