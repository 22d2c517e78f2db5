"""``$files`` (Java ``FilesTable``): the data files a batch read of the latest snapshot plans, one
row per file, built column by column from the scan's file metadata (no data file is opened)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.manifest.metadata import FileSource
from lake_core.read.scan import TableScan
from lake_core.system.file_stats import FileStatsText
from lake_core.system.kind import SystemTableKind, fixed
from lake_core.system.partition_text import PartitionText

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

SCHEMA = pa.schema(
    [
        pa.field("partition", pa.string()),
        pa.field("bucket", pa.int32(), nullable=False),
        pa.field("file_path", pa.string(), nullable=False),
        pa.field("file_format", pa.string(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("level", pa.int32(), nullable=False),
        pa.field("record_count", pa.int64(), nullable=False),
        pa.field("file_size_in_bytes", pa.int64(), nullable=False),
        pa.field("min_key", pa.string()),
        pa.field("max_key", pa.string()),
        pa.field("null_value_counts", pa.string(), nullable=False),
        pa.field("min_value_stats", pa.string(), nullable=False),
        pa.field("max_value_stats", pa.string(), nullable=False),
        pa.field("min_sequence_number", pa.int64()),
        pa.field("max_sequence_number", pa.int64()),
        pa.field("creation_time", pa.timestamp("ms")),
        pa.field("file_source", pa.string()),
    ]
)

_SOURCES = {int(s): s.name for s in FileSource}


def rows(table: FileStoreTable, snapshot: Snapshot | None, _part: Any) -> pa.Table:
    splits = TableScan(table.store, snapshot).splits()
    pairs = [(s, f) for s in splits for f in s.files]
    files = [f for _, f in pairs]
    partition = PartitionText(table)
    stats = FileStatsText(table)
    texts = [stats.stats_text(f) for f in files]
    return pa.Table.from_arrays(
        [
            partition.column(s.partition for s, _ in pairs),
            pa.array([s.bucket for s, _ in pairs], pa.int32()),
            pa.array([s.file_path(f) for s, f in pairs], pa.string()),
            pa.array([f.file_name.rsplit(".", 1)[-1] for f in files], pa.string()),
            pa.array([f.schema_id for f in files], pa.int64()),
            pa.array([f.level for f in files], pa.int32()),
            pa.array([f.row_count for f in files], pa.int64()),
            pa.array([f.file_size for f in files], pa.int64()),
            pa.array([stats.key_text(f, "min") for f in files], pa.string()),
            pa.array([stats.key_text(f, "max") for f in files], pa.string()),
            pa.array([t[0] for t in texts], pa.string()),
            pa.array([t[1] for t in texts], pa.string()),
            pa.array([t[2] for t in texts], pa.string()),
            pa.array([f.min_sequence_number for f in files], pa.int64()),
            pa.array([f.max_sequence_number for f in files], pa.int64()),
            # epoch millis of the writer's local wall clock, what Java's TIMESTAMP holds
            pa.array([f.creation_time for f in files], pa.timestamp("ms")),
            pa.array([None if f.file_source is None else _SOURCES.get(f.file_source) for f in files], pa.string()),
        ],
        schema=SCHEMA,
    )


FILES = SystemTableKind(
    name="files", schema=fixed(SCHEMA), rows=rows, description="the data files a read of the latest snapshot plans"
)
