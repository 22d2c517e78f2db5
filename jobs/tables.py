"""A table's definition as jobs create it, and the one way they create it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_core import Catalog

if TYPE_CHECKING:
    from lake_core import FileStoreTable


@dataclass(frozen=True)
class TableSpec:
    name: str  # database.table
    schema: pa.Schema
    primary_keys: Sequence[str] = ()
    partition_keys: Sequence[str] = ()
    options: Mapping[str, str] | None = None


def ensure_table(catalog: Catalog, spec: TableSpec) -> FileStoreTable:
    """The table, created (with its database) if it does not exist; an existing one is returned as it is.
    Concurrent first calls agree on one table (the catalog's exclusive create of schema-0 decides)."""
    catalog.create_database(spec.name.split(".")[0], ignore_if_exists=True)
    return catalog.create_table(
        spec.name,
        schema=spec.schema,
        primary_keys=list(spec.primary_keys),
        partition_keys=list(spec.partition_keys),
        options=dict(spec.options or {}),
        ignore_if_exists=True,
    )
