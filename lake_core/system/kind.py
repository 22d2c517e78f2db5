"""What one system table is: its name, its Arrow schema and how its rows are built from metadata."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable


def _one_part(table: FileStoreTable, snapshot: Snapshot | None) -> Sequence[Any]:
    return (None,)


@dataclass(frozen=True, kw_only=True)
class SystemTableKind:
    """``name``: the suffix after ``$``. ``schema(table)``: the Arrow schema (Paimon 1.0's column
    names and types). ``rows(table, snapshot, part)``: the rows of one part of the plan, built from
    the table's metadata at ``snapshot`` (the latest when the scan was planned; the tables of
    snapshots, schemas, options, tags and consumers read their files when read, as Java's).
    ``parts(table, snapshot)``: what a scan plans, one Spark input partition each (one part, the
    whole table, unless the table says otherwise: ``$audit_log`` plans the data table's splits)."""

    name: str
    schema: Callable[[FileStoreTable], pa.Schema]
    rows: Callable[[FileStoreTable, Snapshot | None, Any], pa.Table]
    parts: Callable[[FileStoreTable, Snapshot | None], Sequence[Any]] = _one_part
    description: str = ""


@dataclass(frozen=True)
class _Fixed:
    schema: pa.Schema

    def __call__(self, _table: FileStoreTable) -> pa.Schema:
        return self.schema


def fixed(schema: pa.Schema) -> Callable[[FileStoreTable], pa.Schema]:
    """A schema that does not depend on the table (picklable: Spark tasks carry the table)."""
    return _Fixed(schema)
