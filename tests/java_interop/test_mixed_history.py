"""Histories written by both sides: we write, Java compacts, we write more; Java writes, we update,
Java reads; Java's snapshot expiry on our tables."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from fixtures.java_paimon import assert_same_rows, table_dir

from .data import lake_open, lake_table

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("p", pa.int32(), nullable=False),
        ("v", pa.string()),
        ("n", pa.float64()),
    ]
)


def rows(keys, tag: str, parts: int = 2) -> pa.Table:
    keys = list(keys)
    return pa.table(
        {"k": keys, "p": [k % parts for k in keys], "v": [f"{tag}{k}" for k in keys], "n": [k * 0.5 for k in keys]},
        schema=SCHEMA,
    )


class Model:
    """The expected table: last write per key wins (deduplicate)."""

    def __init__(self):
        self.rows: dict = {}

    def upsert(self, t: pa.Table) -> None:
        for r in t.to_pylist():
            self.rows[r["k"]] = r

    def delete(self, keys) -> None:
        for k in keys:
            self.rows.pop(k, None)

    def table(self) -> pa.Table:
        return pa.Table.from_pylist(list(self.rows.values()), schema=SCHEMA)


def test_we_write_java_compacts_we_write_more(java_paimon, warehouse):
    table = lake_table(
        warehouse, "db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "2"}
    )
    model = Model()
    for i in range(4):
        batch = rows(range(i * 10, i * 10 + 30), f"w{i}-")
        table.write_arrow(batch)
        model.upsert(batch)
    assert {f.level for f in java_paimon.files(table)} == {0}

    java_paimon.compact(table, full=True)
    files = java_paimon.files(table)
    assert {f.level for f in files} == {5}  # one sorted run on the last level per bucket
    assert len(files) == len({(f.partition, f.bucket) for f in files})
    assert_same_rows(lake_open(warehouse, "db.t").to_arrow(), model.table())

    table = lake_open(warehouse, "db.t")
    more = rows(range(25, 70), "after-")
    table.write_arrow(more)
    model.upsert(more)
    assert_same_rows(table.to_arrow(), model.table())
    assert_same_rows(java_paimon.read(table), model.table())
    # Our new files follow the compacted ones in sequence, so the merge keeps our values.
    for f in java_paimon.files(table):
        if f.level == 0:
            top = max(g.max_sequence_number for g in files if (g.partition, g.bucket) == (f.partition, f.bucket))
            assert f.min_sequence_number > top


def test_java_writes_we_update_java_reads(java_paimon, warehouse):
    path = java_paimon.create_table(
        warehouse, "db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "3"}
    )
    model = Model()
    first = rows(range(50), "java-")
    java_paimon.write(path, first)
    model.upsert(first)

    table = lake_open(warehouse, "db.t")
    update = rows(range(40, 80), "ours-")
    table.write_arrow(update)
    model.upsert(update)
    pb = table.predicate_builder()
    table.delete_where(pb.less_than("k", 5))
    model.delete(range(5))

    assert_same_rows(java_paimon.read(path), model.table())
    java_paimon.compact(path, full=True)
    again = rows(range(0, 10), "java2-")
    java_paimon.write(path, again)
    model.upsert(again)
    assert_same_rows(lake_open(warehouse, "db.t").to_arrow(), model.table())
    assert_same_rows(java_paimon.read(path), model.table())


def test_java_expires_our_snapshots_then_both_read(java_paimon, warehouse):
    table = lake_table(
        warehouse, "db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "2"}
    )
    model = Model()
    for i in range(6):
        batch = rows(range(i * 5, i * 5 + 10), f"w{i}-")
        table.write_arrow(batch)
        model.upsert(batch)
    java_paimon.compact(table, full=True)  # a compaction in the history: its inputs become deletable
    oldest_kept = lake_open(warehouse, "db.t").latest_snapshot().id - 2  # writers' inline compactions add snapshots
    at_oldest = table.to_arrow(snapshot_id=oldest_kept)

    expired = java_paimon.expire_snapshots(table, retain_min=3, retain_max=3)
    table = lake_open(warehouse, "db.t")
    latest = table.latest_snapshot().id
    assert expired == latest - 3
    assert [s.id for s in table.snapshots()] == list(range(latest - 2, latest + 1))
    assert [s.id for s in java_paimon.snapshots(table)] == list(range(latest - 2, latest + 1))
    assert_same_rows(table.to_arrow(), model.table())
    assert_same_rows(java_paimon.read(table), model.table())
    assert_same_rows(table.to_arrow(snapshot_id=oldest_kept), at_oldest)
    # Every file a retained snapshot needs is still there.
    on_disk = {p.name for p in Path(table_dir(table)).rglob("data-*")}
    for snapshot_id in range(latest - 2, latest + 1):
        assert {f.file_name for f in java_paimon.files(table, snapshot_id=snapshot_id)} <= on_disk
