"""``$audit_log`` (Java ``AuditLogTable``): the table's rows with a leading ``rowkind`` column, read
as a batch read of the latest snapshot that keeps the keys whose merged row is a retraction (Java's
``forceKeepDelete``): each key's merged row with its kind (``+I``, ``-U``, ``+U``, ``-D``). One part
per data split, so a Spark read of it is as parallel as one of the table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.read.scan import TableScan
from lake_core.read.split_read import ROW_KIND, SplitRead
from lake_core.system.kind import SystemTableKind

if TYPE_CHECKING:
    from lake_core.read.split import Split
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

#: Java ``SpecialFields.ROW_KIND``: a nullable STRING.
ROWKIND = "rowkind"


def schema(table: FileStoreTable) -> pa.Schema:
    data = table.arrow_schema()
    return pa.schema([pa.field(ROWKIND, pa.string()), *data])


def parts(table: FileStoreTable, snapshot: Snapshot | None) -> Sequence[Any]:
    return TableScan(table.store, snapshot).splits()


def rows(table: FileStoreTable, _snapshot: Snapshot | None, split: Split | None) -> pa.Table:
    out = schema(table)
    if split is None:
        return out.empty_table()
    data = SplitRead(table.store, keep_deletes=True).to_arrow([split])
    kinds = data[ROW_KIND]
    data = data.drop_columns([ROW_KIND])
    return data.add_column(0, out.field(ROWKIND), kinds).cast(out)


AUDIT_LOG = SystemTableKind(
    name="audit_log",
    schema=schema,
    rows=rows,
    parts=parts,
    description="the rows of the latest snapshot with their row kind, retractions kept",
)
