"""Turning one bucket's rows into data files plus their ``DataFileMeta`` (stats, key range,
sequence range, retract count). Shared by writes, changelog files and compaction."""
from __future__ import annotations

import datetime as _dt
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pyarrow as pa

from lake_core.kv import rowkind
from lake_core.format.binary_row.writer import EMPTY_ROW, serialize_row
from lake_core.format.data_file import write_data_file
from lake_core.manifest.metadata import DataFileMeta, SimpleStats
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.paths import FileNamer, data_file_in
from lake_core.format.stats import parse_stats_mode, table_stats

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

    def __init__(self, table: "FileStore", partition_path: str, bucket: int, namer: FileNamer):
        self.table = table
        self.bucket_dir = table.paths.bucket_dir(partition_path, bucket)
        self.namer = namer
        schema = table.schema
        self.schema = schema
        self.is_pk = bool(schema.primary_keys)
        self.key_names = list(schema.trimmed_primary_keys) if self.is_pk else []
        self.key_types = [schema.field(k).type for k in self.key_names]
        opts = table.options
        self.fmt = opts.file_format
        self.value_names = [f.name for f in schema.fields]
        self.value_types = [f.type for f in schema.fields]
        modes = {n: parse_stats_mode(opts.field_stats_mode(n)) for n in self.value_names}
        self.stats_cols = [n for n in self.value_names if modes[n].kind != "none"]
        self.value_modes = modes
        self.key_modes = {k: parse_stats_mode("full") for k in self.key_names}
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

    def _stats(self, rows: pa.Table, names: Sequence[str], types, modes) -> SimpleStats:
        if not names:
            return EMPTY_STATS
        st = table_stats(rows, list(names), modes)
        return SimpleStats(serialize_row([s.min for s in st], types), serialize_row([s.max for s in st], types),
                           tuple(s.null_count for s in st))

    def write(self, rows: pa.Table, level: int = 0, file_source: int = 0, changelog: bool = False) -> list[WrittenFile]:
        """``rows`` must already be in final order (sorted by key for PK data files)."""
        out = []
        target = self.table.options.target_file_size
        # Roll files by in-memory size; Parquet+zstd typically compresses 3-6x, so 3x the target
        # in Arrow bytes keeps files near the target without measuring mid-write.
        per_row = max(1, rows.nbytes // max(1, rows.num_rows))
        chunk = max(1, int(3 * target // per_row))
        for start in range(0, rows.num_rows, chunk):
            out.append(self._write_one(rows.slice(start, chunk), level, file_source, changelog))
        return out

    def _write_one(self, rows: pa.Table, level: int, file_source: int, changelog: bool) -> WrittenFile:
        opts = self.table.options
        prefix = opts.changelog_file_prefix if changelog else opts.data_file_prefix
        name = self.namer.data_file(prefix, self.fmt)
        path = data_file_in(self.bucket_dir, name)
        buf = io.BytesIO()
        write_data_file(self._file_table(rows), self.file_fields, self.fmt, buf,
                        compression=opts.file_compression, options=opts.raw)
        data = buf.getvalue()
        self.table.fileio.write_bytes(path, data)
        seq = rows[SEQ].to_numpy()
        if self.is_pk:
            keys = rows.select(self.key_names)
            min_key = serialize_row(list(keys.slice(0, 1).to_pylist()[0].values()), self.key_types)
            max_key = serialize_row(list(keys.slice(rows.num_rows - 1, 1).to_pylist()[0].values()), self.key_types)
            key_stats = self._stats(rows, self.key_names, self.key_types, self.key_modes)
            deletes = int(np.count_nonzero(rowkind.is_retract(rows[KIND].to_numpy())))
        else:
            min_key = max_key = EMPTY_ROW
            key_stats = EMPTY_STATS
            deletes = 0
        value_stats = self._stats(rows, self.stats_cols, [self.schema.field(n).type for n in self.stats_cols],
                                  self.value_modes)
        meta = DataFileMeta(
            file_name=name, file_size=len(data), row_count=rows.num_rows,
            min_key=min_key, max_key=max_key, key_stats=key_stats, value_stats=value_stats,
            min_sequence_number=int(seq.min()) if len(seq) else 0,
            max_sequence_number=int(seq.max()) if len(seq) else 0,
            schema_id=self.schema.id, level=level, extra_files=(), creation_time=local_now_millis(),
            delete_row_count=deletes, embedded_file_index=None, file_source=file_source,
            value_stats_cols=None if len(self.stats_cols) == len(self.value_names) else tuple(self.stats_cols),
            external_path=None)
        return WrittenFile(meta, path)
