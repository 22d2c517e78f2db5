"""Full compaction of one (partition, bucket): merge every live file into the highest level.

Used on commit for engines whose level-0 files are invisible to batch readers (first-row,
FORMAT.md P4), and as the building block of dedicated compaction. Writes new files only and
returns a CommitMessage; the caller commits it (plan → execute → commit).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pyarrow as pa

from .binary_row import deserialize_row
from .file_writer import DataFileWriter
from .merge.sort import KIND, SEQ
from .messages import CommitMessage
from .metadata import DataFileMeta, FileSource
from .paths import FileNamer, partition_dir

if TYPE_CHECKING:
    from .table import FileStoreTable


def read_kv_files(table: "FileStoreTable", partition_path: str, bucket: int,
                  files: Sequence[DataFileMeta]) -> pa.Table:
    """All columns plus _SEQUENCE_NUMBER/_VALUE_KIND of ``files``, concatenated oldest first."""
    from .schema_evolution import read_evolved
    schema = table.schema.arrow_schema()
    full = schema.append(pa.field(SEQ, pa.int64(), nullable=False)).append(pa.field(KIND, pa.int8(), nullable=False))
    parts = []
    bucket_dir = table.paths.bucket_dir(partition_path, bucket)
    for f in sorted(files, key=lambda f: (f.min_sequence_number, f.file_name)):
        path = f.external_path or f"{bucket_dir}/{f.file_name}"
        fmt = f.file_name.rsplit(".", 1)[-1]
        if table.fileio.is_local:
            parts.append(read_evolved(table, table.fileio._p(path), fmt, f.schema_id, full.names, full))
        else:
            with table.fileio.open_input(path) as src:
                parts.append(read_evolved(table, src, fmt, f.schema_id, full.names, full))
    if not parts:
        return full.empty_table()
    return pa.concat_tables(parts)


def compact_bucket(table: "FileStoreTable", partition: bytes, bucket: int, total_buckets: int,
                   files: Sequence[DataFileMeta], extra_new_files: Sequence[DataFileMeta] = (),
                   namer: FileNamer | None = None) -> CommitMessage:
    """Merge ``files`` (live) and ``extra_new_files`` (written in this commit) into max-level files."""
    schema = table.schema
    values = deserialize_row(partition, [schema.field(n).type for n in schema.partition_keys]) \
        if schema.partition_keys else []
    ppath = partition_dir(list(schema.partition_keys), values, table.options.partition_default_name)
    inputs = list(files) + list(extra_new_files)
    rows = read_kv_files(table, ppath, bucket, inputs)
    merged = table.merge_engine().merge(rows, drop_deletes=True)
    max_level = table.options.num_levels - 1
    writer = DataFileWriter(table, ppath, bucket, namer or FileNamer())
    after = [w.meta for w in writer.write(merged, level=max_level, file_source=FileSource.COMPACT)] \
        if merged.num_rows else []
    return CommitMessage(partition, bucket, total_buckets, new_files=tuple(extra_new_files),
                         compact_before=tuple(inputs), compact_after=tuple(after))
