"""Rescales racing real writer processes, on local disk and on the S3 test server.

* A writer on partition A while partition B is rescaled: both land.
* A writer on the partition being rescaled, both prepared before either commits: exactly one
  wins (the writer's stale bucket count, or the rescale's stale read, is detected), nothing is
  lost and the loser's error says what happened; a re-run of the loser succeeds.
"""

from __future__ import annotations

import multiprocessing as mp
import random

from fixtures.process_end import end_worker
from lake_core import Catalog, LakeError

from .rescale_helpers import PARTS, SCHEMA, Model, assert_rows_in_their_buckets, bucket_counts, make_table, rows


def _writer(warehouse, storage_options, batches, barrier, queue):
    import pyarrow as pa

    table = Catalog(warehouse, storage_options).get_table("db.t")
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    for b in batches[:1]:
        w.write_arrow(pa.Table.from_pylist(b, schema=SCHEMA))  # bucket counts chosen here
    messages = w.prepare_commit()
    barrier.wait()
    try:
        wb.new_commit().commit(messages)
        for b in batches[1:]:
            table.write_arrow(pa.Table.from_pylist(b, schema=SCHEMA))
        queue.put(("writer", "ok", ""))
    except LakeError as e:
        queue.put(("writer", "error", f"{type(e).__name__}: {e}"))
    end_worker(queue)


def _rescaler(warehouse, storage_options, partition, bucket, barrier, queue):
    from lake_core.maintenance.rescale import commit_rescale_partition, prepare_rescale_partition

    table = Catalog(warehouse, storage_options).get_table("db.t")
    # Read and rewrite before the barrier, so the writer's commit and this one truly overlap.
    prepared = prepare_rescale_partition(table, partition={"dt": partition}, bucket=bucket)
    barrier.wait()
    try:
        res = commit_rescale_partition(table, prepared)
        queue.put(("rescale", "ok", res.rows))
    except LakeError as e:
        queue.put(("rescale", "error", f"{type(e).__name__}: {e}"))
    end_worker(queue)


def _race(warehouse, storage_options, batches, partition, bucket) -> dict:
    """The rescale has set the ``bucket`` option (its first step) before both processes open
    the table; then each prepares its commit, and both commit at once."""
    from lake_core.maintenance.rescale import set_bucket_option

    set_bucket_option(Catalog(warehouse, storage_options).get_table("db.t"), bucket)
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(warehouse, storage_options, batches, barrier, queue)),
        ctx.Process(target=_rescaler, args=(warehouse, storage_options, partition, bucket, barrier, queue)),
    ]
    for p in procs:
        p.start()
    out = {}
    for _ in procs:
        who, status, detail = queue.get(timeout=300)
        out[who] = (status, detail)
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    return out


def _seeded(uri, opts, seed):
    rnd = random.Random(seed)
    catalog, table = make_table(uri, opts, options={"commit.max-retries": "50"})
    model = Model()
    for _ in range(3):
        table.write_arrow(model.batch(rnd, 150, deletes=False))
    return rnd, catalog, table, model


def test_writer_on_another_partition_and_rescale_both_land(storage):
    uri, opts = storage
    rnd, catalog, table, model = _seeded(uri, opts, 11)
    batches = [model.batch(rnd, 40, parts=[PARTS[0]]).to_pylist() for _ in range(3)]
    out = _race(uri, opts, batches, PARTS[1], 4)
    assert out["writer"] == ("ok", "") and out["rescale"][0] == "ok", out
    table = catalog.get_table("db.t")
    assert rows(table.to_arrow()) == model.expected()
    assert bucket_counts(table) == {PARTS[0]: {2}, PARTS[1]: {4}, PARTS[2]: {2}}
    assert_rows_in_their_buckets(table)


def test_writer_on_the_partition_being_rescaled(storage):
    uri, opts = storage
    rnd, catalog, table, model = _seeded(uri, opts, 12)
    outcomes = []
    for round_, bucket in enumerate([3, 5, 2]):
        batch = Model()
        batch.rows = dict(model.rows)
        data = batch.batch(rnd, 40, parts=[PARTS[0]])
        out = _race(uri, opts, [data.to_pylist()], PARTS[0], bucket)
        w, r = out["writer"], out["rescale"]
        outcomes.append((w[0], r[0]))
        # Both prepared before either committed: exactly one of them can win.
        assert sorted((w[0], r[0])) == ["error", "ok"], out
        if w[0] == "error":
            assert "total buckets of partition" in w[1] and PARTS[0] in w[1] and "re-run" in w[1], w
        else:
            model.rows = batch.rows
        if r[0] == "error":
            assert "CommitConflictError" in r[1] and f"dt={PARTS[0]}" in r[1] and "nothing was lost" in r[1], r
        table = catalog.get_table("db.t")
        assert rows(table.to_arrow()) == model.expected(), (round_, out)
        assert len(bucket_counts(table)[PARTS[0]]) == 1
        assert_rows_in_their_buckets(table)
        # The loser's re-run succeeds.
        if w[0] == "error":
            table.write_arrow(data)
            model.rows = batch.rows
        if r[0] == "error":
            assert table.maintenance.rescale(bucket=bucket, partitions=[{"dt": PARTS[0]}]).partitions_rescaled == 1
        table = catalog.get_table("db.t")
        assert rows(table.to_arrow()) == model.expected()
        assert bucket_counts(table)[PARTS[0]] == {bucket}
    print("outcomes (writer, rescale):", outcomes)
