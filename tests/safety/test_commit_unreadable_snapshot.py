"""Issue 23, item 9: a snapshot the conflict checks cannot read refuses the commit.

The checks walk the snapshots committed since the writer's base. Only an expired snapshot may be
skipped (nothing is left to compare with); one that is throttled, unreachable or corrupt used to be
taken for expired too, and a commit those checks exist to refuse landed (a lost update, a key in two
partitions). Faults come from ``tests/reliability/faultio.py`` wrapping the real storage.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from reliability.faultio import Fault, FaultyFileIO, failing_reads

from fixtures.commits import prepared_write
from lake_core import Catalog
from lake_core.errors import CommitConflictError, CommitFailedError, SequenceConflictError
from lake_core.io.fileio import FileIO

from .helpers import as_dict, kv, new_table, prepared, where  # noqa: F401 (fixture)


def _flaky(uri: str, storage_options: dict, before, fault: Fault | None = None):
    """The table ``db.t`` seen through storage whose reads ``before`` fails."""
    return Catalog(uri, storage_options, fileio=FaultyFileIO(FileIO(uri, storage_options), fault, before=before))


def _corrupt(table, snapshot_id: int) -> None:
    table.fileio.write_bytes(table.paths.snapshot(snapshot_id), b"{ this is not a snapshot")


@pytest.mark.parametrize("damage", ["unreachable", "corrupt"])
def test_a_snapshot_the_sequence_check_cannot_read_refuses_the_commit(where, damage):
    uri, opts = where
    t = new_table(uri, opts)
    t.write_arrow(kv([1], ["base"]))  # snapshot 1: both writers start here
    wb1, first = prepared(t, [1, 2], ["first", "first"])
    wb2, second = prepared(t, [1, 3], ["second", "second"])  # numbered like ``first``
    wb1.new_commit().commit(first)  # snapshot 2
    t.maintenance.compact(full=True)  # snapshot 3 (COMPACT): the latest, so snapshot 2 is read by the walk only
    want = as_dict(t)
    if damage == "corrupt":
        _corrupt(t, 2)
        committer = Catalog(uri, opts).get_table("db.t")
    else:
        committer = _flaky(uri, opts, failing_reads("/snapshot/snapshot-2")).get_table("db.t")
    # Before the fix the commit landed: key 1 kept "first" although "second" was committed later.
    with pytest.raises(
        CommitFailedError,
        match=r"commit to db\.t: could not read .*/snapshot/snapshot-2 to check "
        r"this commit for conflicts.*nothing was committed",
    ):
        committer.new_batch_write_builder().new_commit().commit(second)
    t = Catalog(uri, opts).get_table("db.t")
    assert t.latest_snapshot().id == 3 and as_dict(t) == want
    if damage == "unreachable":  # storage answers again: the real conflict is found
        with pytest.raises(SequenceConflictError, match="bucket 0"):
            t.new_batch_write_builder().new_commit().commit(second)
        assert as_dict(t) == want


def test_a_snapshot_the_cross_partition_check_cannot_read_refuses_the_commit(warehouse):
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])

    def rows(dt, ids, v):
        return pa.table({"dt": [dt] * len(ids), "id": list(ids), "v": [v] * len(ids)}, schema=schema)

    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["id"],
        partition_keys=["dt"],
        options={"dynamic-bucket.target-row-num": "3"},
    )  # cross-partition upsert
    t.write_arrow(rows("a", range(4), 0))
    wa, moves_to_b = prepared_write(t, rows("b", [1], 1))
    wc, moves_to_c = prepared_write(t, rows("c", [1], 2))  # from the same base: its key index puts key 1 in a
    wa.new_commit().commit(moves_to_b)  # snapshot 2
    t.maintenance.compact(full=True)  # snapshot 3 (COMPACT)
    want = sorted((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())
    committer = _flaky(warehouse, {}, failing_reads("/snapshot/snapshot-2")).get_table("db.t")
    # Before the fix the commit landed and key 1 lived in partitions b and c at once.
    with pytest.raises(CommitFailedError, match=r"could not read .*/snapshot/snapshot-2 .*nothing was committed"):
        committer.new_batch_write_builder().new_commit().commit(moves_to_c)
    t = Catalog(warehouse).get_table("db.t")
    assert sorted((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist()) == want
    with pytest.raises(CommitConflictError, match="cross-partition"):  # the conflict, once storage answers
        t.new_batch_write_builder().new_commit().commit(moves_to_c)


def test_expired_snapshots_are_still_skipped(warehouse):
    """The only snapshots the walk may skip: a writer whose base expired meanwhile still commits."""
    t = new_table(warehouse, options={"bucket": "2"})
    t.write_arrow(kv([1], ["base"]))
    wb, late = prepared(t, [1], ["late"])
    own_bucket = late[0].bucket
    others = [k for k in range(2, 40) if prepared(t, [k], ["x"])[1][0].bucket != own_bucket][:3]
    for k in others:  # snapshots 2-4 add to the other bucket only
        t.write_arrow(kv([k], ["other"]))
    t.maintenance.expire_snapshots(retain_min=1, retain_max=1, older_than=dt.timedelta(0))
    assert t.snapshot_manager.earliest_id() == 4
    wb.new_commit().commit(late)
    assert as_dict(t) == {1: "late", **{k: "other" for k in others}}


def test_a_lost_create_reply_whose_read_back_fails_commits_once(warehouse):
    """The create of snapshot 2 took effect but its reply was lost, and reading snapshot 2 back
    failed once: no verdict; the retry recognises its own snapshot. (It used to raise the raw read
    error although the commit had landed, so a caller re-sent the data.)"""
    t = new_table(warehouse)
    t.write_arrow(kv([1], ["a"]))
    fio = None
    failed = []

    def read_back_fails_once(kind, path):
        if kind == "read" and path.endswith("/snapshot/snapshot-2") and fio.fired and not failed:
            failed.append(path)
            raise OSError(f"injected read failure: {path}")

    fio = FaultyFileIO(FileIO(warehouse), Fault("create", 1, "lost-ack"), before=read_back_fails_once)
    snap = Catalog(warehouse, fileio=fio).get_table("db.t").write_arrow(kv([2], ["b"]))
    assert failed and snap.id == 2
    t = Catalog(warehouse).get_table("db.t")
    assert [s.id for s in t.snapshots()] == [1, 2] and as_dict(t) == {1: "a", 2: "b"}
