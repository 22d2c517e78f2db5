"""A table history with a rename, an added column of the renamed one's name and a drop, and a
plain model of what a reader saw at each snapshot: shared by the time-travel tests (ours, Spark's
data source, Java's).

Snapshot 1 writes (k, a, c); snapshot 2 is a full compaction; then ``a`` is renamed to ``b``, a
new ``a`` (STRING) is added and ``c`` dropped; snapshot 3 writes (k, b, a). Tag ``v1`` is
snapshot 1.
"""

from __future__ import annotations

import pyarrow as pa

from lake_core import Catalog, SchemaChange

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("c", pa.string())])
OLD, NEW = ["k", "a", "c"], ["k", "b", "a"]


def model() -> dict[int, tuple[list[str], dict[int, tuple]]]:
    """Snapshot id -> (column names, {k: other columns}) of what a reader saw at that snapshot."""
    s1 = {k: (k * 10, f"c{k}") for k in range(1, 7)}
    s3 = {k: (a, None) for k, (a, _c) in s1.items()}  # renamed a keeps its values; the new a is NULL
    s3.update({k: (k * 100, f"new{k}") for k in range(4, 9)})
    return {1: (OLD, s1), 2: (OLD, s1), 3: (NEW, s3)}


def rows_of(t: pa.Table) -> tuple[list[str], dict[int, tuple]]:
    names = t.column_names
    return names, {r[0]: tuple(r[1:]) for r in zip(*(t[c].to_pylist() for c in names))}


def build(catalog: Catalog):
    """The history above; returns the table handle after the alter and the last write."""
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    ks = list(range(1, 7))
    t.write_arrow(pa.table({"k": ks, "a": [k * 10 for k in ks], "c": [f"c{k}" for k in ks]}, schema=SCHEMA))
    t.create_tag("v1")
    t.maintenance.compact(full=True)
    assert t.latest_snapshot().id == 2
    t = catalog.alter_table(
        "db.t",
        [
            SchemaChange.rename_column("a", "b"),
            SchemaChange.add_column("a", pa.string()),
            SchemaChange.drop_column("c"),
        ],
    )
    ks = list(range(4, 9))
    t.write_arrow(
        pa.table({"k": ks, "b": [k * 100 for k in ks], "a": [f"new{k}" for k in ks]}, schema=t.arrow_schema())
    )
    assert [(s.id, s.schema_id) for s in t.snapshots()] == [(1, 0), (2, 0), (3, 1)]
    return t
