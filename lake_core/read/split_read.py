"""The read path: Split → data files → sections of overlapping files → merge engine → Arrow.

Non-overlapping files need no merge; a single file without retract rows is read raw
(Java ``MergeTreeSplitGenerator`` + raw-file split read, as ``RawFileSplitRead``). The files of a
section are merged as they are read, ``read.batch-size`` rows per file at a time (the k-way merge of
:mod:`lake_core.lsm.merge_stream`, as compaction does), so a reader holds about (files of a section x
batch) rows, not the bucket.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory
from lake_core.deletion_vectors.maintainer import load_vectors, needs_full_for_dv
from lake_core.errors import PredicateError, SchemaMismatchError
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.float_order import java_order_key
from lake_core.format.parquet_file import decode_dictionaries
from lake_core.kv import rowkind
from lake_core.kv.rowkind import SHORT_STRINGS
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.lsm.levels import Levels, key_decoder
from lake_core.lsm.merge_stream import merge_sorted_runs
from lake_core.lsm.sparse_merge import sparse_pick
from lake_core.manifest.metadata import DataFileMeta, IndexManifestEntry
from lake_core.merge.base import drop_retracts, take
from lake_core.merge.lookup_merge import LEVEL, needs_lookup_merge, newest_high_level_mask, with_level
from lake_core.merge.sort import last_of_each_key, numpy_column, numpy_key, numpy_orderable
from lake_core.read.columns import check_read_columns
from lake_core.read.diff import diff_rows
from lake_core.read.evolution import iter_evolved, read_evolved
from lake_core.read.predicate import Predicate
from lake_core.read.read_ahead import read_ahead
from lake_core.read.read_failure import LOST_FILE_ERRORS, read_failure
from lake_core.read.split import Split

#: The column holding each row's kind in change reads (``+I``, ``-U``, ``+U``, ``-D``).
ROW_KIND = "_ROW_KIND"

if TYPE_CHECKING:
    from lake_core.deletion_vectors.vector import DeletionVector
    from lake_core.store import FileStore


def with_row_kind(rows: pa.Table, kinds: pa.ChunkedArray | pa.Array | None) -> pa.Table:
    """``rows`` with a ``_ROW_KIND`` string column from the int8 row kinds (None: all +I), vectorized."""
    codes = (
        np.zeros(rows.num_rows, dtype=np.int8)
        if kinds is None
        else np.asarray(
            kinds.to_numpy() if isinstance(kinds, pa.ChunkedArray) else kinds.to_numpy(zero_copy_only=False),
            dtype=np.int8,
        )
    )
    return rows.append_column(pa.field(ROW_KIND, pa.string(), nullable=False), _KIND_STRINGS.take(pa.array(codes)))


_KIND_STRINGS = pa.array(SHORT_STRINGS, pa.string())


class SplitRead:
    def __init__(
        self,
        store: FileStore,
        projection: Sequence[str] | None = None,
        predicate: Predicate | None = None,
        *,
        snapshot_id: int | None = None,
        keep_deletes: bool = False,
        dictionaries: bool = False,
    ):
        """``projection`` and ``predicate`` name columns of the schema the splits are read in:
        ``store``'s, or the one a split was planned in (``Split.schema_id``: a time-travel scan's
        snapshot's). A column that schema lacks is a ``PredicateError`` when its splits are read
        (a reader made before the scan cannot know which schema that is). ``snapshot_id``: this is a
        time-travel read of that snapshot (for the errors). ``keep_deletes``: the merged rows keep
        the keys whose merged row is a retraction (-U/-D), and every row carries its kind in
        ``_ROW_KIND`` (Java's ``forceKeepDelete``, what ``$audit_log`` reads). ``dictionaries``: the
        merged chunks keep the value columns lake_core wrote as dictionaries as dictionary arrays,
        for a consumer that gathers or checksums rows before it decodes them (:meth:`decoded`)."""
        self.store = store
        self.keep_deletes = keep_deletes
        self.dictionaries = dictionaries
        self.batch_rows = store.options.read_batch_rows
        schema = store.schema
        self.schema = schema
        names = [f.name for f in schema.fields]
        self._requested = list(projection) if projection is not None else None  # the caller's names
        try:
            check_read_columns(store.identifier, schema, projection, predicate, snapshot_id=snapshot_id)
            self._unfit: str | None = None
        except PredicateError as e:
            self._unfit = str(e)  # raised when splits of this schema are read
            projection = [c for c in projection or () if c in names] if projection is not None else None
        self._in_schema: dict[int, SplitRead] = {}  # this read in the other schemas splits name
        self.projection = list(projection) if projection is not None else names
        self.predicate = predicate
        self.is_pk = bool(schema.primary_keys)
        self.key_names = list(schema.trimmed_primary_keys) if self.is_pk else []
        engine = self.engine = store.merge_engine() if self.is_pk else None
        needed = set(self.projection) | (predicate.fields() if predicate else set())
        if engine is not None:  # a primary-key table
            if engine.merged_row_is_stored:
                needed |= set(self.key_names) | set(store.options.sequence_fields)
            else:
                needed = set(names)  # partial-update/aggregation combine every value column
        self.read_columns = [n for n in names if n in needed]
        self.read_schema = pa.schema([schema.arrow_schema().field(n) for n in self.read_columns])
        self.key_types = [schema.field(k).type for k in self.key_names]
        self.lookup_merge = needs_lookup_merge(store)
        # a stored row is its key's merged row, so a large run's keys no other run holds pass through
        self.sparse_key = (
            self.key_names[0]
            if (engine is not None and engine.run_is_merged and not self.lookup_merge and len(self.key_names) == 1)
            else None
        )

        # value columns a merge that picks stored rows may gather as dictionaries (it compares keys
        # and sequence fields only, and decodes what it gathered)
        compared = set(schema.primary_keys) | set(schema.partition_keys) | set(store.options.sequence_fields)
        self._dictionary_columns = frozenset(n for n in self.read_columns if n not in compared)
        # one key column NumPy orders as Java does, for reads where the newest row simply wins
        self._order_key = (
            self.key_names[0]
            if engine is not None
            and engine.newest_row_wins
            and len(self.key_names) == 1
            and numpy_orderable(schema.arrow_schema().field(self.key_names[0]).type)
            else None
        )

    # -- the schema a split is read in ------------------------------------------------------------
    def in_schema_of(self, split: Split) -> SplitRead:
        """This read in the schema ``split`` was planned in (a time-travel split: its snapshot's),
        with the same projection and filter, checked against that schema's columns."""
        sid = split.schema_id
        if sid is None or sid == self.schema.id:
            return self
        read = self._in_schema.get(sid)
        if read is None:
            at_sid = self.store.with_schema(self.store.schema_manager.schema(sid))
            read = self._in_schema[sid] = SplitRead(
                at_sid,
                self._requested,
                self.predicate,
                snapshot_id=split.snapshot_id,
                keep_deletes=self.keep_deletes,
                dictionaries=self.dictionaries,
            )
        return read

    def _check_fit(self) -> None:
        if self._unfit is not None:
            raise PredicateError(self._unfit)

    def _in_schema_of_all(self, splits: Sequence[Split]) -> SplitRead:
        """The read of ``splits`` as one result: they must all be in one schema."""
        ids = {self.schema.id if s.schema_id is None else s.schema_id for s in splits}
        if len(ids) > 1:
            raise SchemaMismatchError(
                f"the splits handed to one read of {self.store.identifier} were planned in different schemas "
                f"({sorted(ids)}: snapshots {sorted({s.snapshot_id for s in splits})}), so their rows have different "
                "columns; read the splits of each snapshot separately"
            )
        return self.in_schema_of(splits[0]) if splits else self

    # -- files -----------------------------------------------------------------------------------
    def _file_args(
        self, split: Split, f: DataFileMeta, with_system: bool, kind_only: bool = False
    ) -> tuple[str, DataFileMeta, str, list[str], pa.Schema]:
        """``with_system``: with ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``; ``kind_only``: the latter."""
        system = [SEQ, KIND] if with_system else [KIND] if kind_only else []
        cols = list(self.read_columns) + system
        schema = self.read_schema
        for name in system:
            schema = schema.append(pa.field(name, pa.int64() if name == SEQ else pa.int8(), nullable=False))
        fmt = f.file_name.rsplit(".", 1)[-1] if "." in f.file_name else self.store.options.file_format
        return split.file_path(f), f, fmt, cols, schema

    def _read_file(self, split: Split, f: DataFileMeta, with_system: bool) -> pa.Table:
        return read_evolved(self.store, *self._file_args(split, f, with_system))

    def _file_chunks(
        self, split: Split, f: DataFileMeta, with_system: bool, kind_only: bool = False, dictionaries: bool = False
    ) -> Iterator[pa.Table]:
        """The rows of one file, ``read.batch-size`` at a time; the file is opened on first use.
        ``dictionaries``: the columns lake_core wrote as dictionaries stay dictionaries (for a merge
        that gathers before it decodes)."""
        return iter_evolved(
            self.store,
            *self._file_args(split, f, with_system, kind_only),
            self.batch_rows,
            keep_dictionaries=self._dictionary_columns if dictionaries else (),
        )

    def _sections(self, files: Sequence[DataFileMeta]) -> list[list[DataFileMeta]]:
        """Group files whose key ranges overlap (Java IntervalPartition)."""
        if len(files) <= 1:
            return [list(files)]
        ranged = sorted(
            (
                (
                    java_order_key(deserialize_row(f.min_key, self.key_types)),
                    java_order_key(deserialize_row(f.max_key, self.key_types)),
                    i,
                    f,
                )
                for i, f in enumerate(files)
            ),
            key=lambda r: (r[0], r[1], r[2]),
        )
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
    def iter_split(self, split: Split) -> Iterator[pa.Table]:
        """The rows of one split, chunk by chunk: merged, filtered and projected in key order of each
        section (files are opened as the chunks are consumed), or its changes (a streaming or diff
        split of an incremental read, with ``_ROW_KIND``). A file lost because expiry took the
        snapshot meanwhile raises :class:`SnapshotExpiredError`."""
        try:
            yield from self._iter_split(split)
        except LOST_FILE_ERRORS as e:
            raise read_failure(self.store, split.snapshot_id, e) from e

    def _iter_split(self, split: Split) -> Iterator[pa.Table]:
        read = self.in_schema_of(split)
        if read is not self:
            yield from read._iter_split(split)
            return
        self._check_fit()
        if split.streaming:
            yield self._read_changes(split)
            return
        if split.before_files is not None:
            yield self._read_diff(split, split.before_files)
            return
        for chunk in self._merged_chunks(split, keep_kind=self.keep_deletes):
            if self.predicate is not None:
                # a filter compares values, not a dictionary's indices
                chunk = self.predicate.filter(self.decoded(chunk) if self.dictionaries else chunk)
            if chunk.num_rows:
                kinds = chunk[KIND] if self.keep_deletes else None
                chunk = chunk.select(self.projection)
                yield with_row_kind(chunk, kinds) if split.row_kind or self.keep_deletes else chunk

    def _read_changes(self, split: Split) -> pa.Table:
        """A streaming split: its files' rows as they are, in file order, retractions kept, each
        with its kind (Java's no-merge read of ``DataSplit.isStreaming``)."""
        if not split.files:
            return self.output_schema(True).empty_table()
        parts = [self._read_file(split, f, self.is_pk) for f in split.files]
        rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        kinds = rows[KIND] if self.is_pk else None  # an append table's rows are all inserts
        if self.is_pk:
            rows = rows.drop_columns([SEQ, KIND])
        rows = with_row_kind(rows, kinds)
        if self.predicate is not None:
            rows = self.predicate.filter(rows)
        return rows.select(self.projection + [ROW_KIND])

    def _read_diff(self, split: Split, before_files: tuple[DataFileMeta, ...]) -> pa.Table:
        """A diff split: the merged rows of ``before_files`` against those of ``files``, compared
        whole (Java ``IncrementalDiffSplitRead``), then filtered and projected."""

        columns = [f.name for f in self.schema.fields]
        # rows are compared whole, whatever the projection
        reader = self if self.read_columns == columns else SplitRead(self.store)
        before = reader._read_merged(
            replace(split, files=before_files, dv_index=split.before_dv_index, before_files=None)
        )
        after = reader._read_merged(replace(split, before_files=None))
        rows = diff_rows(before, after, self.key_names, columns)
        rows = with_row_kind(rows.drop_columns([KIND]), rows[KIND])
        if self.predicate is not None:
            rows = self.predicate.filter(rows)
        return rows.select(self.projection + [ROW_KIND])

    def _read_merged(self, split: Split) -> pa.Table:
        """Every column of the merged rows of ``split`` with each row's ``_VALUE_KIND`` (the kind of
        the row that won, as Java's merge reader keeps it), unfiltered."""
        parts = list(self._merged_chunks(split, keep_kind=True))
        if not parts:
            return self.read_schema.empty_table().append_column(
                pa.field(KIND, pa.int8(), nullable=False), pa.array([], pa.int8())
            )
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def _merged_chunks(self, split: Split, keep_kind: bool = False) -> Iterator[pa.Table]:
        """The merged rows of ``split`` chunk by chunk; ``keep_kind``: with ``_VALUE_KIND``."""
        if not split.files:
            return
        drop = [SEQ] if keep_kind else [SEQ, KIND]
        engine = self.engine
        if engine is None:  # an append table
            for f in split.files:
                for chunk in self._file_chunks(split, f, False, dictionaries=self.dictionaries):
                    yield (
                        chunk.append_column(
                            pa.field(KIND, pa.int8(), nullable=False), pa.array(np.zeros(chunk.num_rows, np.int8))
                        )
                        if keep_kind
                        else chunk
                    )
            return
        vectors = self._dv_vectors(split, split.dv_index) if split.dv_index is not None else None
        if vectors is not None and not any(f.level == 0 for f in split.files):
            for f in split.files:
                rows = self._file_chunks(split, f, keep_kind, dictionaries=self.dictionaries)
                for chunk in self._deleted_masked(rows, vectors.get(f.file_name)):
                    yield chunk.drop_columns([SEQ]) if keep_kind else chunk
            return
        # Merge-on-read; with vectors (an all-levels read of a deletion-vector table), each file's
        # deleted rows are masked first: what is left above level 0 holds each key once, and the
        # level-0 files merge over it like any newer run.
        vectors = vectors or {}

        def chunks(
            f: DataFileMeta, with_system: bool, kind_only: bool = False, dictionaries: bool = False
        ) -> Iterator[pa.Table]:
            dv = vectors.get(f.file_name)
            rows = self._file_chunks(split, f, with_system, kind_only, dictionaries)
            return rows if dv is None else self._deleted_masked(rows, dv)

        for section in self._sections(split.files):
            if len(section) == 1 and section[0].delete_row_count == 0:
                for chunk in chunks(section[0], keep_kind, dictionaries=self.dictionaries):
                    yield chunk.drop_columns([SEQ]) if keep_kind else chunk
            elif len(section) == 1 and engine.run_is_merged:
                # one file holds each key once
                for chunk in chunks(section[0], True, dictionaries=self.dictionaries):
                    yield (chunk if self.keep_deletes else drop_retracts(chunk)).drop_columns(drop)
            else:
                # oldest first, so each key's rows usually arrive in sequence order (cheap sort)
                runs = sorted(section, key=lambda f: (f.min_sequence_number, f.file_name))
                if not keep_kind and self._newest_by_run_order(runs):
                    # sequence numbers are not read: each key's last row in run order wins; string
                    # columns stay dictionaries until the winners are gathered
                    yield from merge_sorted_runs(
                        [chunks(f, False, kind_only=True, dictionaries=True) for f in runs],
                        self.key_names,
                        self._last_rows,
                        [None if f.file_name in vectors else f.row_count for f in runs],
                        merge_parts=self._last_rows_of_parts,
                    )
                    continue
                columns = [*self.read_columns, KIND] if keep_kind else self.read_columns
                merge, merge_parts = self._mergers(columns)
                picks = merge_parts is not None  # gathers stored rows: dictionaries until then
                if self.lookup_merge:
                    inputs = [with_level(chunks(f, True), f.level) for f in runs]
                else:
                    inputs = [chunks(f, True, dictionaries=picks) for f in runs]
                # a masked file yields fewer rows than it holds: its end is learnt from its reader
                sizes = [None if f.file_name in vectors else f.row_count for f in runs]
                for merged in merge_sorted_runs(inputs, self.key_names, merge, sizes, merge_parts=merge_parts):
                    yield merged.select(columns)

    def _newest_by_run_order(self, runs: Sequence[DataFileMeta]) -> bool:
        """Whether each key's newest row is its last in ``runs`` (oldest first, each sorted by key,
        then sequence): the engine keeps the newest row and the runs' sequence ranges follow one
        another."""
        return (
            self._order_key is not None
            and not self.lookup_merge
            and all(a.max_sequence_number < b.min_sequence_number for a, b in zip(runs, runs[1:]))
        )

    def _last_rows(self, rows: pa.Table) -> pa.Table:
        return self._last_rows_of_parts([rows])

    def _last_rows_of_parts(self, parts: list[pa.Table]) -> pa.Table:
        """Each key's last row of ``parts`` (one per run, oldest first), unless it is a retraction;
        dictionary columns of the parts (see :meth:`_file_chunks`) decoded."""
        key = self._order_key
        assert key is not None  # only called when _newest_by_run_order holds
        keys = []
        for p in parts:
            k = numpy_key(p.column(key))
            assert k is not None  # a key column of a NumPy-ordered type holds no nulls
            keys.append(k)
        parts = self._alike(parts)
        rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        last = last_of_each_key(arrow_memory.concatenate(keys))
        retract = rowkind.is_retract(arrow_memory.take(numpy_column(rows.column(KIND)), last))
        if retract.any():
            last = last[~retract]
        return self._output(take(rows.select(self.read_columns), last))

    def _alike(self, parts: list[pa.Table]) -> list[pa.Table]:
        """``parts`` with one schema: a column read as a dictionary in some files only (each file
        chooses its dictionary columns) is decoded in all."""
        if len(parts) > 1 and any(not p.schema.equals(parts[0].schema) for p in parts[1:]):
            return [self.decoded(p) for p in parts]
        return parts

    def decoded(self, rows: pa.Table) -> pa.Table:
        """``rows`` (of this read) with the columns read as dictionaries decoded to the table's types."""
        return decode_dictionaries(rows, self.read_schema)

    def _output(self, rows: pa.Table) -> pa.Table:
        """A merge's gathered rows as this read returns them (dictionaries decoded, unless kept)."""
        return rows if self.dictionaries else self.decoded(rows)

    def _mergers(
        self, columns: list[str]
    ) -> tuple[Callable[[pa.Table], pa.Table], Callable[[list[pa.Table]], pa.Table | None] | None]:
        """The merge of a round's rows and of its parts (one per run, oldest first), returning at
        least ``columns``. An engine whose merged row is a stored row (deduplicate) picks the
        winning rows from the key, sequence and kind columns, and only ``columns`` are gathered."""
        engine = self.engine
        assert engine is not None  # only a primary-key table's runs are merged
        pick_columns = None if self.lookup_merge else engine.pick_columns()
        key = self.sparse_key if not self.keep_deletes else None  # it drops the large run's retractions
        if pick_columns is None:  # an engine that combines rows, or a lookup merge
            return self._merge, None
        drop_deletes = not self.keep_deletes

        def pick(rows: pa.Table) -> np.ndarray:
            return engine.pick(rows, drop_deletes)

        def picked(parts: list[pa.Table]) -> pa.Table:
            if len(parts) == 1:
                narrow, wide = parts[0].select(pick_columns), parts[0].select(columns)
            else:
                narrow = pa.concat_tables([p.select(pick_columns) for p in parts])
                wide = pa.concat_tables([p.select(columns) for p in parts])
            return self._output(take(wide, pick(narrow)))

        def merge_parts(parts: list[pa.Table]) -> pa.Table:
            parts = self._alike(parts)
            out = sparse_pick(parts, key, pick, pick_columns, columns) if key is not None else None
            return self._output(out) if out is not None else picked(parts)

        return (lambda rows: picked([rows])), merge_parts

    def _merge(self, rows: pa.Table) -> pa.Table:
        if LEVEL in rows.column_names:
            # Java's LookupMergeFunction: of a key's copies above level 0 only the newest is merged
            levels = rows[LEVEL].to_numpy()
            rows = rows.drop_columns([LEVEL])
            keep = newest_high_level_mask(rows, self.key_names, levels)
            if keep is not None:
                rows = rows.filter(pa.array(keep))
        assert self.engine is not None  # only a primary-key table's runs are merged
        return self.engine.merge(rows, drop_deletes=not self.keep_deletes)

    @staticmethod
    def _deleted_masked(chunks: Iterator[pa.Table], dv: DeletionVector | None) -> Iterator[pa.Table]:
        start = 0
        for chunk in chunks:
            yield dv.filter_rows(chunk, start) if dv is not None else chunk
            start += chunk.num_rows

    def _dv_vectors(self, split: Split, dv_index: tuple[IndexManifestEntry, ...]) -> dict[str, DeletionVector] | None:
        """Deletion vectors: each file is read raw with its vector applied, no merge (Java's raw read
        of DV tables). None when the bucket must still be merged: no vectors yet and levels that
        overlap, i.e. a merge-on-read table whose option was switched on before a full compaction."""
        vectors = load_vectors(self.store, dv_index)
        if (
            not vectors
            and len(split.files) > 1
            and needs_full_for_dv(
                Levels.of(split.files, self.store.options.num_levels, key_decoder(self.key_types)), ()
            )
        ):
            return None
        return vectors

    def read_split(self, split: Split) -> pa.Table:
        read = self.in_schema_of(split)
        if read is not self:
            return read.read_split(split)
        parts = list(self.iter_split(split))
        if not parts:
            return self.output_schema(
                split.row_kind or split.streaming or split.before_files is not None or self.keep_deletes
            ).empty_table()
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    # -- many splits ------------------------------------------------------------------------------
    def iter_split_batches(
        self, splits: Sequence[Split], threads: int = 2, ahead: int | None = 2
    ) -> Iterator[tuple[Split, pa.Table]]:
        """``(split, chunk)`` for every merged chunk of ``splits``, in split order. Up to ``threads``
        splits are read at once, each in its own thread at most ``ahead`` chunks ahead, so memory
        stays bounded by threads x (files of a section + ``ahead``) x ``read.batch-size`` rows
        (``ahead=None``: each thread reads its split to the end, for a caller that keeps it all)."""
        return read_ahead(splits, self.iter_split, threads=threads, ahead=ahead)

    def iter_batches(self, splits: Sequence[Split], threads: int = 2, ahead: int | None = 2) -> Iterator[pa.Table]:
        """The merged chunks of ``splits`` in split order (see :meth:`iter_split_batches`)."""
        for _split, chunk in self.iter_split_batches(splits, threads, ahead):
            yield chunk

    def output_schema(self, row_kind: bool = False) -> pa.Schema:
        """The schema of what this read returns; ``row_kind``: with the ``_ROW_KIND`` column."""
        self._check_fit()
        schema = pa.schema([self.schema.arrow_schema().field(n) for n in self.projection])
        return schema.append(pa.field(ROW_KIND, pa.string(), nullable=False)) if row_kind else schema

    def to_arrow(self, splits: Sequence[Split], *, row_kind: bool | None = None) -> pa.Table:
        """The rows of ``splits``; with ``_ROW_KIND`` when they carry it (or ``row_kind`` says so:
        an empty change read still has the column)."""
        reader = self._in_schema_of_all(splits)
        if reader is not self:
            return reader.to_arrow(splits, row_kind=row_kind)
        # the whole result is kept anyway: larger merge rounds, and no thread waits for the consumer
        # to reach its split
        rows = self.store.options.materialized_read_rows
        if rows != self.batch_rows:
            reader = copy.copy(self)
            reader.batch_rows = rows
        parts = list(reader.iter_batches(splits, ahead=None))
        if row_kind is None:
            row_kind = self.keep_deletes or any(s.row_kind for s in splits)
        if not parts:
            return self.output_schema(row_kind).empty_table()
        return pa.concat_tables(parts)

    def to_arrow_batch_reader(self, splits: Sequence[Split], *, row_kind: bool | None = None) -> pa.RecordBatchReader:
        """A reader of record batches of at most ``read.batch-size`` rows per merged input chunk,
        read as they are consumed."""
        reader = self._in_schema_of_all(splits)
        if reader is not self:
            return reader.to_arrow_batch_reader(splits, row_kind=row_kind)
        if row_kind is None:
            row_kind = self.keep_deletes or any(s.row_kind for s in splits)

        def gen():
            for t in self.iter_batches(splits):
                yield from t.to_batches()

        return pa.RecordBatchReader.from_batches(self.output_schema(row_kind), gen())
