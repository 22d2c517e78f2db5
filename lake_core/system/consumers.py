"""``$consumers`` (Java ``ConsumersTable``): every ``consumer-<id>`` file, by id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.maintenance.consumers import ConsumerManager
from lake_core.system.kind import SystemTableKind, fixed

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

SCHEMA = pa.schema(
    [pa.field("consumer_id", pa.string(), nullable=False), pa.field("next_snapshot_id", pa.int64(), nullable=False)]
)


def rows(table: FileStoreTable, _snapshot: Snapshot | None, _part: Any) -> pa.Table:
    consumers = sorted(ConsumerManager(table).consumers(), key=lambda c: c.consumer_id)
    return pa.Table.from_arrays(
        [
            pa.array([c.consumer_id for c in consumers], pa.string()),
            pa.array([c.next_snapshot for c in consumers], pa.int64()),
        ],
        schema=SCHEMA,
    )


CONSUMERS = SystemTableKind(
    name="consumers", schema=fixed(SCHEMA), rows=rows, description="every consumer and the next snapshot it reads"
)
