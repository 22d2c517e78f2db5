"""Changelog produced by compaction, per merged chunk of complete key groups (Java's
``ChangelogMergeTreeRewriter`` and its merge-function wrappers):

- ``lookup`` (``LookupMergeTreeCompactRewriter`` + ``LookupChangelogMergeFunctionWrapper``): only
  keys with a level-0 row change. Their value before is the newest row of the unit at a level >= 1,
  else the key's row looked up in the levels above the output level, which is merged in as the
  key's oldest input (Java 1.0's ``calculateResult``);
- ``lookup`` with first-row (``FirstRowMergeFunctionWrapper``): ``+I`` for a key that no level >= 1
  holds, nothing else;
- ``full-compaction`` (``FullChangelogMergeTreeCompactRewriter``, only for a unit whose output is
  the top level): the value before is the key's row in the top level, the value after the merge.

Every producer reads the rows with their file's level (column ``_LEVEL``) and turns it into the
rows :func:`lake_core.compaction.changelog.changelog_rows` compares. No Python runs per row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.compaction.changelog import changelog_rows
from lake_core.compaction.kv_read import kv_schema
from lake_core.compaction.lookup import lookup_latest
from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.manifest.metadata import DataFileMeta

if TYPE_CHECKING:
    from lake_core.deletion_vectors.vector import DeletionVector
    from lake_core.store import FileStore

_ROW = "__cl_row"


def _group_info(rows: pa.Table, key_names: Sequence[str], levels: np.ndarray, top_level: int | None = None) -> pa.Table:
    """Per key of ``rows``: whether it has a level-0 row (``l0``), how many rows (``n``), the row
    index of its newest row at a level >= 1 (``hi``: the lowest such level, data only moves up)
    and of its row at ``top_level`` (``top``)."""
    n = rows.num_rows
    high = levels > 0
    t = (
        rows.select(list(key_names))
        .append_column("l0", pa.array((levels == 0).astype(np.int8)))
        .append_column("hlevel", pa.array(levels.astype(np.int32), pa.int32(), mask=~high))
        .append_column(_ROW, pa.array(np.arange(n, dtype=np.int64)))
    )
    aggs = [("l0", "max"), (_ROW, "count"), ("hlevel", "min")]
    if top_level is not None:
        t = t.append_column("trow", pa.array(np.arange(n, dtype=np.int64), mask=levels != top_level))
        aggs.append(("trow", "max"))
    g = t.group_by(list(key_names), use_threads=False).aggregate(aggs)
    # the row index of the newest high-level row: join its (key, level) back
    hi_rows = (
        t.filter(pa.array(high))
        .select(list(key_names) + ["hlevel", _ROW])
        .rename_columns(list(key_names) + ["hlevel_min", "hi"])
    )
    g = g.join(hi_rows, keys=list(key_names) + ["hlevel_min"], join_type="left outer", use_threads=False)
    return g


def _align(merged: pa.Table, info: pa.Table, key_names: Sequence[str]) -> pa.Table:
    """``info`` rows in the order of ``merged`` (one per merged key)."""
    m = merged.select(list(key_names)).append_column("__m", pa.array(np.arange(merged.num_rows, dtype=np.int64)))
    j = m.join(info, keys=list(key_names), join_type="left outer", use_threads=False)
    return j.sort_by("__m")


def _take(rows: pa.Table, idx: pa.ChunkedArray | pa.Array) -> pa.Table:
    """Rows at ``idx`` (NULL index: a NULL row)."""
    return rows.take(idx)


@dataclass
class ChunkState:
    rows: pa.Table  # the chunk's rows as merged (no level column)
    levels: np.ndarray
    _info: pa.Table | None = None

    def info(self, key_names: Sequence[str], top_level: int | None = None) -> pa.Table:
        """:func:`_group_info` of the chunk, computed once."""
        if self._info is None:
            self._info = _group_info(self.rows, key_names, self.levels, top_level)
        return self._info


class ChangelogProducer:
    """One unit's changelog producer; :meth:`changelog` is called per merged chunk."""

    needs_levels = True

    def __init__(self, store: FileStore):
        self.store = store
        self.key_names = list(store.schema.trimmed_primary_keys)
        self.value_names = [f.name for f in store.schema.fields]
        self.row_deduplicate = store.options.changelog_producer_row_deduplicate
        self.schema = kv_schema(store)

    def prepare(self, state: ChunkState):
        """What :meth:`changelog` needs that must be read before the chunk is merged."""
        return None

    def absorb(self, rows: pa.Table, prepared, engine) -> pa.Table:
        """The rows to merge: the chunk's, with what the producer adds."""
        return rows

    def changelog(self, state: ChunkState, merged: pa.Table, engine, prepared) -> tuple[pa.Table, pa.Table | None]:
        """(the merged rows to write, possibly corrected; the chunk's changelog rows or None)."""
        raise NotImplementedError


class LookupChangelog(ChangelogProducer):
    def __init__(
        self,
        store: FileStore,
        *,
        bucket_dir: str,
        lookup_files: Sequence[DataFileMeta],
        deletion_vectors: Mapping[str, DeletionVector] | None,
        old_merged_in: bool,
    ):
        super().__init__(store)
        self.bucket_dir = bucket_dir
        self.lookup_files = tuple(lookup_files)
        self.deletion_vectors = deletion_vectors
        # deletion vectors: the compaction already merged each key's older row in (DvCompaction)
        self.old_merged_in = old_merged_in

    def prepare(self, state: ChunkState) -> pa.Table | None:
        """Looked-up older rows of the keys with level-0 rows and no row at a level >= 1 in the unit
        (done before the chunk is merged, so deletion vectors still show them)."""
        if not self.lookup_files or state.rows.num_rows == 0:
            return None
        info = state.info(self.key_names)
        need = info.filter(
            pa.array(
                (info["l0_max"].to_numpy(zero_copy_only=False) == 1)
                & info["hi"].is_null().to_numpy(zero_copy_only=False)
            )
        )
        if need.num_rows == 0:
            return None
        found = lookup_latest(
            self.store,
            bucket_dir=self.bucket_dir,
            files=self.lookup_files,
            keys=need.select(self.key_names),
            deletion_vectors=self.deletion_vectors,
        )
        return found.select(self.schema.names).cast(self.schema) if found.num_rows else None

    def absorb(self, rows: pa.Table, found: pa.Table | None, engine) -> pa.Table:
        """Java 1.0's ``LookupChangelogMergeFunctionWrapper.calculateResult``: the looked-up row is
        merged in as the key's oldest input, in one pass with the unit's rows (a delete among them
        still resets it). Deduplicate needs no old values; deletion vectors merged them in already."""
        if not engine.lookup_needs_old_value:
            return rows
        if found is not None and not self.old_merged_in:
            rows = pa.concat_tables([found.cast(rows.schema), rows])
        return self._merge_lone_retractions(rows)

    def _merge_lone_retractions(self, rows: pa.Table) -> pa.Table:
        """Java 1.0 merges every key of the unit with the merge function itself (no
        ``ReducerMergeFunctionWrapper``), so a lone retraction of a key with no stored value is
        aggregated from nothing (sum: its negation, as ``+I``). lake_core's engines pass a single row
        through unchanged; an empty row of the key before it makes it a real merge."""
        kinds = rows[KIND].to_numpy()
        retract = rowkind.is_retract(kinds)
        if not retract.any() or any(
            not f.nullable for f in self.store.schema.arrow_schema() if f.name not in self.key_names
        ):
            return rows
        t = rows.select(self.key_names).append_column(_ROW, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        counts = t.group_by(self.key_names, use_threads=False).aggregate([(_ROW, "count"), (_ROW, "max")])
        lone = counts.filter(pc.equal(counts[_ROW + "_count"], 1))[_ROW + "_max"].to_numpy()
        lone = lone[retract[lone]]
        if len(lone) == 0:
            return rows
        empty = rows.take(pa.array(lone))
        keep = set(self.key_names) | set(self.store.options.sequence_fields)  # same order, one step older
        for name in self.value_names:
            if name not in keep:
                i = empty.schema.get_field_index(name)
                empty = empty.set_column(i, empty.schema.field(i), pa.nulls(len(lone), empty.schema.field(i).type))
        seq = empty[SEQ].to_numpy() - 1
        empty = empty.set_column(empty.schema.get_field_index(SEQ), empty.schema.field(SEQ), pa.array(seq, pa.int64()))
        empty = empty.set_column(
            empty.schema.get_field_index(KIND),
            empty.schema.field(KIND),
            pa.array(np.zeros(len(lone), np.int8), pa.int8()),
        )
        return pa.concat_tables([empty, rows])

    def changelog(self, state: ChunkState, merged: pa.Table, engine, found: pa.Table | None):
        if merged.num_rows == 0:
            return merged, None
        info = _align(merged, state.info(self.key_names), self.key_names)
        has_l0 = info["l0_max"].fill_null(0).to_numpy(zero_copy_only=False) == 1
        if not has_l0.any():
            return merged, None
        hi = info["hi"]
        before = _take(state.rows.select(self.schema.names), hi)
        has_before = hi.is_valid().to_numpy(zero_copy_only=False)
        if found is not None and found.num_rows:
            fi = _align(
                merged,
                found.select(self.key_names).append_column("f", pa.array(np.arange(found.num_rows, dtype=np.int64))),
                self.key_names,
            )["f"]
            use_found = fi.is_valid().to_numpy(zero_copy_only=False) & ~has_before & has_l0
            if use_found.any():
                sel = np.flatnonzero(use_found)
                old = found.take(fi.take(pa.array(sel)))
                before = _replace_rows(before, sel, old)
                has_before = has_before | use_found
        idx = np.flatnonzero(has_l0)
        cl = changelog_rows(
            before.take(idx),
            has_before[idx],
            merged.select(self.schema.names).take(idx),
            value_names=self.value_names,
            row_deduplicate=self.row_deduplicate,
        )
        return merged, cl


class FirstRowChangelog(ChangelogProducer):
    """``+I`` for keys no level >= 1 holds: neither the unit's own high-level rows nor the bucket's
    other files (the caller drops those keys from ``merged`` first)."""

    def changelog(self, state: ChunkState, merged: pa.Table, engine, prepared):
        if merged.num_rows == 0:
            return merged, None
        info = _align(merged, state.info(self.key_names), self.key_names)
        new = info["hi"].is_null().to_numpy(zero_copy_only=False)
        cl = merged.filter(pa.array(new))
        return merged, cl.select(self.schema.names) if cl.num_rows else None


class FullCompactionChangelog(ChangelogProducer):
    def __init__(self, store: FileStore, max_level: int):
        super().__init__(store)
        self.max_level = max_level

    def changelog(self, state: ChunkState, merged: pa.Table, engine, prepared):
        if merged.num_rows == 0:
            return merged, None
        info = _align(merged, state.info(self.key_names, self.max_level), self.key_names)
        top = info["trow_max"]
        has_top = top.is_valid().to_numpy(zero_copy_only=False)
        count = info[_ROW + "_count"].fill_null(0).to_numpy(zero_copy_only=False)
        # a key whose only row is its top-level row did not change
        changed = ~(has_top & (count <= 1))
        idx = np.flatnonzero(changed)
        if len(idx) == 0:
            return merged, None
        before = _take(state.rows.select(self.schema.names), top)
        cl = changelog_rows(
            before.take(idx),
            has_top[idx],
            merged.select(self.schema.names).take(idx),
            value_names=self.value_names,
            row_deduplicate=self.row_deduplicate,
        )
        return merged, cl


def _replace_rows(t: pa.Table, positions: np.ndarray, new: pa.Table) -> pa.Table:
    """``t`` with rows ``positions`` replaced by the rows of ``new`` (in order)."""
    n = t.num_rows
    idx = np.arange(n, dtype=np.int64)
    idx[positions] = n + np.arange(len(positions), dtype=np.int64)
    return pa.concat_tables([t, new.select(t.column_names).cast(t.schema)]).take(pa.array(idx))


def producer_for(
    store: FileStore,
    *,
    output_level: int,
    max_level: int,
    bucket_dir: str,
    lookup_files: Sequence[DataFileMeta],
    vectors,
) -> ChangelogProducer | None:
    """The changelog producer of a unit writing to ``output_level``, or None (no changelog)."""
    if not produces_changelog(store, output_level=output_level, max_level=max_level):
        return None
    if store.options.changelog_producer == "lookup":
        if store.merge_engine().hides_level0:
            return FirstRowChangelog(store)
        dvs = vectors.vectors if vectors is not None else None
        above = [f for f in lookup_files if f.level > output_level]
        return LookupChangelog(
            store,
            bucket_dir=bucket_dir,
            lookup_files=above,
            deletion_vectors=dvs,
            old_merged_in=vectors is not None and store.merge_engine().lookup_needs_old_value,
        )
    return FullCompactionChangelog(store, max_level)


def produces_changelog(store: FileStore, *, output_level: int, max_level: int) -> bool:
    """Whether a unit writing to ``output_level`` produces a changelog (:func:`producer_for` is not
    None), from the options alone: what a plan needs to know without building the producer."""
    if not store.schema.primary_keys:
        return False
    producer = store.options.changelog_producer
    return (producer == "lookup" and output_level > 0) or (producer == "full-compaction" and output_level == max_level)


__all__ = [
    "ChunkState",
    "ChangelogProducer",
    "LookupChangelog",
    "FirstRowChangelog",
    "FullCompactionChangelog",
    "producer_for",
    "produces_changelog",
]
