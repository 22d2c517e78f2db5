"""The Spark jobs against real lake_core tables: the distributed write, the `paimon` data source,
the ingest job's commit identity and the downstream aggregate. One Spark session (``spark``)."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import jobs.write as write_mod
from jobs.datasource import read_table
from jobs.downstream import run_downstream
from jobs.ingest import ingest
from jobs.tables import TableSpec, ensure_table
from jobs.write import distributed_write
from lake_core import Catalog
from orchestration.demo.source import ORDERS_SCHEMA, expected_orders, orders

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ORDERS = TableSpec("demo.orders", ORDERS_SCHEMA, ("dt", "order_id"), ("dt",), {"bucket": "2", "rowkind.field": "op"})


def _by_id(t: pa.Table) -> pa.Table:
    return t.sort_by("order_id")


def _create(warehouse: str, storage_options: dict | None = None, spec: TableSpec = ORDERS):
    return ensure_table(Catalog(warehouse, storage_options=storage_options), spec)


def test_distributed_write_then_read_through_the_data_source(spark, warehouse):
    table = _create(warehouse)
    source = orders()
    for b in range(3):
        result = distributed_write(
            spark.createDataFrame(source.batch(b)), warehouse, "demo.orders", commit_user="t", identifier=b
        )
        assert result.snapshot_id == b + 1 and not result.already_committed
        assert result.rows == source.batch(b).num_rows
        assert result.files >= 2 and result.bytes > 0
    # What Spark wrote is exactly what lake_core reads back.
    assert _by_id(table.to_arrow()).equals(_by_id(expected_orders(3)))

    df = read_table(spark, warehouse, "demo.orders")
    splits = table.new_read_builder().new_scan().plan().splits()
    assert df.rdd.getNumPartitions() == len(splits) == 3 * 2  # one input partition per split
    assert _by_id(df.toArrow()).equals(_by_id(expected_orders(3)))


def test_data_source_reads_exactly_the_requested_snapshot(spark, warehouse):
    table = _create(warehouse)
    source = orders(orders_per_batch=40)
    for b in range(3):
        table.write_arrow(source.batch(b))
    df = (
        spark.read.format("paimon")
        .option("warehouse", warehouse)
        .option("table", "demo.orders")
        .option("snapshot-id", "2")
        .load()
    )
    assert _by_id(df.toArrow()).equals(_by_id(source.expected(2)))
    # Spark-side operations work on the DataFrame as usual.
    assert df.filter("op = '+I'").count() == pc.sum(pc.equal(source.expected(2)["op"], "+I")).as_py()


def test_data_source_on_an_empty_table_and_bad_options(spark, warehouse):
    _create(warehouse)
    assert read_table(spark, warehouse, "demo.orders").count() == 0
    with pytest.raises(Exception, match="table"):
        spark.read.format("paimon").option("warehouse", warehouse).load().collect()


def test_change_order_survives_the_shuffle(spark, warehouse):
    """Many changes of the same keys in one DataFrame spread over several input partitions:
    the last change of each key must win, although Spark shuffles rows between tasks."""
    spec = TableSpec(
        "demo.kv",
        pa.schema([pa.field("k", pa.int64(), False), pa.field("v", pa.int64()), pa.field("op", pa.string())]),
        ("k",),
        (),
        {"bucket": "3", "rowkind.field": "op"},
    )
    table = _create(warehouse, spec=spec)
    keys, rounds = 50, 20
    k = [i % keys for i in range(keys * rounds)]
    v = list(range(keys * rounds))
    op = ["+I" if i < keys else "+U" for i in range(keys * rounds)]
    # Delete every 5th key in the last round.
    op[-keys:] = ["-D" if j % 5 == 0 else "+U" for j in range(keys)]
    data = pa.table({"k": k, "v": v, "op": op}, schema=spec.schema)
    df = spark.createDataFrame(data)  # input order = change order; spread over several partitions
    assert df.rdd.getNumPartitions() >= 2
    distributed_write(df, warehouse, "demo.kv", commit_user="t", identifier=1, num_tasks=3)
    got = {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}
    last_round = keys * (rounds - 1)
    assert got == {j: last_round + j for j in range(keys) if j % 5 != 0}


def test_a_retried_write_does_not_commit_twice(spark, warehouse, monkeypatch):
    table = _create(warehouse)
    df = spark.createDataFrame(orders().batch(0))
    first = distributed_write(df, warehouse, "demo.orders", commit_user="job-7", identifier=0)
    # The retry sees its identity landed and skips all work.
    again = distributed_write(df, warehouse, "demo.orders", commit_user="job-7", identifier=0)
    assert again.already_committed and again.snapshot_id == first.snapshot_id
    assert (again.files, again.bytes) == (first.files, first.bytes)
    # Even if the early check is bypassed (a driver that crashed after the commit request went
    # out), the commit itself recognises (commit user, identifier) and adds no snapshot.
    monkeypatch.setattr(write_mod, "committed_result", lambda *a, **k: None)
    redo = distributed_write(df, warehouse, "demo.orders", commit_user="job-7", identifier=0)
    assert redo.snapshot_id == first.snapshot_id and redo.already_committed
    assert [s.id for s in table.snapshots()] == [first.snapshot_id]
    # The files the redo wrote are removed: only the landed commit's files remain on disk.
    live = {e.file.file_name for e in table.manifest_store.live_entries(table.latest_snapshot())}
    root = warehouse.removeprefix("file://") + "/demo.db/orders"
    on_disk = {p.name for p in __import__("pathlib").Path(root).rglob("data-*")}
    assert on_disk == live
    # A new identity is a new commit.
    nxt = distributed_write(
        spark.createDataFrame(orders().batch(1)), warehouse, "demo.orders", commit_user="job-7", identifier=1
    )
    assert nxt.snapshot_id == first.snapshot_id + 1


def test_ingest_resumes_from_the_table_and_a_rerun_is_recognised(spark, warehouse):
    source = orders(orders_per_batch=30)
    r0 = ingest(spark, warehouse, ORDERS, source, run_key="run-a")
    r1 = ingest(spark, warehouse, ORDERS, source, run_key="run-b")
    assert (r0.batch, r1.batch) == (0, 1)
    rerun = ingest(spark, warehouse, ORDERS, source, run_key="run-a")  # a re-execution of run-a
    assert rerun.batch == 0 and rerun.write.already_committed and rerun.write.snapshot_id == r0.write.snapshot_id
    r2 = ingest(spark, warehouse, ORDERS, source, run_key="run-c")
    assert r2.batch == 2
    table = Catalog(warehouse).get_table("demo.orders")
    assert len(table.snapshots()) == 3
    assert _by_id(table.to_arrow()).equals(_by_id(source.expected(3)))


def test_empty_dataframe_commits_nothing(spark, warehouse):
    table = _create(warehouse)
    result = distributed_write(
        spark.createDataFrame(ORDERS_SCHEMA.empty_table()), warehouse, "demo.orders", commit_user="t", identifier=1
    )
    assert result.snapshot_id is None and result.rows == 0
    assert table.latest_snapshot() is None


def _orders_by_day_reference(orders_table: pa.Table) -> dict[str, tuple]:
    out: dict[str, list] = {}
    for r in orders_table.to_pylist():
        d = out.setdefault(r["dt"], [0, 0, set(), 0, decimal.Decimal("0.00")])
        d[0] += 1
        d[2].add(r["customer_id"])
        if r["status"] == "cancelled":
            d[1] += 1
        else:
            d[3] += r["quantity"]
            d[4] += r["amount"]
    return {k: (v[0], v[1], len(v[2]), v[3], v[4]) for k, v in out.items()}


def test_downstream_aggregates_exactly_the_given_snapshot(spark, warehouse):
    table = _create(warehouse)
    source = orders(orders_per_batch=60)
    for b in range(4):
        table.write_arrow(source.batch(b))
    result = run_downstream(
        spark,
        warehouse,
        source_table="demo.orders",
        snapshot_id=2,
        target_table="demo.orders_by_day",
        transform="orders_by_day",
    )
    assert result.identifier == 2 and result.snapshot_id == 1
    got = {
        r["dt"]: (r["orders"], r["cancelled"], r["customers"], r["items"], r["revenue"])
        for r in Catalog(warehouse).get_table("demo.orders_by_day").to_arrow().to_pylist()
    }
    assert got == _orders_by_day_reference(source.expected(2))
    assert got != _orders_by_day_reference(source.expected(4))  # not the latest snapshot
    # Re-running for the same snapshot is recognised; a newer snapshot updates the table.
    again = run_downstream(
        spark,
        warehouse,
        source_table="demo.orders",
        snapshot_id=2,
        target_table="demo.orders_by_day",
        transform="orders_by_day",
    )
    assert again.already_committed and again.snapshot_id == 1


@pytest.mark.s3
def test_write_and_read_on_s3(spark, s3_warehouse):
    """All I/O goes through lake_core in Python workers: Spark's JVM has no S3 connector at all."""
    opts = s3_warehouse.storage_options
    _create(s3_warehouse.uri, opts)
    source = orders(orders_per_batch=40)
    for b in range(2):
        r = distributed_write(
            spark.createDataFrame(source.batch(b)),
            s3_warehouse.uri,
            "demo.orders",
            commit_user="s3-test",
            identifier=b,
            storage_options=opts,
        )
        assert r.snapshot_id == b + 1
    again = distributed_write(
        spark.createDataFrame(source.batch(1)),
        s3_warehouse.uri,
        "demo.orders",
        commit_user="s3-test",
        identifier=1,
        storage_options=opts,
    )
    assert again.already_committed
    df = read_table(spark, s3_warehouse.uri, "demo.orders", storage_options=opts)
    assert _by_id(df.toArrow()).equals(_by_id(source.expected(2)))
    assert s3_warehouse.filesystem().ls(f"{s3_warehouse.bucket}/wh/demo.db/orders/snapshot")
