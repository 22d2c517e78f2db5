"""Schema evolution and bucket rescale against Java Paimon 1.0: Java reads tables we altered and
rescaled (partially and fully); we read tables Java altered and rescaled (ALTER TABLE ... SET
('bucket') followed by an overwrite of the partition, Java's way)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fixtures.java_paimon import assert_same_rows
from lake_core import Catalog, SchemaChange

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("a", pa.int32()),
        ("b", pa.string()),
        ("f", pa.float32()),
    ]
)
PK = ["dt", "id"]


def batch(ids, dt="2024-01-01", tag="x", schema=SCHEMA) -> pa.Table:
    ids = list(ids)
    cols = {"dt": [dt] * len(ids), "id": ids}
    for f in schema:
        if f.name in cols:
            continue
        if pa.types.is_string(f.type):
            cols[f.name] = [f"{tag}{i}" if i % 5 else None for i in ids]
        elif pa.types.is_floating(f.type):
            cols[f.name] = [i * 0.5 for i in ids]
        else:
            cols[f.name] = [i * 3 - 100 for i in ids]
    return pa.table(cols, schema=schema)


OURS = {
    "add": [SchemaChange.add_column("c", pa.string(), comment="new")],
    "rename": [SchemaChange.rename_column("b", "bee")],
    "drop": [SchemaChange.drop_column("f")],
    "widen": [SchemaChange.update_column_type("a", pa.int64()), SchemaChange.update_column_type("f", pa.float64())],
}


def lake(warehouse, bucket=2):
    catalog = Catalog(warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    return catalog, catalog.create_table(
        "db.t", SCHEMA, primary_keys=PK, partition_keys=["dt"], options={"bucket": str(bucket)}
    )


@pytest.mark.parametrize("kind", list(OURS))
def test_java_reads_after_each_kind_of_our_schema_change(java_paimon, warehouse, kind):
    catalog, t = lake(warehouse)
    t.write_arrow(batch(range(20)))
    t = catalog.alter_table("db.t", OURS[kind])
    t.write_arrow(batch(range(10, 30), tag="y", schema=t.arrow_schema()))
    ours = t.to_arrow()
    assert ours.num_rows == 30
    assert java_paimon.schema(t).names == ours.column_names
    assert_same_rows(java_paimon.read(t), ours)
    # Java writes on top of the evolved table; both read the same.
    java_paimon.write(t, batch([0, 99], tag="j", schema=t.arrow_schema()))
    assert_same_rows(Catalog(warehouse).get_table("db.t").to_arrow(), java_paimon.read(t))


def test_java_reads_after_a_partial_and_a_full_rescale(java_paimon, warehouse):
    catalog, t = lake(warehouse)
    for dt in ("2024-01-01", "2024-01-02"):
        t.write_arrow(batch(range(300), dt=dt))
        t.write_arrow(batch(range(150, 400), dt=dt, tag="u"))
    expected = t.to_arrow()
    t.maintenance.rescale(bucket=5, partitions=[{"dt": "2024-01-01"}])
    t = catalog.get_table("db.t")
    assert_same_rows(java_paimon.read(t), expected)
    t.maintenance.rescale(bucket=5)
    t = catalog.get_table("db.t")
    assert_same_rows(java_paimon.read(t), expected)
    # Java writes into the rescaled table (its writer checks each partition's bucket count).
    java_paimon.write(t, batch([1, 1000], dt="2024-01-02", tag="j"))
    assert_same_rows(Catalog(warehouse).get_table("db.t").to_arrow(), java_paimon.read(t))


JAVA = {
    "add": [{"op": "add_column", "name": "c", "type": pa.string()}],
    "rename": [{"op": "rename_column", "name": "b", "new_name": "bee"}],
    "drop": [{"op": "drop_column", "name": "f"}],
    "widen": [
        {"op": "update_column_type", "name": "a", "type": pa.int64()},
        {"op": "update_column_type", "name": "f", "type": pa.float64()},
    ],
}


@pytest.mark.parametrize("kind", list(JAVA))
def test_we_read_tables_java_altered(java_paimon, warehouse, kind):
    path = java_paimon.create_table(
        warehouse, "db.t", SCHEMA, primary_keys=PK, partition_keys=["dt"], options={"bucket": "2"}
    )
    java_paimon.write(path, batch(range(20)))
    java_paimon.alter_table(warehouse, "db.t", JAVA[kind])
    schema = java_paimon.schema(path)
    java_paimon.write(path, batch(range(10, 30), tag="y", schema=schema))
    t = Catalog(warehouse).get_table("db.t")
    assert t.schema.id == 1 and t.arrow_schema().names == schema.names
    ours = t.to_arrow()
    assert ours.num_rows == 30
    assert_same_rows(ours, java_paimon.read(path))
    # We write on top of Java's evolved table.
    t.write_arrow(batch([0, 99], tag="l", schema=t.arrow_schema()))
    assert_same_rows(Catalog(warehouse).get_table("db.t").to_arrow(), java_paimon.read(path))


def test_we_read_and_write_a_table_java_rescaled(java_paimon, warehouse):
    path = java_paimon.create_table(
        warehouse, "db.t", SCHEMA, primary_keys=PK, partition_keys=["dt"], options={"bucket": "2"}
    )
    for dt in ("2024-01-01", "2024-01-02"):
        java_paimon.write(path, batch(range(200), dt=dt))
    # Java's rescale of one partition: change 'bucket', then overwrite the partition with its rows.
    part = java_paimon.read(path).filter(pa.compute.equal(pa.compute.field("dt"), "2024-01-01"))
    java_paimon.alter_table(warehouse, "db.t", [{"op": "set_option", "key": "bucket", "value": "4"}])
    java_paimon.write(path, part, overwrite={"dt": "2024-01-01"})
    t = Catalog(warehouse).get_table("db.t")
    assert t.options.bucket == 4
    counts = {}
    for e in t.manifest_store.live_entries(t.latest_snapshot()):
        counts.setdefault(t.manifest_store.partition_values(e.partition)[0], set()).add(e.total_buckets)
    assert counts == {"2024-01-01": {4}, "2024-01-02": {2}}
    assert_same_rows(t.to_arrow(), java_paimon.read(path))
    # We keep writing both partitions, each with its own count; Java reads the result.
    t.write_arrow(batch([5, 500], dt="2024-01-01", tag="l"))
    t.write_arrow(batch([5, 500], dt="2024-01-02", tag="l"))
    assert_same_rows(Catalog(warehouse).get_table("db.t").to_arrow(), java_paimon.read(path))
    # And finish the rescale ourselves.
    Catalog(warehouse).get_table("db.t").maintenance.rescale(bucket=4)
    t = Catalog(warehouse).get_table("db.t")
    assert_same_rows(t.to_arrow(), java_paimon.read(path))
    assert {s.total_buckets for s in t.new_read_builder().new_scan().plan().splits()} == {4}
