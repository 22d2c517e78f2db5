"""A stream consumer (``new_stream_scan(consumer_id=...)``) whose position expired is told so: an
error, or the restart it asks for (``ignore_progress=True``), never a silent restart that would
leave the keys deleted meanwhile in a downstream applying the changes.

Oracle: the downstream is a dict that applies every row by its ``_ROW_KIND``; after consuming up to
the latest snapshot it must equal the table.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest

from lake_core import ROW_KIND, Catalog
from lake_core.errors import ConsumerExpiredError, InvalidOptionError, SnapshotNotFoundError

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string()), ("op", pa.string())])
NOW = dt.timedelta(0)


def _table(warehouse, **options):
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    opts = {"bucket": "1", "rowkind.field": "op", "write-only": "true", "consumer.expiration-time": "1 h", **options}
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"], options=opts)


def _write(t, rows: dict, op: str = "+I") -> None:
    keys = sorted(rows)
    t.write_arrow(pa.table({"k": keys, "v": [rows[k] for k in keys], "op": [op] * len(keys)}, schema=SCHEMA))


def _state(t) -> dict:
    return {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}


def _consume(t, scan, downstream: dict) -> dict:
    """Apply every plan up to the latest snapshot to ``downstream`` (a dict), then checkpoint."""
    read = t.new_read_builder().new_read()
    latest = t.latest_snapshot().id
    while scan.checkpoint() is None or scan.checkpoint() <= latest:
        for r in read.to_arrow(scan.plan().splits()).to_pylist():
            if r[ROW_KIND] in ("+I", "+U"):
                downstream[r["k"]] = r["v"]
            else:
                downstream.pop(r["k"], None)
    scan.notify_checkpoint_complete(scan.checkpoint())
    return downstream


def _idle(t, consumer_id: str, seconds: float) -> None:
    """Make ``consumer-<id>`` look untouched for ``seconds`` (consumer.expiration-time reads its mtime)."""
    path = t.fileio._p(t.paths.consumer(consumer_id))
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def _listing(t) -> dict[str, bytes]:
    root = t.fileio._p(t.paths.root)
    out = {}
    for d, _dirs, names in os.walk(root):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return out


def _downstream_then_pause(t) -> tuple[dict, int]:
    """A consumer 'job' that read snapshots 1-2, then keys 0-4 are deleted while it is away."""
    _write(t, {k: f"a{k}" for k in range(10)})
    _write(t, {k: f"b{k}" for k in range(5, 12)})
    downstream = _consume(t, t.new_read_builder().new_stream_scan(consumer_id="job"), {})
    assert downstream == _state(t) and t.maintenance.consumers.get("job") == 3
    _write(t, {k: "" for k in range(5)}, op="-D")
    _write(t, {20: "c20"})
    return downstream, 3


def test_a_consumer_whose_file_and_snapshots_expired_gets_an_error_not_a_silent_restart(warehouse):
    t = _table(warehouse)
    downstream, reached = _downstream_then_pause(t)
    _idle(t, "job", 2 * 3600)  # away longer than consumer.expiration-time
    assert t.maintenance.consumers.expire() == ["job"]
    t.maintenance.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=1000)
    assert t.snapshot_manager.earliest_id() > reached  # the deletions of snapshot 3 can no longer be read
    before = _listing(t)
    with pytest.raises(ConsumerExpiredError) as err:
        t.new_read_builder().new_stream_scan(consumer_id="job")
    msg = str(err.value)
    for part in (
        "'job'",
        t.identifier,
        f"snapshot {reached}",
        "consumer.expiration-time = 1 h",
        "ignore_progress=True",
        "consumers.delete('job')",
    ):
        assert part in msg, (part, msg)
    assert isinstance(err.value, SnapshotNotFoundError)
    assert (err.value.consumer_id, err.value.next_snapshot) == ("job", reached)
    assert _listing(t) == before  # nothing changed

    # the restart the caller asks for: the latest snapshot in full, then the changes as usual
    restarted = _consume(t, t.new_read_builder().new_stream_scan(consumer_id="job", ignore_progress=True), {})
    assert restarted == _state(t)
    assert t.maintenance.consumers.get("job") == t.latest_snapshot().id + 1
    _write(t, {5: "gone"}, op="-D")
    resumed = _consume(t, t.new_read_builder().new_stream_scan(consumer_id="job"), restarted)
    assert resumed == _state(t) and 5 not in resumed


def test_a_consumer_whose_file_expired_resumes_where_it_was_while_its_snapshots_remain(warehouse):
    t = _table(warehouse)
    downstream, reached = _downstream_then_pause(t)
    _idle(t, "job", 2 * 3600)
    assert t.maintenance.consumers.expire() == ["job"]
    assert t.maintenance.consumers.get("job") is None
    scan = t.new_read_builder().new_stream_scan(consumer_id="job")
    # an expiry before the first plan: the consumer file is back already, so it keeps what the
    # consumer has yet to read
    t.maintenance.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=1000)
    assert _consume(t, scan, downstream) == _state(t)  # the deletions arrived
    assert t.snapshot_manager.earliest_id() == reached


def test_consumer_expiry_after_a_commit_leaves_the_record_too(warehouse):
    # the path production takes: consumer expiry, then snapshot expiry, after every commit
    t = _table(warehouse, **{"write-only": "false", "snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    downstream, reached = _downstream_then_pause(t)
    _idle(t, "job", 2 * 3600)
    _write(t, {30: "d30"})
    assert t.maintenance.consumers.get("job") is None and t.snapshot_manager.earliest_id() > reached
    with pytest.raises(ConsumerExpiredError, match="consumer.expiration-time"):
        t.new_read_builder().new_stream_scan(consumer_id="job")


def test_a_consumer_position_below_the_earliest_snapshot_is_an_error(warehouse):
    t = _table(warehouse)
    downstream, reached = _downstream_then_pause(t)
    t.maintenance.consumers.delete("job")
    t.maintenance.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=1000)
    # our expiry honours consumers, so only a consumer moved below the earliest (or a job that
    # ignores consumer files) gets here
    t.maintenance.consumers.reset("job", reached)
    before = _listing(t)
    with pytest.raises(ConsumerExpiredError, match=rf"'job' of {t.identifier} cannot resume.*snapshot {reached}"):
        t.new_read_builder().new_stream_scan(consumer_id="job")
    assert _listing(t) == before


def test_new_and_deliberately_deleted_consumers_start_from_a_full_read(warehouse):
    t = _table(warehouse)
    downstream, reached = _downstream_then_pause(t)
    assert _consume(t, t.new_read_builder().new_stream_scan(consumer_id="new"), {}) == _state(t)
    _idle(t, "job", 2 * 3600)
    t.maintenance.consumers.expire()
    t.maintenance.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=1000)
    t.maintenance.consumers.delete("job")  # on purpose: the record goes with it
    assert not t.fileio.exists(t.paths.expired_consumer("job"))
    assert _consume(t, t.new_read_builder().new_stream_scan(consumer_id="job"), {}) == _state(t)


def test_an_expired_lease_leaves_no_record(warehouse):
    t = _table(warehouse, **{"consumer.expiration-time": "1 ms"})
    _write(t, {1: "a"})
    lease = t.maintenance.acquire_lease(holder="report", ttl=dt.timedelta(milliseconds=1))
    time.sleep(0.01)
    assert t.maintenance.consumers.expire() == [lease.consumer_id]
    assert [n for n in t.fileio.list_names(t.paths.consumer_dir) if n.startswith(".expired-")] == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"consumer_id": "job", "ignore_progress": "yes"}, "must be True or False"),
        ({"ignore_progress": True}, "needs a consumer_id"),
    ],
)
def test_ignore_progress_is_validated(warehouse, kwargs, match):
    t = _table(warehouse)
    _write(t, {1: "a"})
    with pytest.raises(InvalidOptionError, match=match):
        t.new_read_builder().new_stream_scan(**kwargs)


@pytest.mark.s3
def test_an_expired_consumer_gets_an_error_on_s3(s3_warehouse):
    cat = Catalog(s3_warehouse.uri, storage_options=s3_warehouse.storage_options)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        SCHEMA,
        primary_keys=["k"],
        options={"bucket": "1", "rowkind.field": "op", "write-only": "true", "consumer.expiration-time": "1 s"},
    )
    downstream, reached = _downstream_then_pause(t)
    time.sleep(2.5)  # idle longer than consumer.expiration-time (S3 keeps the object's write time)
    assert t.maintenance.consumers.expire() == ["job"]
    t.maintenance.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=1000)
    with pytest.raises(ConsumerExpiredError) as err:
        t.new_read_builder().new_stream_scan(consumer_id="job")
    assert (err.value.consumer_id, err.value.next_snapshot) == ("job", reached)
    restarted = _consume(t, t.new_read_builder().new_stream_scan(consumer_id="job", ignore_progress=True), {})
    assert restarted == _state(t) and not set(range(5)) & set(restarted)
