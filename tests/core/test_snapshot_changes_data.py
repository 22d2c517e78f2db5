"""``Snapshot.changes_data``: which snapshots can change a table's rows (Paimon's streaming-read
rules), over a real history of every kind of commit, checked against what a read of each snapshot
and its parent shows."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from lake_core import Catalog

SCHEMA = pa.schema([("dt", pa.string()), ("k", pa.int64()), ("v", pa.string())])


def _rows(dts, keys, v):
    return pa.table({"dt": list(dts), "k": list(keys), "v": [v] * len(keys)}, schema=SCHEMA)


def _content(table, snapshot_id):
    return sorted(tuple(r.values()) for r in table.to_arrow(snapshot_id=snapshot_id).to_pylist())


def test_changes_data_follows_the_commit_and_the_rows(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options={"bucket": "2"}
    )
    made = {}

    def step(name, op):
        before = catalog.get_table("db.t").latest_snapshot()
        op(catalog.get_table("db.t"))
        made[name] = catalog.get_table("db.t").latest_snapshot().id if before is None else before.id + 1

    step("append", lambda t: t.write_arrow(_rows(["2000-01-01"] * 3 + ["2999-01-01"] * 3, [1, 2, 3] * 2, "a")))
    step("upsert", lambda t: t.write_arrow(_rows(["2999-01-01"] * 2, [1, 4], "b")))
    step("compaction", lambda t: t.maintenance.compact(full=True))
    step("rescale", lambda t: t.maintenance.rescale(bucket=3))
    step("delete_where", lambda t: t.delete_where(t.predicate_builder().equal("k", 2)))
    step("user overwrite", lambda t: t.write_arrow(_rows(["2999-01-01"], [9], "o"), overwrite={"dt": "2999-01-01"}))
    step("partition expiry", lambda t: t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=1)))
    t = catalog.get_table("db.t")
    snaps = {s.id: s for s in t.snapshots()}
    assert {name: snaps[sid].changes_data for name, sid in made.items()} == {
        "append": True,
        "upsert": True,
        "compaction": False,
        "rescale": False,
        "delete_where": True,
        "user overwrite": True,
        "partition expiry": True,
    }
    assert snaps[made["rescale"]].commit_kind.value == "OVERWRITE"
    for s in list(snaps.values())[1:]:  # inline compactions' COMPACT snapshots included
        same_rows = _content(t, s.id) == _content(t, s.id - 1)
        assert s.changes_data != same_rows, s  # a snapshot said to change nothing reads the same
