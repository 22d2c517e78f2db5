"""``$snapshots`` (Java ``SnapshotsTable``): one row per snapshot file, ascending."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.system.java_text import local_millis
from lake_core.system.kind import SystemTableKind, fixed

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

SCHEMA = pa.schema(
    [
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("commit_user", pa.string(), nullable=False),
        pa.field("commit_identifier", pa.int64(), nullable=False),
        pa.field("commit_kind", pa.string(), nullable=False),
        pa.field("commit_time", pa.timestamp("ms"), nullable=False),
        pa.field("base_manifest_list", pa.string(), nullable=False),
        pa.field("delta_manifest_list", pa.string(), nullable=False),
        pa.field("changelog_manifest_list", pa.string()),
        pa.field("total_record_count", pa.int64()),
        pa.field("delta_record_count", pa.int64()),
        pa.field("changelog_record_count", pa.int64()),
        pa.field("watermark", pa.int64()),
    ]
)


def rows(table: FileStoreTable, _snapshot: Snapshot | None, _part: Any) -> pa.Table:
    snaps = table.snapshots()
    return pa.Table.from_arrays(
        [
            pa.array([s.id for s in snaps], pa.int64()),
            pa.array([s.schema_id for s in snaps], pa.int64()),
            pa.array([s.commit_user for s in snaps], pa.string()),
            pa.array([s.commit_identifier for s in snaps], pa.int64()),
            pa.array([s.commit_kind.value for s in snaps], pa.string()),
            local_millis([s.time_millis for s in snaps]),
            pa.array([s.base_manifest_list for s in snaps], pa.string()),
            pa.array([s.delta_manifest_list for s in snaps], pa.string()),
            pa.array([s.changelog_manifest_list for s in snaps], pa.string()),
            pa.array([s.total_record_count for s in snaps], pa.int64()),
            pa.array([s.delta_record_count for s in snaps], pa.int64()),
            pa.array([s.changelog_record_count for s in snaps], pa.int64()),
            pa.array([s.watermark for s in snaps], pa.int64()),
        ],
        schema=SCHEMA,
    )


SNAPSHOTS = SystemTableKind(
    name="snapshots", schema=fixed(SCHEMA), rows=rows, description="every snapshot of the table, ascending"
)
