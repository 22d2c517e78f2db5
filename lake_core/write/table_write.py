"""The write path: Arrow rows → validation → bucket assignment → per-(partition, bucket)
sort + fold in the merge engine → level-0 data files → CommitMessages."""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core import arrow_memory
from lake_core.bucket.assign import assign_buckets, hash_rows
from lake_core.bucket.dynamic import DynamicBucketAssigner
from lake_core.commit.messages import CommitMessage
from lake_core.errors import InvalidDataError, InvalidOptionError, SchemaMismatchError
from lake_core.format.binary_row.writer import serialize_row
from lake_core.format.parquet_file import DictionaryChoice
from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.manifest.metadata import DataFileMeta
from lake_core.merge.base import take
from lake_core.merge.sort import group_positions
from lake_core.paths import FileNamer, check_new_partition_dir, partition_dir
from lake_core.schema.partition_selector import PartitionSelector
from lake_core.snapshot.snapshot import CommitKind, Snapshot
from lake_core.write.cross_partition import CrossPartitionAssigner
from lake_core.write.file_writer import DataFileWriter

if TYPE_CHECKING:
    from lake_core.bucket.dynamic import DynamicBucketAssigner
    from lake_core.commit.hooks import TableHooks
    from lake_core.manifest.store import ManifestStore
    from lake_core.store import FileStore

log = logging.getLogger(__name__)


def conform(store: FileStore, data: Any) -> pa.Table:
    """Check ``data`` against the table schema: same column names, castable types, no NULL keys.
    Returns a table with exactly the schema's columns, order and types."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    elif not isinstance(data, pa.Table):
        if hasattr(data, "to_arrow"):  # polars
            data = data.to_arrow()
        elif hasattr(data, "columns") and hasattr(data, "dtypes"):  # pandas
            data = pa.Table.from_pandas(data, preserve_index=False)
        else:
            raise SchemaMismatchError(
                f"write to {store.identifier} expects a pyarrow Table or RecordBatch, got {type(data).__name__}"
            )
    schema = store.schema
    expected = [f.name for f in schema.fields]
    got = data.column_names
    dups = sorted({n for n in got if got.count(n) > 1}) if len(set(got)) != len(got) else []
    if dups:
        raise SchemaMismatchError(
            f"data written to {store.identifier} has duplicate column(s) {dups}; each column "
            f"must appear once (table columns: {expected})"
        )
    missing = [n for n in expected if n not in got]
    extra = [n for n in got if n not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if extra:
            parts.append(f"unknown column(s) {extra}")
        raise SchemaMismatchError(
            f"data written to {store.identifier} does not match its schema: "
            + "; ".join(parts)
            + f" (table columns: {expected})"
        )
    cols = []
    for f in schema.fields:
        col = data[f.name]
        if col.type != f.type:
            if not _castable(col.type, f.type):
                raise SchemaMismatchError(
                    f"column '{f.name}' of {store.identifier} has type {f.type}, but the data has {col.type}"
                )
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaMismatchError(
                    f"column '{f.name}' of {store.identifier} has type {f.type}; the data ({col.type}) does not "
                    f"fit: {e}"
                ) from None
        if not f.nullable and col.null_count:
            what = "primary-key column" if f.name in schema.primary_keys else "NOT NULL column"
            raise InvalidDataError(
                f"{what} '{f.name}' of {store.identifier} contains {col.null_count} NULL "
                "value(s); every row needs a value there"
            )
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema.arrow_schema())


def _castable(src: pa.DataType, dst: pa.DataType) -> bool:
    """Widening and same-family casts only: a string never silently becomes a number."""
    fam = lambda t: (
        "int"
        if pa.types.is_integer(t)
        else "float"
        if pa.types.is_floating(t)
        else "str"
        if pa.types.is_string(t) or pa.types.is_large_string(t)
        else "bin"
        if pa.types.is_binary(t) or pa.types.is_large_binary(t)
        else "dec"
        if pa.types.is_decimal(t)
        else "ts"
        if pa.types.is_timestamp(t)
        else "date"
        if pa.types.is_date(t)
        else str(t)
    )
    a, b = fam(src), fam(dst)
    if a == b:
        return True
    return (a, b) in {("int", "float"), ("int", "dec"), ("null", "int")} or pa.types.is_null(src)


def partition_codes(data: pa.Table, names: list[str]) -> tuple[np.ndarray, list[tuple]]:
    """Dense code per row for its partition, plus the partition value tuples (vectorized)."""
    if not names:
        return np.zeros(data.num_rows, np.int64), [()]
    code = np.zeros(data.num_rows, np.int64)
    dicts = []
    for n in names:
        enc = pc.dictionary_encode(data[n].combine_chunks())
        idx = enc.indices.to_numpy(zero_copy_only=False)
        size = len(enc.dictionary) + 1
        idx = (
            np.where(enc.indices.is_null().to_numpy(zero_copy_only=False), size - 1, idx)
            if enc.indices.null_count
            else idx
        )
        code = code * size + idx.astype(np.int64)
        dicts.append(enc.dictionary.to_pylist() + [None])
    uniq, dense = np.unique(code, return_inverse=True)
    values = []
    sizes = [len(d) for d in dicts]
    for u in uniq.tolist():
        parts = []
        for s in reversed(sizes):
            parts.append(u % s)
            u //= s
        parts.reverse()
        values.append(tuple(d[i] for d, i in zip(dicts, parts)))
    return dense.astype(np.int64), values


@dataclass(frozen=True)
class _LiveFiles:
    """The live data files per (partition, bucket) at one snapshot, and each partition's bucket
    count (``_TOTAL_BUCKETS`` of its files)."""

    snapshot_id: int | None
    by_bucket: dict[tuple[bytes, int], list[DataFileMeta]]
    partition_buckets: dict[bytes, int]

    @staticmethod
    def at(manifests: ManifestStore, snapshot: Snapshot | None) -> _LiveFiles:
        by_bucket: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        partition_buckets: dict[bytes, int] = {}
        for e in manifests.live_entries(snapshot):
            by_bucket.setdefault((e.partition, e.bucket), []).append(e.file)
            if e.total_buckets > 0:
                partition_buckets.setdefault(e.partition, e.total_buckets)
        return _LiveFiles(snapshot.id if snapshot is not None else None, by_bucket, partition_buckets)


#: a row's position in the buffered batches, carried through a merge that picks rows
_POSITION = "__lake_core_position"


@dataclass
class _BucketBuffer:
    """One bucket's buffered rows: per write, the conformed batch (with ``_VALUE_KIND``) and the
    positions of this bucket's rows in it (increasing). They are gathered when the bucket is
    flushed, in the flush's thread."""

    partition: tuple
    bucket: int
    batches: list[tuple[pa.Table, np.ndarray]] = field(default_factory=list)
    rows: int = 0

    def gathered(self) -> pa.Table:
        parts = [_take(t, positions) for t, positions in self.batches]
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _take(table: pa.Table, positions: np.ndarray) -> pa.Table:
    """``table``'s rows at the increasing ``positions``; ``table`` itself when they are all its rows."""
    if len(positions) == table.num_rows:
        return table
    return take(table, positions)


class TableWrite:
    """Buffers rows per (partition, bucket); ``prepare_commit`` writes level-0 files."""

    def __init__(self, store: FileStore, *, hooks: TableHooks, static_partition: dict | None = None):
        """``hooks``: what a writer calls above itself (the inline compaction of a bucket it wrote),
        implemented by the table. ``static_partition``: an overwrite of that partition."""
        self.store = store
        self.hooks = hooks
        schema = store.schema
        self.schema = schema
        self.is_pk = bool(schema.primary_keys)
        opts = store.options
        self.num_buckets = opts.bucket
        self.mode = store.bucket_mode  # fixed | dynamic | cross-partition | unaware
        if self.mode in ("dynamic", "cross-partition") and opts.bucket_key:
            raise InvalidOptionError(
                f"table {store.identifier} is in {self.mode} bucket mode, where 'bucket-key' is "
                "not allowed (Paimon refuses it too); remove the option or set a fixed 'bucket'"
            )
        self.partition_names = list(schema.partition_keys)
        self.partition_types = [schema.field(n).type for n in self.partition_names]
        self.bucket_keys = list(schema.bucket_keys()) if self.num_buckets >= 1 else []
        self.bucket_types = [schema.field(n).type for n in self.bucket_keys]
        self.engine = store.merge_engine() if self.is_pk else None
        self.rowkind_field = opts.rowkind_field
        self.static_partition = static_partition
        if static_partition:  # its columns must be partition columns (its values are checked per row)
            PartitionSelector.of(schema, static_partition, table=store.identifier, operation="overwrite")
        self.buffers: dict[tuple, _BucketBuffer] = {}
        self.namer = FileNamer()
        self._next_seq: dict[tuple[bytes, int], int] | None = None
        self.rows_written = 0
        self._dynamic: DynamicBucketAssigner | None = None  # dynamic mode
        self._cross = None  # CrossPartitionAssigner (cross-partition mode)
        self._partition_bytes: dict[tuple, bytes] = {}
        # The snapshot the writer builds on: read when first needed (the table as of its first
        # write), then moved past the writer's own commits (_advance_base_past_own_commits).
        self._base_read = False
        self._base: Snapshot | None = None
        self._live: _LiveFiles | None = None  # at the first base: sequence numbers and bucket counts
        self._live_now: _LiveFiles | None = None  # at the base once it moved: what inline compaction sees
        # Parquet dictionary columns of this commit's files, sampled in the flush pool
        self._dictionary: Future[DictionaryChoice] | None = None
        self._dv_latest: Snapshot | None = None  # set per prepare_commit (deletion-vector tables)
        self._writes_parquet = self.store.options.file_format == "parquet"  # only Parquet files take it

    # -- input ----------------------------------------------------------------------------------
    def write_arrow(self, data: Any) -> None:
        self._write(conform(self.store, data), kind=None)

    write_arrow_batch = write_arrow

    def write_rows_with_kind(self, data: pa.Table, kind: int) -> None:
        """Write rows with one fixed row kind (``delete_where``'s -D rows)."""
        rk = self.rowkind_field
        if rk:  # the rows carry their kind in that column
            data = data.set_column(
                data.schema.get_field_index(rk), rk, pa.array([rowkind.SHORT_STRINGS[kind]] * data.num_rows)
            )
            self.write_arrow(data)
        else:
            self._write(conform(self.store, data), kind=kind)

    def _write(self, data: pa.Table, kind: int | None) -> None:
        """Buffer conformed rows; ``kind``: every row's kind, else the row kind column's (or +I)."""
        if data.num_rows == 0:
            return
        if kind is not None:
            kinds = np.full(data.num_rows, kind, np.int8)
        elif self.rowkind_field:
            kinds = rowkind.kinds_from_column(data[self.rowkind_field], self.rowkind_field)
        else:
            kinds = np.zeros(data.num_rows, np.int8)
        if self.static_partition:
            self._check_static_partition(data, self.static_partition)
        data = data.append_column(pa.field(KIND, pa.int8(), nullable=False), pa.array(kinds, pa.int8()))
        pcode, pvalues = partition_codes(data, self.partition_names)
        for pv in pvalues:  # per partition, before any file is written
            check_new_partition_dir(
                self.partition_names, pv, self.store.options.partition_default_name, self.store.identifier
            )
        if self.num_buckets >= 1:
            buckets = self._assign_fixed(data, pcode, pvalues)
        elif self.mode == "dynamic":
            buckets = self._assign_dynamic(data, pcode, pvalues)
        elif self.mode == "cross-partition":
            data, buckets = self._cross_assigner().route(data, pcode, pvalues)
            if data.num_rows == 0:
                return
            pcode, pvalues = partition_codes(data, self.partition_names)
        else:
            buckets = np.zeros(data.num_rows, np.int64)  # bucket-unaware append table
        nb = max(self.num_buckets, int(buckets.max()) + 1 if len(buckets) else 1, 1)
        gid = buckets if len(pvalues) == 1 else pcode * nb + buckets  # one partition: its code is 0
        for g, positions in group_positions(gid, nb * len(pvalues)):
            pv, b = pvalues[g // nb], g % nb
            buf = self.buffers.get((pv, b))
            if buf is None:
                buf = self.buffers[(pv, b)] = _BucketBuffer(pv, b)
            buf.batches.append((data, positions))
            buf.rows += len(positions)
        self.rows_written += data.num_rows

    # -- fixed bucket mode: each partition keeps its own bucket count ------------------------------
    def _bucket_count(self, values: tuple) -> int:
        """A partition already written keeps the bucket count of its files until a rescale
        rewrites it (``_TOTAL_BUCKETS``); new partitions, and overwrites, use the table's
        ``bucket`` option."""
        if self.num_buckets < 1:
            return -1
        if self.static_partition is not None:
            return self.num_buckets
        return self._first_live().partition_buckets.get(self._partition_row(values), self.num_buckets)

    def _assign_fixed(self, data: pa.Table, pcode: np.ndarray, pvalues: list[tuple]) -> np.ndarray:
        counts = [self._bucket_count(pv) for pv in pvalues]
        keys = [data[k] for k in self.bucket_keys]
        fn = self.store.options.bucket_function
        if len(set(counts)) == 1:
            return assign_buckets(keys, self.bucket_types, counts[0], fn)  # int32
        per_row = np.asarray(counts, dtype=np.int64)[pcode]
        buckets = np.empty(data.num_rows, np.int64)
        for c in set(counts):
            rows = np.flatnonzero(per_row == c)
            idx = pa.array(rows)
            buckets[rows] = assign_buckets([k.take(idx) for k in keys], self.bucket_types, c, fn)
        return buckets

        # -- dynamic bucket modes (Java HashBucketAssigner) ----------------------------------------------

    def _partition_row(self, values: tuple) -> bytes:
        b = self._partition_bytes.get(values)
        if b is None:
            b = self._partition_bytes[values] = serialize_row(list(values), self.partition_types)
        return b

    def _assign_dynamic(self, data: pa.Table, pcode: np.ndarray, pvalues: list[tuple]) -> np.ndarray:
        dynamic = self._dynamic
        if dynamic is None:
            live = self._live_files()
            data_buckets: dict[bytes, set] = {}
            for p, b in live:
                data_buckets.setdefault(p, set()).add(b)
            dynamic = self._dynamic = DynamicBucketAssigner(
                self.store,
                self._base_snapshot(),
                lambda p: data_buckets.get(p, ()),
                ignore_existing=self.static_partition is not None,
            )
        key_names = self.schema.trimmed_primary_keys
        hashes = hash_rows([data[k] for k in key_names], [self.schema.field(k).type for k in key_names])
        if len(pvalues) == 1:
            return dynamic.assign(self._partition_row(pvalues[0]), hashes)
        buckets = np.empty(data.num_rows, np.int64)
        order = np.argsort(pcode, kind="stable")
        cuts = np.flatnonzero(np.diff(pcode[order])) + 1
        for rows in np.split(order, cuts):
            part = self._partition_row(pvalues[int(pcode[rows[0]])])
            buckets[rows] = dynamic.assign(part, hashes[rows])
        return buckets

    def _cross_assigner(self):
        if self._cross is None:
            skip = None
            if self.static_partition is not None:  # overwritten partitions lose their keys
                skip = PartitionSelector.of(
                    self.store.schema, self.static_partition, table=self.store.identifier, operation="overwrite"
                ).matches
            self._cross = CrossPartitionAssigner(self.store, self._base_snapshot(), skip)
        return self._cross

    def write_pandas(self, df) -> None:
        self.write_arrow(pa.Table.from_pandas(df, preserve_index=False))

    def _check_static_partition(self, data: pa.Table, static_partition: dict) -> None:
        for k, v in static_partition.items():
            try:
                want = pa.scalar(v, data[k].type)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                raise InvalidDataError(
                    f"overwrite partition spec of {self.store.identifier} gives '{k}' = {v!r}, "
                    f"which is not a {data[k].type} value"
                ) from None
            bad = pc.sum(pc.invert(pc.fill_null(pc.equal(data[k], want), False))).as_py()
            if bad:
                raise InvalidDataError(
                    f"overwrite of partition {self.static_partition} of {self.store.identifier} "
                    f"got {bad} row(s) whose '{k}' is not {v!r}"
                )

    # -- output ---------------------------------------------------------------------------------
    def _base_snapshot(self) -> Snapshot | None:
        """The snapshot this writer builds on (latest when first needed)."""
        if not self._base_read:
            self._base, self._base_read = self.store.snapshot_manager.latest(), True
        return self._base

    def _first_live(self) -> _LiveFiles:
        """The live files at the first base snapshot, read once per writer."""
        if self._live is None:
            self._live = _LiveFiles.at(self.store.manifest_store, self._base_snapshot())
        return self._live

    def _live_files(self) -> dict[tuple[bytes, int], list]:
        """Live data files per (partition, bucket) at the first base snapshot."""
        return self._first_live().by_bucket

    def _current_live_files(self) -> dict[tuple[bytes, int], list]:
        """Live files as of the writer's base snapshot, which moves past the writer's own commits:
        a reused writer compacts what its previous commits left, and the commit's sequence checks
        judge the compaction against that same base."""
        base = self._base_snapshot()
        first = self._first_live()
        if base is None or base.id == first.snapshot_id:
            return first.by_bucket
        if self._live_now is None or self._live_now.snapshot_id != base.id:
            self._live_now = _LiveFiles.at(self.store.manifest_store, base)
        return self._live_now.by_bucket

    def _restore_sequences(self) -> dict[tuple[bytes, int], int]:
        """Sequence numbers continue per bucket from the live files (Java 'scan' init mode)."""
        if self._next_seq is None:
            self._next_seq = {
                k: max(f.max_sequence_number for f in files) + 1 for k, files in self._live_files().items()
            }
        return self._next_seq

    def _picked_rows(self, buf: _BucketBuffer, start: int) -> pa.Table:
        """The bucket's rows numbered from ``start`` and merged by an engine that picks stored rows
        (deduplicate): the pick runs on the key, sequence and kind columns, and the winners are
        gathered from the bucket's own rows.

        The bucket's rows are gathered first, in arrival order (increasing positions: the batch is
        read front to back), and the winners are gathered from that copy in key order: a gather
        in key order straight from the whole batch jumps across all of it (strings included) and
        misses the cache at almost every row, a third slower in all than the two gathers.

        Every merged row then carries the number ``start``: each key appears once in the file, and
        its number stays above every older file's, which is all a later merge (Java's too)
        compares. A constant column costs nothing to store and a third of the time to encode and
        decode that distinct numbers take (0.4 against 1.3 ms, 0.25 against 0.7 ms per 50k rows)."""
        engine = self.engine
        assert engine is not None  # a primary-key table
        rows = buf.gathered()
        n = rows.num_rows
        narrow = rows.select([c for c in engine.pick_columns() or () if c != SEQ])
        narrow = narrow.append_column(
            pa.field(SEQ, pa.int64(), nullable=False), pa.array(arrow_memory.arange(start, n))
        ).append_column(_POSITION, pa.array(arrow_memory.arange(0, n)))
        narrow = engine.prepare_input(narrow)  # drops ignored retractions by their kind
        chosen = engine.pick(narrow, drop_deletes=False)
        if narrow.num_rows != n:  # positions in what prepare_input kept
            chosen = narrow[_POSITION].take(pa.array(chosen, pa.int64())).to_numpy()
        rows = take(rows, chosen)
        seq = arrow_memory.filled(len(chosen), start)
        return rows.append_column(pa.field(SEQ, pa.int64(), nullable=False), pa.array(seq))

    def _file_writer(self, partition_path: str, bucket: int) -> DataFileWriter:
        dictionary = self._dictionary.result() if self._dictionary is not None else None
        return DataFileWriter(self.store, partition_path, bucket, self.namer, dictionary=dictionary)

    def _flush_bucket(self, buf: _BucketBuffer) -> CommitMessage:
        partition = serialize_row(list(buf.partition), self.partition_types)
        seqs = self._restore_sequences()
        start = seqs.get((partition, buf.bucket), 0)
        seqs[(partition, buf.bucket)] = start + buf.rows
        ppath = partition_dir(self.partition_names, buf.partition, self.store.options.partition_default_name)
        changelog = []
        engine = self.engine
        picks = engine is not None and engine.pick_columns() is not None
        if picks and self.store.options.changelog_producer != "input":
            rows = self._picked_rows(buf, start)  # merged before the wide columns are gathered
            writer = self._file_writer(ppath, buf.bucket)  # after the pick: the sampling ran beside it
        else:
            writer = self._file_writer(ppath, buf.bucket)
            rows = buf.gathered()
            rows = rows.append_column(
                pa.field(SEQ, pa.int64(), nullable=False), pa.array(arrow_memory.arange(start, rows.num_rows))
            )
            if engine is not None:  # a primary-key table
                rows = engine.prepare_input(rows)
                if self.store.options.changelog_producer == "input" and rows.num_rows:
                    changelog = [w.meta for w in writer.write(rows, level=0, changelog=True)]
                rows = engine.merge(rows, drop_deletes=False)
        if engine is not None and rows.num_rows == 0:
            return CommitMessage(partition, buf.bucket, self._total_buckets(buf.partition))
        files = [w.meta for w in writer.write(rows, level=0)]
        if self.is_pk:
            # Inline compaction, as Java's batch writer: the bucket's picker runs now and its result
            # lands in the same commit as a COMPACT snapshot (first-row: level 0 is forced up, since
            # batch readers skip it).
            compact_written_bucket = self.hooks.compact_written_bucket  # compaction sits above write
            # An overwrite replaces the bucket's live files: only its own new files are levels.
            live = (
                [] if self.static_partition is not None else self._current_live_files().get((partition, buf.bucket), [])
            )
            msg = compact_written_bucket(
                partition,
                buf.bucket,
                self._total_buckets(buf.partition),
                live,
                files,
                self.namer,
                dictionary=writer.dictionary,  # the compacted files have this write's columns too
                latest=self._dv_latest,
            )
            if msg is not None:
                return CommitMessage(
                    partition,
                    buf.bucket,
                    self._total_buckets(buf.partition),
                    new_files=tuple(files),
                    changelog_files=tuple(changelog),
                    compact_before=msg.compact_before,
                    compact_after=msg.compact_after,
                    compact_changelog=msg.compact_changelog,
                    new_index_files=msg.new_index_files,
                    deleted_index_files=msg.deleted_index_files,
                )
        return CommitMessage(
            partition,
            buf.bucket,
            self._total_buckets(buf.partition),
            new_files=tuple(files),
            changelog_files=tuple(changelog),
        )

    def _total_buckets(self, values: tuple = ()) -> int:
        return self._bucket_count(values) if self.num_buckets >= 1 else -1

    def prepare_commit(self) -> list[CommitMessage]:
        buffers = list(self.buffers.values())
        self.buffers = {}
        if not buffers:
            return []
        self.store.check_identity()  # never write files into a dropped or re-created table
        if self.is_pk and self._base_read:
            self._advance_base_past_own_commits()  # inline compaction works on what this writer left
        self._restore_sequences()
        # the deletion vectors every bucket's inline compaction extends: one read of the latest
        # snapshot for all of them (on object storage each read is a round trip)
        self._dv_latest = (
            self.store.snapshot_manager.latest()
            if self.is_pk and self.store.options.deletion_vectors_enabled and not self.store.options.write_only
            else None
        )
        # Parquet encoding and zstd release the GIL: two threads use both cores. HASH index files
        # (dynamic mode) are written alongside, with their own file namer.
        index_changes = None
        first = buffers[0].batches[0][0]
        with ThreadPoolExecutor(max_workers=min(2, len(buffers) + (self._dynamic is not None))) as pool:
            if self._writes_parquet:
                # The buckets of this commit share one sampling, of the first rows buffered; the
                # first worker samples while the other picks its bucket's rows (the files wait
                # for it, so the same rows still give the same files).
                self._dictionary = pool.submit(DictionaryChoice, first)
            if self._dynamic is not None:
                index_changes = pool.submit(self._dynamic.prepare_commit, FileNamer())
            messages = list(pool.map(self._flush_bucket, buffers))
        self._dictionary = None  # the next commit samples its own rows (and this one's are let go)
        if index_changes is not None:
            messages = self._attach_index_changes(messages, index_changes.result())
        if self.is_pk:  # sequence numbers (and dynamic buckets) were assigned from the base snapshot
            messages = self._mark_base(messages)
        log.info(
            "prepared %d commit message(s) for %s: %d file(s), %d row(s)",
            len(messages),
            self.store.identifier,
            sum(len(m.new_files) for m in messages),
            sum(f.row_count for m in messages for f in m.new_files),
        )
        return messages

    def _attach_index_changes(self, messages: list[CommitMessage], changes: dict) -> list[CommitMessage]:
        """Each bucket that gained keys carries its complete new HASH file and the DELETE of the
        file it replaces; the commit fails if that file is no longer the bucket's
        (as Java's ``DynamicBucketIndexMaintainer``)."""
        by_key = {(m.partition, m.bucket): i for i, m in enumerate(messages)}
        for (part, bucket), entries in changes.items():
            new = tuple(e for e in entries if e.kind == 0)
            deleted = tuple(e for e in entries if e.kind != 0)
            i = by_key.get((part, bucket))
            if i is None:  # every row of the bucket was dropped (ignore-delete), its keys still count
                messages.append(
                    CommitMessage(part, bucket, self._total_buckets(), new_index_files=new, deleted_index_files=deleted)
                )
            else:
                messages[i] = replace(messages[i], new_index_files=new, deleted_index_files=deleted)
        return messages

    def _mark_base(self, messages: list[CommitMessage]) -> list[CommitMessage]:
        """Sequence numbers and bucket assignment relied on the table as of the base snapshot:
        the commit fails if another job since added rows numbered like these to a bucket written
        here, overwrote a partition written here (dynamic mode) or wrote any data
        (cross-partition mode); FileStoreCommit checks ``base_snapshot_id``."""
        base = self._advance_base_past_own_commits()
        base_id = base.id if base is not None else 0
        return [replace(m, base_snapshot_id=base_id) for m in messages]

    def _advance_base_past_own_commits(self) -> Snapshot | None:
        """A writer reused for several commits: snapshots after the base that only added this
        writer's own files keep its key index valid, so the base moves past them."""
        base = self._base_snapshot()
        latest = self.store.snapshot_manager.latest()
        if latest is None or (base is not None and latest.id == base.id):
            return base
        sid = (base.id if base is not None else 0) + 1
        while sid <= latest.id:
            snap = self.store.snapshot_manager.get(sid)
            if snap.commit_kind != CommitKind.COMPACT:  # compactions never move keys
                added = [e.file.file_name for e in self.store.manifest_store.delta_entries(snap) if e.kind == 0]
                if not added or not all(self.namer.named(name) for name in added):
                    break
            base = snap
            sid += 1
        self._base = base
        return base

    def close(self) -> None:
        if self._cross is not None:
            self._cross.close()
        self.buffers = {}
