"""A partitioned primary-key table with a history that fills every system table: appends, a
delete, a full compaction, a schema change (a column added), more writes and a delete after it, two
tags (one with a time retained) and a consumer. Shared by the system-table tests and their Java
referee."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from lake_core import Catalog, FileStoreTable, SchemaChange

IDENT = "db.t"
SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string()), ("f", pa.float32())])
#: After the alter: ``w`` appended.
NEW_SCHEMA = SCHEMA.append(pa.field("w", pa.int32()))


def build(catalog: Catalog, *, options: dict | None = None) -> FileStoreTable:
    """Snapshots: 1-3 appends (the third a delete), 4 a full compaction, then schema 1, 5 an append,
    6 a delete; tag ``t0`` on snapshot 1, ``t1`` (retained an hour) on 6; consumer ``c1`` at 2."""
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table(
        IDENT,
        SCHEMA,
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "2", **(options or {})},
    )
    t.write_arrow(
        pa.table({"dt": ["a", "a", "b"], "k": [1, 2, 3], "v": ["x", "y", "z"], "f": [1.1, 2.5, None]}, schema=SCHEMA)
    )
    t.write_arrow(pa.table({"dt": ["a"], "k": [1], "v": ["x2"], "f": [3.5]}, schema=SCHEMA))
    t.delete_where(t.predicate_builder().equal("k", 2))
    t.maintenance.compact(full=True)
    t = catalog.alter_table(IDENT, SchemaChange.add_column("w", pa.int32()))
    t.write_arrow(
        pa.table({"dt": ["b", "c"], "k": [4, 5], "v": ["q", None], "f": [0.5, -2.0], "w": [7, None]}, schema=NEW_SCHEMA)
    )
    t.delete_where(t.predicate_builder().equal("k", 3))
    t.create_tag("t0", 1)
    t.create_tag("t1", time_retained=dt.timedelta(hours=1))
    t.maintenance.consumers.reset("c1", 2)
    return t


SYSTEM_TABLES = (
    "snapshots",
    "schemas",
    "options",
    "files",
    "manifests",
    "partitions",
    "buckets",
    "tags",
    "consumers",
    "audit_log",
)
