"""``$partitions`` (Java ``PartitionsTable``) and ``$buckets`` (Java ``BucketsTable``): rows, bytes
and files per partition (per bucket), sorted by the partition's text (then bucket)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lake_core.system.file_entries import entry_totals
from lake_core.system.kind import SystemTableKind, fixed
from lake_core.system.partition_text import PartitionText

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

_TOTALS = [
    pa.field("record_count", pa.int64(), nullable=False),
    pa.field("file_size_in_bytes", pa.int64(), nullable=False),
    pa.field("file_count", pa.int64(), nullable=False),
    pa.field("last_update_time", pa.timestamp("ms")),
]
PARTITIONS_SCHEMA = pa.schema([pa.field("partition", pa.string()), *_TOTALS])
BUCKETS_SCHEMA = pa.schema(
    [pa.field("partition", pa.string()), pa.field("bucket", pa.int32(), nullable=False), *_TOTALS]
)


def _rows(table: FileStoreTable, snapshot: Snapshot | None, schema: pa.Schema) -> pa.Table:
    keys = [n for n in ("partition", "bucket") if n in schema.names]
    totals = entry_totals(table, snapshot, keys)
    totals = totals.set_column(0, "partition", PartitionText(table).column(totals["partition"].to_pylist()))
    totals = totals.set_column(
        totals.column_names.index("last_update_time"),
        "last_update_time",
        pc.cast(totals["last_update_time"], pa.timestamp("ms")),
    )
    order = [("partition", "ascending")] + ([("bucket", "ascending")] if "bucket" in keys else [])
    return totals.sort_by(order).select(schema.names).cast(schema)


def partition_rows(table: FileStoreTable, snapshot: Snapshot | None, _part: Any) -> pa.Table:
    return _rows(table, snapshot, PARTITIONS_SCHEMA)


def bucket_rows(table: FileStoreTable, snapshot: Snapshot | None, _part: Any) -> pa.Table:
    return _rows(table, snapshot, BUCKETS_SCHEMA)


PARTITIONS = SystemTableKind(
    name="partitions",
    schema=fixed(PARTITIONS_SCHEMA),
    rows=partition_rows,
    description="rows, bytes and files per partition of the latest snapshot",
)
BUCKETS = SystemTableKind(
    name="buckets",
    schema=fixed(BUCKETS_SCHEMA),
    rows=bucket_rows,
    description="rows, bytes and files per bucket of the latest snapshot",
)
