"""Running one compaction unit: read the files of each rewrite through the merge engine, write the
result at the output level (rolled at ``target-file-size``), move upgraded files by metadata only.
Returns the unit's CommitMessage with counters; the caller commits (plan -> execute -> commit).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pyarrow as pa

from .. import rowkind
from ..file_writer import DataFileWriter
from ..merge.sort import KIND, SEQ
from ..messages import CommitMessage
from ..metadata import DataFileMeta, FileSource
from ..paths import FileNamer, partition_dir
from .expire import RecordExpiry
from .levels import key_decoder
from .picker import CompactUnit
from .task import Rewrite, unit_actions

if TYPE_CHECKING:
    from ..table import FileStoreTable


def read_kv_files(table: "FileStoreTable", partition_path: str, bucket: int,
                  files: Sequence[DataFileMeta]) -> pa.Table:
    """All columns plus _SEQUENCE_NUMBER/_VALUE_KIND of ``files``, concatenated oldest first."""
    from ..data_file_format import read_data_file
    schema = table.schema.arrow_schema()
    full = schema.append(pa.field(SEQ, pa.int64(), nullable=False)).append(pa.field(KIND, pa.int8(), nullable=False))
    parts = []
    bucket_dir = table.paths.bucket_dir(partition_path, bucket)
    for f in sorted(files, key=lambda f: (f.min_sequence_number, f.file_name)):
        path = f.external_path or f"{bucket_dir}/{f.file_name}"
        fmt = f.file_name.rsplit(".", 1)[-1]
        if table.fileio.is_local:
            parts.append(read_data_file(table.fileio._p(path), fmt, full.names, full))
        else:
            with table.fileio.open_input(path) as src:
                parts.append(read_data_file(src, fmt, full.names, full))
    if not parts:
        return full.empty_table()
    return pa.concat_tables(parts)


@dataclass(frozen=True)
class UnitCounts:
    rows_in: int = 0
    rows_out: int = 0
    rows_deleted: int = 0  # retractions dropped at the top level
    rows_expired: int = 0  # record-level expiry
    rows_null_time: int = 0  # kept: NULL time field
    files_upgraded: int = 0


@dataclass(frozen=True)
class UnitOutcome:
    message: CommitMessage
    counts: UnitCounts


def partition_path(table: "FileStoreTable", partition: bytes) -> str:
    schema = table.schema
    from ..binary_row import deserialize_row
    values = deserialize_row(partition, [schema.field(n).type for n in schema.partition_keys]) \
        if schema.partition_keys else []
    return partition_dir(list(schema.partition_keys), values, table.options.partition_default_name)


def run_compact_unit(table: "FileStoreTable", partition: bytes, bucket: int, total_buckets: int, unit: CompactUnit,
                     *, drop_delete: bool, max_level: int, expiry: RecordExpiry | None = None,
                     extra_new_files: Sequence[DataFileMeta] = (), namer: FileNamer | None = None) -> UnitOutcome:
    """Execute ``unit`` of one bucket. ``extra_new_files`` are files written by the same commit
    (inline compaction): they are reported as new files of the message."""
    opts = table.options
    key_of = key_decoder(table.key_types)
    schema = table.schema
    is_expired = (lambda f: expiry.file_has_expired(f, schema)) if expiry is not None else (lambda f: False)
    actions = unit_actions(unit, key_of=key_of, max_level=max_level,
                           min_file_size=int(opts.target_file_size * opts.compaction_small_file_ratio),
                           is_expired=is_expired, force_rewrite=opts.compaction_force_rewrite_all_files)
    ppath = partition_path(table, partition)
    writer = DataFileWriter(table, ppath, bucket, namer or FileNamer())
    engine = table.merge_engine()
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    c = dict(rows_in=0, rows_out=0, rows_deleted=0, rows_expired=0, rows_null_time=0, files_upgraded=0)
    for action in actions:
        if not isinstance(action, Rewrite):
            f = action.file
            before.append(f)
            after.append(f.upgrade(unit.output_level))
            c["files_upgraded"] += 1
            continue
        files = [f for section in action.sections for f in section]
        before.extend(files)
        rows = read_kv_files(table, ppath, bucket, files)
        c["rows_in"] += rows.num_rows
        if expiry is not None:
            rows, expired, nulls = expiry.split(rows)
            c["rows_expired"] += expired
            c["rows_null_time"] += nulls
        merged = engine.merge(rows, drop_deletes=False)
        if drop_delete and merged.num_rows:
            retract = rowkind.is_retract(merged[KIND].to_numpy())
            n = int(np.count_nonzero(retract))
            if n:
                merged = merged.filter(pa.array(~retract))
                c["rows_deleted"] += n
        c["rows_out"] += merged.num_rows
        if merged.num_rows:
            after.extend(w.meta for w in writer.write(merged, level=unit.output_level, file_source=FileSource.COMPACT))
    msg = CommitMessage(partition, bucket, total_buckets, new_files=tuple(extra_new_files),
                        compact_before=tuple(before), compact_after=tuple(after))
    return UnitOutcome(msg, UnitCounts(**c))
