"""The read path: Split → data files → sections of overlapping files → merge engine → Arrow.

Non-overlapping files need no merge; a single file without retract rows is read raw
(Java ``MergeTreeSplitGenerator`` + raw-file split read, as ``RawFileSplitRead``).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np
import pyarrow as pa

from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.float_order import java_order_key
from lake_core.merge.base import drop_retracts
from lake_core.kv.rowkind import SHORT_STRINGS
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.commit.messages import Split
from lake_core.manifest.metadata import DataFileMeta
from lake_core.read.predicate import Predicate
from lake_core.schema.evolution import read_evolved

#: The column holding each row's kind in change reads (``+I``, ``-U``, ``+U``, ``-D``).
ROW_KIND = "_ROW_KIND"

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


def with_row_kind(rows: pa.Table, kinds: pa.ChunkedArray | pa.Array | None) -> pa.Table:
    """``rows`` with a ``_ROW_KIND`` string column from the int8 row kinds (None: all +I), vectorized."""
    codes = (np.zeros(rows.num_rows, dtype=np.int8) if kinds is None
             else np.asarray(kinds.to_numpy() if isinstance(kinds, pa.ChunkedArray) else kinds.to_numpy(
                 zero_copy_only=False), dtype=np.int8))
    return rows.append_column(pa.field(ROW_KIND, pa.string(), nullable=False), _KIND_STRINGS.take(pa.array(codes)))


_KIND_STRINGS = pa.array(SHORT_STRINGS, pa.string())


class SplitRead:
    def __init__(self, table: "FileStoreTable", projection: Sequence[str] | None = None,
                 predicate: Predicate | None = None):
        self.table = table
        schema = table.schema
        self.schema = schema
        names = [f.name for f in schema.fields]
        if projection is not None:
            from lake_core.errors import PredicateError
            for c in projection:
                if c not in names:
                    raise PredicateError(f"column '{c}' requested from {table.identifier} does not exist; "
                                         f"columns: {names}")
        self.projection = list(projection) if projection is not None else names
        self.predicate = predicate
        self.is_pk = bool(schema.primary_keys)
        self.key_names = list(schema.trimmed_primary_keys) if self.is_pk else []
        self.engine = table.merge_engine() if self.is_pk else None
        needed = set(self.projection) | (predicate.fields() if predicate else set())
        if self.is_pk:
            if self.engine.merged_row_is_stored:
                needed |= set(self.key_names) | set(table.options.sequence_fields)
            else:
                needed = set(names)  # partial-update/aggregation combine every value column
        self.read_columns = [n for n in names if n in needed]
        self.read_schema = pa.schema([schema.arrow_schema().field(n) for n in self.read_columns])
        self.key_types = [schema.field(k).type for k in self.key_names]
        from lake_core.merge.lookup_merge import needs_lookup_merge
        self.lookup_merge = needs_lookup_merge(table)

    # -- files -----------------------------------------------------------------------------------
    def _read_file(self, split: Split, f: DataFileMeta, with_system: bool) -> pa.Table:
        cols = list(self.read_columns) + ([SEQ, KIND] if with_system else [])
        schema = self.read_schema
        if with_system:
            schema = schema.append(pa.field(SEQ, pa.int64(), nullable=False)).append(
                pa.field(KIND, pa.int8(), nullable=False))
        fmt = f.file_name.rsplit(".", 1)[-1] if "." in f.file_name else self.table.options.file_format
        return read_evolved(self.table, split.file_path(f), f, fmt, cols, schema)

    def _sections(self, files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
        """Group files whose key ranges overlap (Java IntervalPartition)."""
        if len(files) <= 1:
            return [list(files)]
        ranged = sorted(((java_order_key(deserialize_row(f.min_key, self.key_types)),
                          java_order_key(deserialize_row(f.max_key, self.key_types)), i, f)
                         for i, f in enumerate(files)),
                        key=lambda r: (r[0], r[1], r[2]))
        sections: list[list[DataFileMeta]] = []
        bound = None
        for lo, hi, _i, f in ranged:
            if bound is not None and lo <= bound:
                sections[-1].append(f)
                bound = max(bound, hi)
            else:
                sections.append([f])
                bound = hi
        return sections

    # -- splits -------------------------------------------------------------------------------------
    def read_split(self, split: Split) -> pa.Table:
        if split.streaming:
            return self._read_changes(split)
        if split.before_files is not None:
            return self._read_diff(split)
        out = self._read_merged(split)
        return with_row_kind(out, None) if split.row_kind else out

    def _read_changes(self, split: Split) -> pa.Table:
        """A streaming split: its files' rows as they are, in file order, retractions kept, each
        with its kind (Java's no-merge read of ``DataSplit.isStreaming``)."""
        if not split.files:
            return with_row_kind(self.read_schema.empty_table().select(self.projection), None)
        parts = [self._read_file(split, f, self.is_pk) for f in split.files]
        rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        kinds = rows[KIND] if self.is_pk else None  # an append table's rows are all inserts
        if self.is_pk:
            rows = rows.drop_columns([SEQ, KIND])
        rows = with_row_kind(rows, kinds)
        if self.predicate is not None:
            rows = self.predicate.filter(rows)
        return rows.select(self.projection + [ROW_KIND])

    def _read_diff(self, split: Split) -> pa.Table:
        """A diff split: the merged rows of ``before_files`` against those of ``files``, compared
        whole (Java ``IncrementalDiffSplitRead``), then filtered and projected."""
        from dataclasses import replace

        from lake_core.read.diff import diff_rows
        columns = [f.name for f in self.schema.fields]
        # rows are compared whole, whatever the projection
        reader = self if self.read_columns == columns else SplitRead(self.table)
        before = reader._read_merged(replace(split, files=split.before_files, dv_index=split.before_dv_index,
                                             before_files=None), keep_kind=True)
        after = reader._read_merged(replace(split, before_files=None), keep_kind=True)
        rows = diff_rows(before, after, self.key_names, columns)
        rows = with_row_kind(rows.drop_columns([KIND]), rows[KIND])
        if self.predicate is not None:
            rows = self.predicate.filter(rows)
        return rows.select(self.projection + [ROW_KIND])

    def _read_merged(self, split: Split, keep_kind: bool = False) -> pa.Table:
        """The merged rows of ``split``; ``keep_kind``: with each merged row's ``_VALUE_KIND``
        (the kind of the row that won, as Java's merge reader keeps it), unfiltered, every column."""
        system = [SEQ, KIND]
        if not split.files:
            empty = self.read_schema.empty_table()
            if keep_kind:
                return empty.append_column(pa.field(KIND, pa.int8(), nullable=False), pa.array([], pa.int8()))
            return empty.select(self.projection)
        if not self.is_pk:
            parts = [self._read_file(split, f, False) for f in split.files]
            out = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
            if keep_kind:
                out = out.append_column(pa.field(KIND, pa.int8(), nullable=False),
                                        pa.array(np.zeros(out.num_rows, np.int8)))
        elif split.dv_index is not None and (out := self._read_dv_split(split, keep_kind)) is not None:
            pass
        else:
            parts = []
            for section in self._sections(split.files):
                if len(section) == 1 and section[0].delete_row_count == 0:
                    raw = self._read_file(split, section[0], keep_kind)
                    parts.append(raw.drop_columns([SEQ]) if keep_kind else raw)
                    continue
                rows = [self._read_file(split, f, True) for f in section]
                if self.lookup_merge and len(rows) > 1:
                    rows = self._newest_high_level(rows, section)
                rows = pa.concat_tables(rows) if len(rows) > 1 else rows[0]
                if len(section) == 1 and self.engine.run_is_merged:
                    merged = drop_retracts(rows)  # one file already holds each key once
                else:
                    merged = self.engine.merge(rows, drop_deletes=True)
                parts.append(merged.drop_columns([SEQ] if keep_kind else system))
            out = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        if keep_kind:
            return out
        if self.predicate is not None:
            out = self.predicate.filter(out)
        return out.select(self.projection)

    def _newest_high_level(self, parts: list[pa.Table], files: Sequence[DataFileMeta]) -> list[pa.Table]:
        """Java's ``LookupMergeFunction`` (``changelog-producer`` = ``lookup``): of a key's copies
        above level 0 only the newest is merged."""
        import numpy as np
        from lake_core.merge.lookup_merge import newest_high_level_mask
        rows = pa.concat_tables(parts)
        levels = np.concatenate([np.full(p.num_rows, f.level, np.int32) for p, f in zip(parts, files)])
        keep = newest_high_level_mask(rows, self.key_names, levels)
        return [rows if keep is None else rows.filter(pa.array(keep))]

    def _read_dv_split(self, split: Split, keep_kind: bool = False) -> pa.Table | None:
        """Deletion vectors: each file read raw with its vector applied, no merge (Java's raw read
        of DV tables). None when the bucket must still be merged: no vectors yet and levels that
        overlap, i.e. a merge-on-read table whose option was switched on before a full compaction."""
        from lake_core.lsm.levels import Levels, key_decoder
        from lake_core.deletion_vectors.maintainer import load_vectors, needs_full_for_dv
        vectors = load_vectors(self.table, split.dv_index)
        if not vectors and len(split.files) > 1 and needs_full_for_dv(
                Levels.of(split.files, self.table.options.num_levels, key_decoder(self.key_types)), ()):
            return None
        parts = []
        for f in split.files:
            t = self._read_file(split, f, keep_kind)
            if keep_kind:
                t = t.drop_columns([SEQ])
            dv = vectors.get(f.file_name)
            keep = dv.keep_mask(0, t.num_rows) if dv is not None else None
            parts.append(t.filter(pa.array(keep)) if keep is not None else t)
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def iter_batches(self, splits: Sequence[Split], threads: int = 2) -> Iterator[pa.Table]:
        """One table per split, in order; at most ``threads`` splits in memory at a time."""
        if threads <= 1 or len(splits) <= 1:
            for s in splits:
                yield self.read_split(s)
            return
        with ThreadPoolExecutor(max_workers=threads) as pool:
            pending = []
            for s in splits:
                pending.append(pool.submit(self.read_split, s))
                if len(pending) >= threads:
                    yield pending.pop(0).result()
            for p in pending:
                yield p.result()

    def output_schema(self, row_kind: bool = False) -> pa.Schema:
        """The schema of what this read returns; ``row_kind``: with the ``_ROW_KIND`` column."""
        schema = pa.schema([self.schema.arrow_schema().field(n) for n in self.projection])
        return schema.append(pa.field(ROW_KIND, pa.string(), nullable=False)) if row_kind else schema

    def to_arrow(self, splits: Sequence[Split], *, row_kind: bool | None = None) -> pa.Table:
        """The rows of ``splits``; with ``_ROW_KIND`` when they carry it (or ``row_kind`` says so:
        an empty change read still has the column)."""
        parts = list(self.iter_batches(splits))
        if row_kind is None:
            row_kind = any(s.row_kind for s in splits)
        if not parts:
            return self.output_schema(row_kind).empty_table()
        return pa.concat_tables(parts)

    def to_arrow_batch_reader(self, splits: Sequence[Split]) -> pa.RecordBatchReader:
        schema = self.output_schema(any(s.row_kind for s in splits))

        def gen():
            for t in self.iter_batches(splits):
                yield from t.to_batches()

        return pa.RecordBatchReader.from_batches(schema, gen())
