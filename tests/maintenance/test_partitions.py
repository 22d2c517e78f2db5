"""expire_partitions and the partition.expiration-* options."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import LakeError, MaintenanceArgumentError

from .helpers import listing

SCHEMA = pa.schema([("day", pa.string()), ("hour", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
TODAY = dt.date.today()


def _table(warehouse, fmt="%Y-%m-%d", name="db.p", **options):
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["day", "hour", "id"],
        partition_keys=["day", "hour"],
        options={"bucket": "1", "write-only": "true", **options},
    )
    model = {}
    for age in (400, 40, 3, 0):
        day = (TODAY - dt.timedelta(days=age)).strftime(fmt)
        rows = {"day": [day] * 3, "hour": ["07"] * 3, "id": [1, 2, 3], "v": [age] * 3}
        t.write_arrow(pa.table(rows, schema=SCHEMA))
        model.update({(day, "07", i): age for i in (1, 2, 3)})
    return t, model


def _state(t, **at):
    return {(r["day"], r["hour"], r["id"]): r["v"] for r in t.to_arrow(**at).to_pylist()}


def test_drops_old_partitions_in_one_commit_and_files_go_with_expiry(warehouse):
    t, model = _table(warehouse)
    before_snap = t.latest_snapshot().id
    before = listing(t)
    dry = t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=30), dry_run=True)
    assert listing(t) == before
    old = {(TODAY - dt.timedelta(days=a)).isoformat() for a in (400, 40)}
    assert set(dry.expired_partitions) == {
        f"day={d}/hour=07" for d in old
    }  # the one partition text (as paths and selectors)
    res = t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=30))
    assert res.snapshot_id == before_snap + 1 and t.latest_snapshot().commit_kind.value == "OVERWRITE"
    assert res.expired_partitions == dry.expired_partitions and res.dropped_files == dry.dropped_files == 2
    assert _state(t) == {k: v for k, v in model.items() if k[0] not in old}
    assert _state(t, snapshot_id=before_snap) == model  # time travel until the snapshots expire
    assert set(listing(t)) >= set(before)  # nothing deleted yet
    t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert not any(p.startswith(tuple(f"day={d}" for d in old)) for p in listing(t))
    assert _state(t) == {k: v for k, v in model.items() if k[0] not in old}


def test_formatter_and_pattern(warehouse):
    t, model = _table(warehouse, fmt="%Y%m%d")
    res = t.maintenance.expire_partitions(
        expiration_time="30 d", timestamp_formatter="yyyyMMdd HH:mm:ss", timestamp_pattern="$day $hour:00:00"
    )
    assert len(res.expired_partitions) == 2 and res.unparseable_partitions == ()
    # the default parser does not read yyyyMMdd: reported, nothing dropped
    t2, _ = _table(warehouse, fmt="%Y%m%d", name="db.q")
    res = t2.maintenance.expire_partitions(expiration_time="30 d")
    assert res.expired_partitions == () and len(res.unparseable_partitions) == 4


def test_partition_expiration_option_runs_after_commits(warehouse):
    t, model = _table(
        warehouse,
        name="db.auto",
        **{"write-only": "false", "partition.expiration-time": "30 d", "partition.expiration-check-interval": "0 s"},
    )
    old = {(TODAY - dt.timedelta(days=a)).isoformat() for a in (400, 40)}
    assert _state(t) == {k: v for k, v in model.items() if k[0] not in old}


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"expiration_time": dt.timedelta(days=-1)}, "expiration_time = -1d .* must be positive"),
        ({"expiration_time": 5}, "timedelta or a duration"),
        ({"expiration_time": "soon"}, "not a duration"),
        ({"expiration_time": "1 d", "timestamp_formatter": "yyyy-MM-dd EEE"}, "pattern letters"),
        ({"expiration_time": "1 d", "timestamp_pattern": "$month"}, "unknown: month"),
        ({"expiration_time": "1 d", "dry_run": None}, "dry_run"),
    ],
)
def test_bad_arguments(warehouse, kwargs, match):
    t, _ = _table(warehouse)
    before = listing(t)
    with pytest.raises(LakeError, match=match):
        t.maintenance.expire_partitions(**kwargs)
    assert listing(t) == before


def test_unpartitioned_table_is_refused(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table("db.u", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(MaintenanceArgumentError, match="not partitioned"):
        t.maintenance.expire_partitions(expiration_time="1 d")
