"""Concurrent committers in several processes lose nothing (local disk and S3)."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest

from fixtures.process_end import end_worker
from lake_core import Catalog
from lake_core.errors import CommitConflictError

SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.int32())])


def _writer(warehouse, storage_options, writer_id, commits):
    t = Catalog(warehouse, storage_options).get_table("db.t")
    for i in range(commits):
        key = writer_id * 1000 + i
        t.write_arrow(pa.table({"id": [key], "writer": [writer_id]}, schema=SCHEMA))
    end_worker()


def _run_writers(warehouse, storage_options, writers=3, commits=8):
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(warehouse, storage_options, w, commits)) for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0


def _check(cat, writers=3, commits=8):
    t = cat.get_table("db.t")
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    # one APPEND per write; writers' inline compactions add COMPACT snapshots in between
    assert sum(s.commit_kind.value == "APPEND" for s in snaps) == writers * commits
    got = sorted(t.to_arrow()["id"].to_pylist())
    assert got == sorted(w * 1000 + i for w in range(writers) for i in range(commits))


def test_concurrent_committers_local(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2", "commit.max-retries": "100"})
    _run_writers(warehouse, {})
    _check(cat)


@pytest.mark.s3
def test_concurrent_committers_s3(s3_warehouse):
    cat = Catalog(s3_warehouse.uri, s3_warehouse.storage_options)
    cat.create_database("db")
    cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2", "commit.max-retries": "100"})
    _run_writers(s3_warehouse.uri, s3_warehouse.storage_options, writers=2, commits=5)
    _check(cat, writers=2, commits=5)


def test_compaction_conflict_on_deleted_file_aborts_cleanly(warehouse):
    """A commit that deletes a file someone else already removed must fail and leave no trace."""
    from lake_core.commit.messages import CommitMessage

    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "writer": [1]}, schema=SCHEMA))
    entry = t.manifest_store.live_entries(t.latest_snapshot())[0]
    t.write_arrow(pa.table({"id": [2], "writer": [1]}, schema=SCHEMA), overwrite=True)  # removes that file
    msg = CommitMessage(entry.partition, entry.bucket, entry.total_buckets, compact_before=(entry.file,))
    before = t.latest_snapshot().id
    with pytest.raises(CommitConflictError, match=entry.file.file_name):
        t.new_batch_write_builder().new_commit().commit([msg])
    assert t.latest_snapshot().id == before
    assert t.to_arrow()["id"].to_pylist() == [2]
