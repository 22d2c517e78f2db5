"""``$manifests`` (Java ``ManifestsTable``): the manifest files of the latest snapshot (its base,
delta and changelog manifest lists, in that order)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.system.kind import SystemTableKind, fixed
from lake_core.system.partition_text import PartitionText

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

SCHEMA = pa.schema(
    [
        pa.field("file_name", pa.string(), nullable=False),
        pa.field("file_size", pa.int64(), nullable=False),
        pa.field("num_added_files", pa.int64(), nullable=False),
        pa.field("num_deleted_files", pa.int64(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("min_partition_stats", pa.string()),
        pa.field("max_partition_stats", pa.string()),
    ]
)


def rows(table: FileStoreTable, snapshot: Snapshot | None, _part: Any) -> pa.Table:
    if snapshot is None:
        return SCHEMA.empty_table()
    store = table.manifest_store
    metas = [
        *store.read_manifest_list(snapshot.base_manifest_list),
        *store.read_manifest_list(snapshot.delta_manifest_list),
        *store.read_manifest_list(snapshot.changelog_manifest_list),
    ]
    text = PartitionText(table)
    return pa.Table.from_arrays(
        [
            pa.array([m.file_name for m in metas], pa.string()),
            pa.array([m.file_size for m in metas], pa.int64()),
            pa.array([m.num_added_files for m in metas], pa.int64()),
            pa.array([m.num_deleted_files for m in metas], pa.int64()),
            pa.array([m.schema_id for m in metas], pa.int64()),
            text.column(m.partition_stats.min_values for m in metas),
            text.column(m.partition_stats.max_values for m in metas),
        ],
        schema=SCHEMA,
    )


MANIFESTS = SystemTableKind(
    name="manifests", schema=fixed(SCHEMA), rows=rows, description="the manifest files of the latest snapshot"
)
