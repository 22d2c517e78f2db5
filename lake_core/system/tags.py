"""``$tags`` (Java ``TagsTable``): every tag, by name, with the snapshot it holds and its retention."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.maintenance.tag_time import tag_times
from lake_core.system.java_text import java_duration, local_millis, naive_millis
from lake_core.system.kind import SystemTableKind, fixed

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

SCHEMA = pa.schema(
    [
        pa.field("tag_name", pa.string(), nullable=False),
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("commit_time", pa.timestamp("ms"), nullable=False),
        pa.field("record_count", pa.int64()),
        pa.field("create_time", pa.timestamp("ms")),
        pa.field("time_retained", pa.string()),
    ]
)


def rows(table: FileStoreTable, _snapshot: Snapshot | None, _part: Any) -> pa.Table:
    names = table.list_tags()
    snaps = [table.tag(n) for n in names]
    times = [tag_times(table, n) for n in names]
    return pa.Table.from_arrays(
        [
            pa.array(names, pa.string()),
            pa.array([s.id for s in snaps], pa.int64()),
            pa.array([s.schema_id for s in snaps], pa.int64()),
            local_millis([s.time_millis for s in snaps]),
            pa.array([s.total_record_count for s in snaps], pa.int64()),
            pa.array([naive_millis(t.create_time) for t in times], pa.timestamp("ms")),
            pa.array([None if t.time_retained is None else java_duration(t.time_retained) for t in times], pa.string()),
        ],
        schema=SCHEMA,
    )


TAGS = SystemTableKind(name="tags", schema=fixed(SCHEMA), rows=rows, description="every tag, by name")
