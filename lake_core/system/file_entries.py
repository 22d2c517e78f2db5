"""The per-partition and per-bucket totals of ``$partitions`` and ``$buckets`` (Java
``PartitionEntry``/``BucketEntry``): every entry of the latest snapshot's data manifests, an ADD
counted as +1 file (its rows, its bytes), a DELETE as -1, summed per group with Arrow's group-by;
groups left with no file are dropped. ``last_update_time`` is the newest creation time of any entry
of the group, as Java's merge takes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.manifest.metadata import FileKind

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable


def entry_totals(table: FileStoreTable, snapshot: Snapshot | None, keys: Sequence[str]) -> pa.Table:
    """Columns ``partition`` (serialized, binary), ``bucket``, ``record_count``,
    ``file_size_in_bytes``, ``file_count``, ``last_update_time`` (epoch millis as stored), one row
    per group of ``keys`` (``["partition"]`` or ``["partition", "bucket"]``) that still has files."""
    entries = table.manifest_store.read_entries(table.manifest_store.data_manifests(snapshot)) if snapshot else []
    sign = np.fromiter((-1 if e.kind == FileKind.DELETE else 1 for e in entries), np.int64, len(entries))
    rows = pa.table(
        {
            "partition": pa.array([e.partition for e in entries], pa.binary()),
            "bucket": pa.array([e.bucket for e in entries], pa.int32()),
            "record_count": pa.array(sign * np.fromiter((e.file.row_count for e in entries), np.int64, len(entries))),
            "file_size_in_bytes": pa.array(
                sign * np.fromiter((e.file.file_size for e in entries), np.int64, len(entries))
            ),
            "file_count": pa.array(sign),
            "last_update_time": pa.array([e.file.creation_time for e in entries], pa.int64()),
        }
    )
    grouped = rows.group_by(list(keys)).aggregate(
        [
            ("record_count", "sum"),
            ("file_size_in_bytes", "sum"),
            ("file_count", "sum"),
            ("last_update_time", "max"),
        ]
    )
    grouped = grouped.rename_columns([c.removesuffix("_sum").removesuffix("_max") for c in grouped.column_names])
    return grouped.filter(pc.greater(grouped["file_count"], 0))
