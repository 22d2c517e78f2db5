"""The `paimon` Spark data source with Paimon's incremental options: a downstream job reads what
changed since snapshot N, one row per change with ``_ROW_KIND``; oracle: lake_core's own read and
the rows the commits wrote."""

from __future__ import annotations

import pyarrow as pa
import pytest

from jobs.datasource import read_table
from lake_core import ROW_KIND, Catalog

pytestmark = [pytest.mark.spark]

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])


def _changes(t: pa.Table) -> list[tuple]:
    return sorted(zip(t["k"].to_pylist(), t["v"].to_pylist(), t[ROW_KIND].to_pylist()), key=lambda r: r[0])


def test_spark_reads_what_changed_since_a_snapshot(spark, warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        SCHEMA,
        primary_keys=["k"],
        options={"bucket": "2", "changelog-producer": "input", "rowkind.field": "op"},
    )
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": [1, 1, 2], "v": ["a", "a2", "b"], "op": ["-U", "+U", "-D"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": [4], "v": ["d"], "op": ["+I"]}, schema=SCHEMA))

    df = (
        spark.read.format("paimon")
        .option("warehouse", warehouse)
        .option("table", "db.t")
        .option("incremental-between", "1,3")
        .option("incremental-between-scan-mode", "changelog")
        .load()
    )
    assert df.columns == ["k", "v", "op", ROW_KIND]
    got = df.toArrow()
    assert _changes(got) == [(1, "a", "-U"), (1, "a2", "+U"), (2, "b", "-D"), (4, "d", "+I")]
    assert _changes(got) == _changes(t.to_arrow(incremental_between=(1, 3)))
    # one input partition per (snapshot, bucket) with changes
    assert df.rdd.getNumPartitions() == len(
        t.new_read_builder().with_incremental_between((1, 3)).new_scan().plan().splits()
    )
    # the delta mode and the wrapper; a projection keeps the kind
    delta = read_table(spark, warehouse, "db.t", incremental_between=(1, 3), scan_mode="delta")
    assert _changes(delta.toArrow()) == [(1, "a2", "+U"), (2, "b", "-D"), (4, "d", "+I")]
    assert sorted(tuple(r) for r in delta.select("k", ROW_KIND).collect()) == [(1, "+U"), (2, "-D"), (4, "+I")]
    # the diff of two snapshots: each changed key once, with its new row
    diff = read_table(spark, warehouse, "db.t", incremental_between=(1, 3), scan_mode="diff")
    assert _changes(diff.toArrow()) == [(1, "a2", "+U"), (2, "b", "-D"), (4, "d", "+I")]
    # nothing changed after the latest snapshot: an empty DataFrame with the same columns
    empty = read_table(spark, warehouse, "db.t", incremental_between=(3, 3))
    assert empty.columns == ["k", "v", "op", ROW_KIND] and empty.count() == 0


def test_spark_incremental_options_are_checked(spark, warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1], "v": ["a"], "op": ["+I"]}, schema=SCHEMA))
    for options, message in [
        ({"incremental-between": "1,9"}, "at most 1"),
        ({"incremental-between": "0,1", "incremental-between-scan-mode": "full"}, "full"),
        ({"incremental-between": "0,1", "snapshot-id": "1"}, "not both"),
        ({"scan.mode": "latest"}, "not supported"),
    ]:
        reader = spark.read.format("paimon").option("warehouse", warehouse).option("table", "db.t")
        for k, v in options.items():
            reader = reader.option(k, v)
        with pytest.raises(Exception, match=message):
            reader.load().collect()
