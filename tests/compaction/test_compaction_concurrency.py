"""A writer and a dedicated compaction in separate processes, many rounds, on local disk and on
the S3 test server: every written row survives, snapshots stay contiguous, and a compaction that
lost a race leaves nothing behind (no data file outside every snapshot)."""

from __future__ import annotations

import multiprocessing as mp

import pyarrow as pa
import pytest

from fixtures.process_end import end_worker
from lake_core import Catalog
from lake_core.errors import CommitConflictError, CommitFailedError

SCHEMA = pa.schema([("id", pa.int64()), ("round", pa.int64())])


def _writer(warehouse, storage_options, rounds, started, done):
    t = Catalog(warehouse, storage_options).get_table("db.t")
    started.wait(300)  # both processes race from the first round
    try:
        for r in range(rounds):
            # every round rewrites keys 0..9 and adds 10 new ones, so compactions have work to do
            ids = list(range(10)) + list(range(100 + r * 10, 110 + r * 10))
            t.write_arrow(pa.table({"id": ids, "round": [r] * len(ids)}, schema=SCHEMA))
    finally:
        done.set()
    end_worker()


def _compactor(warehouse, storage_options, started, done, out):
    t = Catalog(warehouse, storage_options).get_table("db.t")
    started.set()
    landed = failed = 0
    i = 0
    while not done.is_set() or i < 2:
        try:
            r = t.maintenance.compact(full=i % 3 != 2)
            landed += r.snapshot_id is not None
        except (CommitConflictError, CommitFailedError):
            failed += 1
        i += 1
    out.put((landed, failed))
    end_worker(out)


def _run(warehouse, storage_options, rounds):
    ctx = mp.get_context("spawn")
    started, done, out = ctx.Event(), ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(warehouse, storage_options, rounds, started, done)),
        ctx.Process(target=_compactor, args=(warehouse, storage_options, started, done, out)),
    ]
    for p in procs:
        p.start()
    landed, _failed = out.get(timeout=600)
    for p in procs:
        p.join(600)
        assert p.exitcode == 0
    return landed


def _check(t, rounds, data_files_on_storage):
    snaps = t.snapshots()
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    assert sum(s.commit_kind.value == "APPEND" for s in snaps) == rounds
    rows = {r["id"]: r["round"] for r in t.to_arrow().to_pylist()}
    want = {i: rounds - 1 for i in range(10)}
    want.update({100 + r * 10 + j: r for r in range(rounds) for j in range(10)})
    assert rows == want
    referenced = {e.file.file_name for s in snaps for e in t.manifest_store.live_entries(s)}
    assert set(data_files_on_storage) <= referenced  # failed attempts left no data file behind


def _options():
    return {"bucket": "2", "commit.max-retries": "100", "num-sorted-run.compaction-trigger": "4"}


@pytest.mark.slow
def test_writer_and_compaction_processes_local(warehouse, warehouse_path):
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=_options())
    rounds = 25
    landed = _run(warehouse, {}, rounds)
    assert landed >= 1
    _check(t, rounds, [p.name for p in warehouse_path.rglob("data-*")])


@pytest.mark.slow
@pytest.mark.s3
def test_writer_and_compaction_processes_s3(s3_warehouse):
    cat = Catalog(s3_warehouse.uri, s3_warehouse.storage_options)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=_options())
    rounds = 8
    landed = _run(s3_warehouse.uri, s3_warehouse.storage_options, rounds)
    assert landed >= 1
    fs = s3_warehouse.filesystem()
    names = [
        p.rsplit("/", 1)[-1]
        for p in fs.find(s3_warehouse.uri.replace("s3://", ""))
        if p.rsplit("/", 1)[-1].startswith("data-")
    ]
    _check(t, rounds, names)
