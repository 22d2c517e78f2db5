"""The read path: Split → data files → sections of overlapping files → merge engine → Arrow.

Non-overlapping files need no merge; a single file without retract rows is read raw
(Java ``MergeTreeSplitGenerator`` + raw-file split read, as ``RawFileSplitRead``).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Iterator, Sequence

import pyarrow as pa

from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.float_order import java_order_key
from lake_core.merge.base import drop_retracts
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.commit.messages import Split
from lake_core.manifest.metadata import DataFileMeta
from lake_core.read.predicate import Predicate
from lake_core.schema.evolution import read_evolved

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


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
        if not split.files:
            return self.read_schema.empty_table().select(self.projection)
        if not self.is_pk:
            parts = [self._read_file(split, f, False) for f in split.files]
            out = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        elif split.dv_index is not None and (out := self._read_dv_split(split)) is not None:
            pass
        else:
            parts = []
            for section in self._sections(split.files):
                if len(section) == 1 and section[0].delete_row_count == 0:
                    parts.append(self._read_file(split, section[0], False))
                    continue
                rows = [self._read_file(split, f, True) for f in section]
                if self.lookup_merge and len(rows) > 1:
                    rows = self._newest_high_level(rows, section)
                rows = pa.concat_tables(rows) if len(rows) > 1 else rows[0]
                if len(section) == 1 and self.engine.run_is_merged:
                    merged = drop_retracts(rows)  # one file already holds each key once
                else:
                    merged = self.engine.merge(rows, drop_deletes=True)
                parts.append(merged.drop_columns([SEQ, KIND]))
            out = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
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

    def _read_dv_split(self, split: Split) -> pa.Table | None:
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
            t = self._read_file(split, f, False)
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

    def to_arrow(self, splits: Sequence[Split]) -> pa.Table:
        parts = list(self.iter_batches(splits))
        empty = pa.schema([self.schema.arrow_schema().field(n) for n in self.projection]).empty_table()
        if not parts:
            return empty
        return pa.concat_tables(parts)

    def to_arrow_batch_reader(self, splits: Sequence[Split]) -> pa.RecordBatchReader:
        schema = pa.schema([self.schema.arrow_schema().field(n) for n in self.projection])

        def gen():
            for t in self.iter_batches(splits):
                yield from t.to_batches()

        return pa.RecordBatchReader.from_batches(schema, gen())
