"""Turning one bucket's rows into data files plus their ``DataFileMeta`` (stats, key range,
sequence range, retract count). Shared by writes, changelog files and compaction."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.format.binary_row.writer import EMPTY_ROW, serialize_row
from lake_core.format.data_file_writer import DataFileStreamWriter
from lake_core.format.parquet_file import DictionaryChoice
from lake_core.format.stats import StatsAccumulator, footer_gives_extremes, parse_stats_mode
from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.manifest.metadata import DataFileMeta, SimpleStats
from lake_core.paths import FileNamer, data_file_in

if TYPE_CHECKING:
    from lake_core.store import FileStore

EMPTY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


def local_now_millis() -> int:
    """Paimon stores creation time as the *local* wall clock encoded as if it were UTC (Java ``DataFileMeta.creationTime``)."""
    now = _dt.datetime.now()
    return int((now - _dt.datetime(1970, 1, 1)).total_seconds() * 1000)


@dataclass
class WrittenFile:
    meta: DataFileMeta
    path: str


class DataFileWriter:
    """Writes files for one (partition, bucket) of one table."""

    def __init__(
        self,
        store: FileStore,
        partition_path: str,
        bucket: int,
        namer: FileNamer,
        *,
        dictionary: DictionaryChoice | None = None,
    ):
        """``dictionary``: the Parquet dictionary columns shared by the files of one write."""
        self.store = store
        self.dictionary = dictionary
        self.bucket_dir = store.paths.bucket_dir(partition_path, bucket)
        self.namer = namer
        schema = store.schema
        self.schema = schema
        self.is_pk = bool(schema.primary_keys)
        self.key_names = list(schema.trimmed_primary_keys) if self.is_pk else []
        self.key_types = [schema.field(k).type for k in self.key_names]
        opts = store.options
        self.fmt = opts.file_format
        self.value_names = [f.name for f in schema.fields]
        self.value_types = [f.type for f in schema.fields]
        modes = {n: parse_stats_mode(opts.field_stats_mode(n)) for n in self.value_names}
        self.stats_cols = [n for n in self.value_names if modes[n].kind != "none"]
        self.value_modes = modes
        self.key_modes = {k: parse_stats_mode("full") for k in self.key_names}
        # columns whose min / max a Parquet file's own footer gives (its writer computes them)
        stats_names = dict.fromkeys([*self.key_names, *self.stats_cols])
        self.footer_stats = (
            [n for n in stats_names if footer_gives_extremes(schema.field(n).type)] if self.fmt == "parquet" else []
        )
        if self.is_pk:
            self.file_fields = list(schema.kv_arrow_schema())
        else:
            self.file_fields = list(schema.arrow_schema())

    def _file_table(self, rows: pa.Table) -> pa.Table:
        """Rows (table columns + _SEQUENCE_NUMBER + _VALUE_KIND) in the on-disk column layout."""
        if not self.is_pk:
            return rows.select(self.value_names).cast(pa.schema(self.file_fields))
        cols = [rows[k] for k in self.key_names] + [rows[SEQ], rows[KIND]] + [rows[n] for n in self.value_names]
        return pa.Table.from_arrays(cols, schema=pa.schema(self.file_fields))

    def _stats(self, acc: StatsAccumulator, types, footer=None) -> SimpleStats:
        if not acc.columns:
            return EMPTY_STATS
        st = acc.result(footer)
        return SimpleStats(
            serialize_row([s.min for s in st], types),
            serialize_row([s.max for s in st], types),
            tuple(s.null_count for s in st),
        )

    def rolling(
        self, *, level: int = 0, file_source: int = 0, changelog: bool = False, group_bytes: int | None = None
    ) -> RollingFileWriter:
        """A writer that takes rows in chunks and rolls files at ``target-file-size``; ``group_bytes``:
        the Arrow bytes it gathers per row group (default: ``parquet.block.size`` or 16 MiB), for a
        caller that keeps many writers open at once."""
        return RollingFileWriter(
            self, level=level, file_source=file_source, changelog=changelog, group_bytes=group_bytes
        )

    def write(self, rows: pa.Table, level: int = 0, file_source: int = 0, changelog: bool = False) -> list[WrittenFile]:
        """``rows`` must already be in final order (sorted by key for PK data files)."""
        w = self.rolling(level=level, file_source=file_source, changelog=changelog)
        try:
            w.write(rows)
            return w.close()
        except BaseException:
            w.abort()
            raise


#: Arrow bytes gathered before they are encoded as one Parquet row group: few, large row groups
#: compress well and keep per-call overhead low, and the memory held stays a small constant.
ROW_GROUP_BYTES = 16 << 20


class _OpenFile:
    """The file a rolling writer is filling, with its metadata gathered chunk by chunk."""

    def __init__(self, w: DataFileWriter, name: str, path: str, min_key: list):
        opts = w.store.options
        self.name, self.path = name, path
        self.out = w.store.fileio.open_output(path)
        self.encoder = DataFileStreamWriter(
            w.file_fields,
            w.fmt,
            self.out.stream,
            compression=opts.file_compression,
            options=opts.raw,
            dictionary=w.dictionary,
        )
        self.key_stats = StatsAccumulator(w.key_names, w.key_modes, from_footer=w.footer_stats)
        self.value_stats = StatsAccumulator(w.stats_cols, w.value_modes, from_footer=w.footer_stats)
        self.min_key = min_key  # key of the first row
        self.max_key = min_key  # key of the last row so far
        self.min_seq: int | None = None
        self.max_seq: int | None = None
        self.deletes = 0


class RollingFileWriter:
    """Paimon's ``RollingFileWriter``: rows arrive in order, in chunks of any size, and go to a
    file until its encoded size reaches ``target-file-size``; then the next file starts. Only one
    row group's worth of rows is held; ``DataFileMeta`` (row count, key range, key and value
    statistics, sequence range, retract count) is gathered as the chunks pass."""

    def __init__(
        self, writer: DataFileWriter, *, level: int, file_source: int, changelog: bool, group_bytes: int | None = None
    ):
        self.w = writer
        self.level, self.file_source, self.changelog = level, file_source, changelog
        self.target = writer.store.options.target_file_size
        # a row group never exceeds half the target, so a small target still rolls by size
        block = group_bytes or writer.store.options.parquet_block_size or ROW_GROUP_BYTES
        self.group_bytes = max(1, min(block, self.target // 2))
        self.written: list[WrittenFile] = []
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._file: _OpenFile | None = None

    def write(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        if self._pending and rows.schema != self._pending[0].schema:
            # chunks of one stream may differ in nullability or column order (e.g. a join's output)
            head = self._pending[0].schema
            rows = rows.select(head.names).cast(head)
        self._pending.append(rows)
        self._pending_bytes += rows.nbytes
        while self._pending_bytes >= self.group_bytes:
            self._flush_group()

    def _flush_group(self) -> None:
        rows = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        per_row = max(1, self._pending_bytes // max(1, rows.num_rows))
        take = max(1, self.group_bytes // per_row)
        group, rest = rows.slice(0, take), rows.slice(take)
        self._pending = [rest] if rest.num_rows else []
        self._pending_bytes = rest.nbytes if rest.num_rows else 0
        self._write_group(group)

    def _write_group(self, rows: pa.Table) -> None:
        w = self.w
        f = self._file
        if f is None:
            opts = w.store.options
            name = w.namer.data_file(opts.changelog_file_prefix if self.changelog else opts.data_file_prefix, w.fmt)
            f = self._file = _OpenFile(w, name, data_file_in(w.bucket_dir, name), self._key_at(rows, 0))
        f.encoder.write(w._file_table(rows))
        f.key_stats.add(rows)
        f.value_stats.add(rows)
        lo, hi = pc.min_max(rows[SEQ]).values()
        f.min_seq = lo.as_py() if f.min_seq is None else min(f.min_seq, lo.as_py())
        f.max_seq = hi.as_py() if f.max_seq is None else max(f.max_seq, hi.as_py())
        if w.is_pk:
            f.deletes += int(np.count_nonzero(rowkind.is_retract(rows[KIND].to_numpy())))
        f.max_key = self._key_at(rows, rows.num_rows - 1)
        if f.encoder.bytes_written >= self.target:
            self._roll(f)

    def _key_at(self, rows: pa.Table, i: int) -> list:
        # Python values, not a slice: a slice would keep the whole chunk's buffers alive
        return [rows[k][i].as_py() for k in self.w.key_names]

    def _roll(self, f: _OpenFile) -> None:
        size = f.encoder.close()
        f.out.commit()
        self._file = None  # only now: a failed close or commit is still aborted by abort()
        w = self.w
        footer = f.encoder.footer_extremes(w.footer_stats)
        if w.is_pk:
            min_key = serialize_row(f.min_key, w.key_types)
            max_key = serialize_row(f.max_key, w.key_types)
            key_stats = w._stats(f.key_stats, w.key_types, footer)
        else:
            min_key = max_key = EMPTY_ROW
            key_stats = EMPTY_STATS
        value_stats = w._stats(f.value_stats, [w.schema.field(n).type for n in w.stats_cols], footer)
        meta = DataFileMeta(
            file_name=f.name,
            file_size=size,
            row_count=f.encoder.rows,
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            value_stats=value_stats,
            min_sequence_number=f.min_seq or 0,
            max_sequence_number=f.max_seq or 0,
            schema_id=w.schema.id,
            level=self.level,
            extra_files=(),
            creation_time=local_now_millis(),
            delete_row_count=f.deletes,
            embedded_file_index=None,
            file_source=self.file_source,
            value_stats_cols=None if len(w.stats_cols) == len(w.value_names) else tuple(w.stats_cols),
            external_path=None,
        )
        self.written.append(WrittenFile(meta, f.path))

    def close(self) -> list[WrittenFile]:
        """Write what is held and finish the last file; the files written, in order."""
        while self._pending:
            self._flush_group()
        if self._file is not None:
            self._roll(self._file)
        return self.written

    def abort(self) -> None:
        """Drop the file being written (finished files are the caller's to delete)."""
        self._pending, self._pending_bytes = [], 0
        if self._file is not None:
            self._file.out.abort()
            self._file = None
