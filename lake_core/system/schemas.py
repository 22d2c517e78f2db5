"""``$schemas`` (Java ``SchemasTable``): one row per schema file, ascending, the lists and maps as
Jackson's flat JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.system.java_text import flat_json, local_millis, options_in_java_order
from lake_core.system.kind import SystemTableKind, fixed

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

SCHEMA = pa.schema(
    [
        pa.field("schema_id", pa.int64(), nullable=False),
        pa.field("fields", pa.string(), nullable=False),
        pa.field("partition_keys", pa.string(), nullable=False),
        pa.field("primary_keys", pa.string(), nullable=False),
        pa.field("options", pa.string(), nullable=False),
        pa.field("comment", pa.string()),
        pa.field("update_time", pa.timestamp("ms"), nullable=False),
    ]
)


def rows(table: FileStoreTable, _snapshot: Snapshot | None, _part: Any) -> pa.Table:
    manager = table.schema_manager
    schemas = [manager.schema(i) for i in manager.list_ids()]
    return pa.Table.from_arrays(
        [
            pa.array([s.id for s in schemas], pa.int64()),
            pa.array([flat_json([f.to_json() for f in s.fields]) for s in schemas], pa.string()),
            pa.array([flat_json(list(s.partition_keys)) for s in schemas], pa.string()),
            pa.array([flat_json(list(s.primary_keys)) for s in schemas], pa.string()),
            pa.array([flat_json(dict(options_in_java_order(s.options))) for s in schemas], pa.string()),
            pa.array([s.comment for s in schemas], pa.string()),
            local_millis([s.time_millis for s in schemas]),
        ],
        schema=SCHEMA,
    )


SCHEMAS = SystemTableKind(
    name="schemas", schema=fixed(SCHEMA), rows=rows, description="every schema of the table, ascending"
)
