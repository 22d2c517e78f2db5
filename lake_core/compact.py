"""Full compaction of one (partition, bucket): merge every live file into the highest level.

Used on commit for engines whose level-0 files are invisible to batch readers (first-row, as
Java's ``FirstRowMergeFunction`` tables), and as the building block of dedicated compaction.
Writes new files only and returns a CommitMessage; the caller commits it (plan → execute → commit).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import pyarrow as pa

from .binary_row import deserialize_row
from .file_writer import DataFileWriter
from .merge.sort import KIND, SEQ
from .messages import CommitMessage
from .metadata import DataFileMeta, FileSource
from .paths import FileNamer, data_file_in, partition_dir

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
        path = f.external_path or data_file_in(bucket_dir, f.file_name)
        parts.append(read_evolved(table, path, f, f.file_name.rsplit(".", 1)[-1], full.names, full))
    if not parts:
        return full.empty_table()
    return pa.concat_tables(parts)


def partition_path(table: "FileStoreTable", partition: bytes) -> str:
    """The relative directory of a serialized partition row (``dt=2024-01-01/...``)."""
    schema = table.schema
    values = deserialize_row(partition, [schema.field(n).type for n in schema.partition_keys]) \
        if schema.partition_keys else []
    return partition_dir(list(schema.partition_keys), values, table.options.partition_default_name)


def compact_bucket(table: "FileStoreTable", partition: bytes, bucket: int, total_buckets: int,
                   files: Sequence[DataFileMeta], extra_new_files: Sequence[DataFileMeta] = (),
                   namer: FileNamer | None = None, base_snapshot_id: int | None = None) -> CommitMessage:
    """Merge ``files`` (live) and ``extra_new_files`` (written in this commit) into max-level files.

    ``base_snapshot_id`` is the snapshot ``files`` were live in; the commit uses it to refuse a
    compaction whose dropped deletes are still needed by files that landed since."""
    ppath = partition_path(table, partition)
    inputs = list(files) + list(extra_new_files)
    rows = read_kv_files(table, ppath, bucket, inputs)
    merged = table.merge_engine().merge(rows, drop_deletes=True)
    max_level = table.options.num_levels - 1
    writer = DataFileWriter(table, ppath, bucket, namer or FileNamer())
    after = [w.meta for w in writer.write(merged, level=max_level, file_source=FileSource.COMPACT)] \
        if merged.num_rows else []
    return CommitMessage(partition, bucket, total_buckets, new_files=tuple(extra_new_files),
                         compact_before=tuple(inputs), compact_after=tuple(after), base_snapshot_id=base_snapshot_id)


def recompact_buckets(table: "FileStoreTable", snapshot, buckets) -> list[CommitMessage]:
    """Full compactions of ``buckets`` ((partition, bucket, total_buckets)) as live at ``snapshot``:
    how a first-row commit whose own compaction lost a race still makes its rows visible."""
    live: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in table.manifest_store.live_entries(snapshot):
        live.setdefault((e.partition, e.bucket), []).append(e.file)
    base = snapshot.id if snapshot is not None else 0
    out = []
    for partition, bucket, total in sorted(buckets):
        files = live.get((partition, bucket), [])
        if files:
            out.append(compact_bucket(table, partition, bucket, total, files, base_snapshot_id=base))
    return out
