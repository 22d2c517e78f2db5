"""One writer job per dynamic-bucket table, as in Paimon: a concurrent second writer fails its
commit cleanly instead of storing a key twice."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest

from fixtures.commits import prepared_write
from fixtures.process_end import end_worker
from lake_core import Catalog
from lake_core.errors import CommitConflictError

from .helpers import assert_each_key_once, assert_hash_index_consistent

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def rows(dt, ids, v):
    return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=SCHEMA)


def make(warehouse, cross=False, **options):
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    pk = ["id"] if cross else ["dt", "id"]
    return cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=pk,
        partition_keys=["dt"],
        options={"dynamic-bucket.target-row-num": "3", **options},
    )


def test_second_writer_adding_keys_to_the_same_partition_fails(warehouse):
    t = make(warehouse)
    t.write_arrow(rows("a", range(4), 0))
    wa, ma = prepared_write(t, rows("a", [10, 11], 1))
    wb, mb = prepared_write(t, rows("a", [11, 12], 2))  # key 11 is new to both writers
    wa.new_commit().commit(ma)
    before = t.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="HASH index of bucket"):
        wb.new_commit().commit(mb)
    assert t.latest_snapshot().id == before
    assert_each_key_once(t)
    assert_hash_index_consistent(t, 3)
    # re-running the failed job against the latest snapshot works
    t.write_arrow(rows("a", [11, 12], 2))
    assert sorted((r["id"], r["v"]) for r in t.to_arrow().to_pylist())[-3:] == [(10, 1), (11, 2), (12, 2)]
    assert_each_key_once(t)
    assert_hash_index_consistent(t, 3)


def test_two_writers_creating_the_same_new_partition_conflict(warehouse):
    t = make(warehouse)
    wa, ma = prepared_write(t, rows("new", [1], 1))
    wb, mb = prepared_write(t, rows("new", [1], 2))
    wa.new_commit().commit(ma)
    with pytest.raises(CommitConflictError):
        wb.new_commit().commit(mb)
    assert [r["v"] for r in t.to_arrow().to_pylist()] == [1]


def test_writers_of_different_partitions_or_of_existing_keys_do_not_conflict(warehouse):
    t = make(warehouse)
    t.write_arrow(pa.concat_tables([rows("a", range(4), 0), rows("b", range(4), 0)]))
    wa, ma = prepared_write(t, rows("a", [20, 21], 1))
    wb, mb = prepared_write(t, rows("b", [20, 21], 1))
    wc, mc = prepared_write(t, rows("a", [0, 1], 3))  # updates only: no index change
    wa.new_commit().commit(ma)
    wb.new_commit().commit(mb)
    wc.new_commit().commit(mc)
    assert len(t.to_arrow()) == 12
    assert_each_key_once(t)
    assert_hash_index_consistent(t, 3)


def test_two_task_writers_in_one_commit_on_one_bucket_are_refused(warehouse):
    t = make(warehouse)
    wb = t.new_batch_write_builder()
    w1, w2 = wb.new_write(), wb.new_write()
    w1.write_arrow(rows("a", [1], 1))
    w2.write_arrow(rows("a", [2], 1))
    with pytest.raises(CommitConflictError, match="two writers"):
        wb.new_commit().commit(w1.prepare_commit() + w2.prepare_commit())
    assert t.latest_snapshot() is None


def test_cross_partition_second_writer_fails(warehouse):
    t = make(warehouse, cross=True)
    t.write_arrow(rows("a", range(4), 0))
    wa, ma = prepared_write(t, rows("b", [1], 1))  # moves key 1 to b
    wb, mb = prepared_write(t, rows("c", [1], 2))  # moves key 1 to c, from the same base
    wa.new_commit().commit(ma)
    with pytest.raises(CommitConflictError, match="cross-partition"):
        wb.new_commit().commit(mb)
    assert_each_key_once(t)
    assert [(r["dt"], r["v"]) for r in t.to_arrow().to_pylist() if r["id"] == 1] == [("b", 1)]


def _racer(warehouse, cross, worker, rounds, result, go):
    t = Catalog(warehouse).get_table("db.t")
    go.wait(60)
    conflicts = 0
    for r in range(rounds):
        ids = list(range(r * 3, r * 3 + 6))  # overlaps the other worker and the previous round
        data = rows(f"p{(r + worker) % 2}" if cross else "a", ids, worker * 1000 + r)
        while True:
            try:
                t.write_arrow(data)
                break
            except CommitConflictError:
                conflicts += 1
    result.put((worker, conflicts))
    end_worker(result)


@pytest.mark.parametrize("cross", [False, True])
def test_racing_processes_never_duplicate_keys(warehouse, cross):
    make(warehouse, cross=cross, **{"commit.min-retry-wait": "1 ms"})
    ctx = mp.get_context("spawn")
    q, go = ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_racer, args=(warehouse, cross, w, 6, q, go)) for w in range(2)]
    for p in procs:
        p.start()
    import time

    time.sleep(2.0)  # both workers imported lake_core and wait at the gate
    go.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    conflicts = dict(q.get() for _ in procs)
    print("conflicts per worker:", conflicts)
    t = Catalog(warehouse).get_table("db.t")
    where = assert_each_key_once(t)
    assert len(where) == 21  # ids 0..20
    if not cross:
        assert_hash_index_consistent(t, 3)


def test_update_racing_an_overwrite_of_its_partition_fails(warehouse):
    t = make(warehouse)
    t.write_arrow(pa.concat_tables([rows("a", range(6), 0), rows("b", range(6), 0)]))
    wa, ma = prepared_write(t, rows("a", [4, 5], 1))  # updates only: keys 4, 5 live in bucket 1
    wb, mb = prepared_write(t, rows("b", [1], 1))
    t.write_arrow(rows("a", [5, 4], 9), overwrite={"dt": "a"})  # new index: 5, 4 in bucket 0
    with pytest.raises(CommitConflictError, match="overwrote partition"):
        wa.new_commit().commit(ma)
    wb.new_commit().commit(mb)  # another partition: fine
    assert_each_key_once(t)
    assert_hash_index_consistent(t, 3)
    assert sorted((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist() if r["dt"] == "a") == [
        ("a", 4, 9),
        ("a", 5, 9),
    ]
