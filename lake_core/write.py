"""The write path: Arrow rows → validation → bucket assignment → per-(partition, bucket)
sort + fold in the merge engine → level-0 data files → CommitMessages (ARCHITECTURE §3)."""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import rowkind
from .binary_row import serialize_row
from .bucket import assign_buckets
from .errors import InvalidDataError, LakeError, SchemaMismatchError
from .merge.sort import KIND, SEQ
from .messages import CommitMessage
from .file_writer import DataFileWriter
from .paths import FileNamer, partition_dir

if TYPE_CHECKING:
    from .table import FileStoreTable

log = logging.getLogger(__name__)


def conform(table: "FileStoreTable", data: Any) -> pa.Table:
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
            raise SchemaMismatchError(f"write to {table.identifier} expects a pyarrow Table or RecordBatch, "
                                      f"got {type(data).__name__}")
    schema = table.schema
    expected = [f.name for f in schema.fields]
    got = data.column_names
    missing = [n for n in expected if n not in got]
    extra = [n for n in got if n not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing column(s) {missing}")
        if extra:
            parts.append(f"unknown column(s) {extra}")
        raise SchemaMismatchError(f"data written to {table.identifier} does not match its schema: "
                                  + "; ".join(parts) + f" (table columns: {expected})")
    cols = []
    for f in schema.fields:
        col = data[f.name]
        if col.type != f.type:
            if not _castable(col.type, f.type):
                raise SchemaMismatchError(
                    f"column '{f.name}' of {table.identifier} has type {f.type}, but the data has {col.type}")
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise SchemaMismatchError(
                    f"column '{f.name}' of {table.identifier} has type {f.type}; the data ({col.type}) does not "
                    f"fit: {e}") from None
        if not f.nullable and col.null_count:
            what = "primary-key column" if f.name in schema.primary_keys else "NOT NULL column"
            raise InvalidDataError(f"{what} '{f.name}' of {table.identifier} contains {col.null_count} NULL "
                                   "value(s); every row needs a value there")
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema.arrow_schema())


def _castable(src: pa.DataType, dst: pa.DataType) -> bool:
    """Widening and same-family casts only: a string never silently becomes a number."""
    fam = lambda t: ("int" if pa.types.is_integer(t) else "float" if pa.types.is_floating(t)
                     else "str" if pa.types.is_string(t) or pa.types.is_large_string(t)
                     else "bin" if pa.types.is_binary(t) or pa.types.is_large_binary(t)
                     else "dec" if pa.types.is_decimal(t) else "ts" if pa.types.is_timestamp(t)
                     else "date" if pa.types.is_date(t) else str(t))
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
        idx = np.where(enc.indices.is_null().to_numpy(zero_copy_only=False), size - 1, idx) if enc.indices.null_count else idx
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


@dataclass
class _BucketBuffer:
    partition: tuple
    bucket: int
    batches: list[pa.Table] = field(default_factory=list)
    rows: int = 0


class TableWrite:
    """Buffers rows per (partition, bucket); ``prepare_commit`` writes level-0 files."""

    def __init__(self, table: "FileStoreTable", static_partition: dict | None = None):
        self.table = table
        schema = table.schema
        self.schema = schema
        self.is_pk = bool(schema.primary_keys)
        opts = table.options
        self.num_buckets = opts.bucket
        if self.is_pk and self.num_buckets < 1:
            table.require_fixed_bucket()
        self.partition_names = list(schema.partition_keys)
        self.partition_types = [schema.field(n).type for n in self.partition_names]
        self.bucket_keys = list(schema.bucket_keys()) if self.num_buckets >= 1 else []
        self.bucket_types = [schema.field(n).type for n in self.bucket_keys]
        self.engine = table.merge_engine() if self.is_pk else None
        self.rowkind_field = opts.rowkind_field
        self.static_partition = static_partition
        self.buffers: dict[tuple, _BucketBuffer] = {}
        self.namer = FileNamer()
        self._next_seq: dict[tuple[bytes, int], int] | None = None
        self.rows_written = 0

    # -- input ----------------------------------------------------------------------------------
    def write_arrow(self, data: Any) -> None:
        data = conform(self.table, data)
        if data.num_rows == 0:
            return
        if getattr(self, "_fixed_kind", None) is not None:
            kinds = np.full(data.num_rows, self._fixed_kind, np.int8)
        elif self.rowkind_field:
            kinds = rowkind.kinds_from_column(data[self.rowkind_field], self.rowkind_field)
        else:
            kinds = np.zeros(data.num_rows, np.int8)
        if self.static_partition:
            self._check_static_partition(data)
        data = data.append_column(pa.field(KIND, pa.int8(), nullable=False), pa.array(kinds, pa.int8()))
        pcode, pvalues = partition_codes(data, self.partition_names)
        if self.num_buckets >= 1:
            buckets = assign_buckets([data[k] for k in self.bucket_keys], self.bucket_types, self.num_buckets,
                                     self.table.options.bucket_function).astype(np.int64)
        else:
            buckets = np.zeros(data.num_rows, np.int64)  # bucket-unaware append table
        nb = max(self.num_buckets, 1)
        gid = pcode * nb + buckets
        order = np.argsort(gid, kind="stable")  # stable: keeps input order inside a bucket
        sorted_gid = gid[order]
        cuts = np.flatnonzero(np.diff(sorted_gid)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(order)]])
        for s, e in zip(starts.tolist(), ends.tolist()):
            g = int(sorted_gid[s])
            pv, b = pvalues[g // nb], g % nb
            buf = self.buffers.get((pv, b))
            if buf is None:
                buf = self.buffers[(pv, b)] = _BucketBuffer(pv, b)
            part = data.take(pa.array(order[s:e]))
            buf.batches.append(part)
            buf.rows += part.num_rows
        self.rows_written += data.num_rows

    write_arrow_batch = write_arrow

    def write_pandas(self, df) -> None:
        self.write_arrow(pa.Table.from_pandas(df, preserve_index=False))

    def _check_static_partition(self, data: pa.Table) -> None:
        for k, v in self.static_partition.items():
            bad = pc.sum(pc.invert(pc.fill_null(pc.equal(data[k], pa.scalar(v, data[k].type)), False))).as_py()
            if bad:
                raise InvalidDataError(f"overwrite of partition {self.static_partition} of {self.table.identifier} "
                                       f"got {bad} row(s) whose '{k}' is not {v!r}")

    # -- output ---------------------------------------------------------------------------------
    def _live_files(self) -> dict[tuple[bytes, int], list]:
        """Live data files per (partition, bucket) at the latest snapshot, read once per writer."""
        live = self.__dict__.get("_live")
        if live is None:
            live = {}
            for e in self.table.manifest_store.live_entries(self.table.snapshot_manager.latest()):
                live.setdefault((e.partition, e.bucket), []).append(e.file)
            self._live = live
        return live

    def _restore_sequences(self) -> dict[tuple[bytes, int], int]:
        """Sequence numbers continue per bucket from the live files (Java 'scan' init mode)."""
        if self._next_seq is None:
            self._next_seq = {k: max(f.max_sequence_number for f in files) + 1
                              for k, files in self._live_files().items()}
        return self._next_seq

    def _flush_bucket(self, buf: _BucketBuffer) -> CommitMessage:
        partition = serialize_row(list(buf.partition), self.partition_types)
        rows = pa.concat_tables(buf.batches) if len(buf.batches) > 1 else buf.batches[0]
        seqs = self._restore_sequences()
        start = seqs.get((partition, buf.bucket), 0)
        seqs[(partition, buf.bucket)] = start + rows.num_rows
        rows = rows.append_column(pa.field(SEQ, pa.int64(), nullable=False),
                                  pa.array(np.arange(start, start + rows.num_rows, dtype=np.int64)))
        ppath = partition_dir(self.partition_names, buf.partition, self.table.options.partition_default_name)
        writer = DataFileWriter(self.table, ppath, buf.bucket, self.namer)
        changelog = []
        if self.is_pk:
            rows = self.engine.prepare_input(rows)
            if rows.num_rows == 0:
                return CommitMessage(partition, buf.bucket, self._total_buckets())
            if self.table.options.changelog_producer == "input":
                changelog = [w.meta for w in writer.write(rows, level=0, changelog=True)]
            rows = self.engine.merge(rows, drop_deletes=False)
        files = [w.meta for w in writer.write(rows, level=0)]
        if self.is_pk and self.engine.hides_level0:
            # Batch readers skip level 0 for this engine (FORMAT.md P4): compact the bucket up in the
            # same commit, as Paimon's writer does, so committed data is visible at once.
            from .compact import compact_bucket
            live = self._live_files().get((partition, buf.bucket), [])
            msg = compact_bucket(self.table, partition, buf.bucket, self._total_buckets(), live, files, self.namer)
            return CommitMessage(partition, buf.bucket, self._total_buckets(), new_files=tuple(files),
                                 changelog_files=tuple(changelog), compact_before=msg.compact_before,
                                 compact_after=msg.compact_after)
        return CommitMessage(partition, buf.bucket, self._total_buckets(), new_files=tuple(files),
                             changelog_files=tuple(changelog))

    def _total_buckets(self) -> int:
        return self.num_buckets if self.num_buckets >= 1 else -1

    def prepare_commit(self) -> list[CommitMessage]:
        buffers = list(self.buffers.values())
        self.buffers = {}
        if not buffers:
            return []
        self._restore_sequences()
        # Parquet encoding and zstd release the GIL: two threads use both cores.
        with ThreadPoolExecutor(max_workers=min(2, len(buffers))) as pool:
            messages = list(pool.map(self._flush_bucket, buffers))
        log.info("prepared %d commit message(s) for %s: %d file(s), %d row(s)", len(messages),
                 self.table.identifier, sum(len(m.new_files) for m in messages),
                 sum(f.row_count for m in messages for f in m.new_files))
        return messages

    def close(self) -> None:
        self.buffers = {}
