"""pypaimon 2.1.0 reads tables we altered and rescaled, and we read tables pypaimon altered."""

from __future__ import annotations

import textwrap

import pyarrow as pa
import pytest

from lake_core import Catalog, SchemaChange

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("a", pa.int32()), ("b", pa.string()), ("f", pa.float32())]
)


def normalize(t: pa.Table, names=None) -> list[dict]:
    names = names or t.column_names
    return sorted(t.select(names).to_pylist(), key=lambda r: (r["dt"], r["id"]))


def batch(ids, dt="2024-01-01", tag="x", schema=SCHEMA):
    cols = {"dt": [dt] * len(ids), "id": ids}
    for f in schema:
        if f.name in cols:
            continue
        if pa.types.is_string(f.type):
            cols[f.name] = [f"{tag}{i}" for i in ids]
        elif pa.types.is_floating(f.type):
            cols[f.name] = [i * 0.5 for i in ids]
        else:
            cols[f.name] = [i * 3 for i in ids]
    return pa.table(cols, schema=schema)


CHANGES = {
    "add": [SchemaChange.add_column("c", pa.string(), comment="new")],
    "rename": [SchemaChange.rename_column("b", "bee")],
    "drop": [SchemaChange.drop_column("f")],
    "widen": [SchemaChange.update_column_type("a", pa.int64()), SchemaChange.update_column_type("f", pa.float64())],
}


@pytest.mark.parametrize("kind", list(CHANGES))
def test_pypaimon_reads_after_our_schema_change(warehouse, pypaimon, kind):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
    t.write_arrow(batch(list(range(10))))
    t = catalog.alter_table("db.t", CHANGES[kind])
    t.write_arrow(batch(list(range(5, 15)), tag="y", schema=t.arrow_schema()))
    ours = t.to_arrow()
    theirs = pypaimon.read(warehouse, "db.t")
    assert theirs.column_names == ours.column_names
    assert normalize(theirs) == normalize(ours)
    assert ours.num_rows == 15


def test_pypaimon_reads_after_partial_and_full_rescale(warehouse, pypaimon):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
    for dt in ("2024-01-01", "2024-01-02"):
        t.write_arrow(batch(list(range(200)), dt=dt))
        t.write_arrow(batch(list(range(100, 300)), dt=dt, tag="u"))
    expected = normalize(t.to_arrow())
    t.maintenance.rescale(bucket=5, partitions=[{"dt": "2024-01-01"}])
    assert normalize(pypaimon.read(warehouse, "db.t")) == expected
    # pypaimon writes into both kinds of partitions (it reads each partition's bucket count).
    t = catalog.get_table("db.t")
    t.maintenance.rescale(bucket=5)
    assert normalize(pypaimon.read(warehouse, "db.t")) == expected
    pypaimon.write(warehouse, "db.t", batch([1, 1000], dt="2024-01-02", tag="p"))
    t = catalog.get_table("db.t")
    assert normalize(t.to_arrow()) == normalize(pypaimon.read(warehouse, "db.t"))
    assert {s.total_buckets for s in t.new_read_builder().new_scan().plan().splits()} == {5}


def test_we_read_tables_pypaimon_altered(warehouse, pypaimon):
    pypaimon.create_table(
        warehouse, "db.t", SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}
    )
    pypaimon.write(warehouse, "db.t", batch(list(range(10))))
    path = warehouse.replace("file://", "")
    pypaimon.run(
        textwrap.dedent(f"""
        from pypaimon import CatalogFactory
        from pypaimon.schema.schema_change import SchemaChange
        from pypaimon.schema.data_types import AtomicType
        cat = CatalogFactory.create({{"warehouse": "{path}"}})
        cat.alter_table("db.t", [SchemaChange.add_column("c", AtomicType("STRING")),
                                 SchemaChange.rename_column("b", "bee"),
                                 SchemaChange.drop_column("f")])
    """)
    )
    t = Catalog(warehouse).get_table("db.t")
    assert t.schema.id == 1 and t.schema.field_names == ["dt", "id", "a", "bee", "c"]
    t.write_arrow(batch(list(range(5, 15)), tag="y", schema=t.arrow_schema()))
    ours = t.to_arrow()
    assert normalize(ours) == normalize(pypaimon.read(warehouse, "db.t"))
    assert [r["c"] for r in normalize(ours)][:5] == [None] * 5
