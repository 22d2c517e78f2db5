"""``$options`` (Java ``OptionsTable``): the options of the latest schema, in Java's ``HashMap`` order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.system.java_text import options_in_java_order
from lake_core.system.kind import SystemTableKind, fixed

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

SCHEMA = pa.schema([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False)])


def rows(table: FileStoreTable, _snapshot: Snapshot | None, _part: Any) -> pa.Table:
    latest = table.schema_manager.latest()
    pairs = options_in_java_order(latest.options if latest is not None else {})
    return pa.Table.from_arrays(
        [pa.array([k for k, _ in pairs], pa.string()), pa.array([v for _, v in pairs], pa.string())], schema=SCHEMA
    )


OPTIONS = SystemTableKind(
    name="options", schema=fixed(SCHEMA), rows=rows, description="the options of the latest schema"
)
