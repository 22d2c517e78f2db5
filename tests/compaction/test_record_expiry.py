"""Record-level expiry: expired rows are dropped when their files are compacted, NULL times are
kept and counted, every supported time-field type, and ``compact(expire_records=True)``
rewrites exactly the files whose statistics show expired records."""
from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.compaction.job import compact
from lake_core.errors import InvalidOptionError

NOW = int(time.time())
DAY = 86_400


def _times(kind: str, secs: list[int | None]):
    if kind == "int":
        return pa.int32(), secs
    if kind == "bigint_s":
        return pa.int64(), secs
    if kind == "bigint_ms":
        return pa.int64(), [None if s is None else s * 1000 + 123 for s in secs]
    tz = "UTC" if kind == "timestamp_ltz" else None
    vals = [None if s is None else dt.datetime.fromtimestamp(s, dt.timezone.utc).replace(tzinfo=None) for s in secs]
    return pa.timestamp("ms", tz=tz), vals


@pytest.mark.parametrize("kind", ["int", "bigint_s", "bigint_ms", "timestamp", "timestamp_ltz"])
def test_expired_rows_dropped_null_kept(warehouse, kind):
    ttype, _ = _times(kind, [])
    schema = pa.schema([("id", pa.int64()), ("ts", ttype)])
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=schema, primary_keys=["id"],
                         options={"bucket": "1", "write-only": "true", "record-level.expire-time": "1 d",
                                  "record-level.time-field": "ts"})
    _, a = _times(kind, [NOW - 2 * DAY, NOW])
    t.write_arrow(pa.table({"id": [1, 2], "ts": a}, schema=schema))
    _, b = _times(kind, [None, NOW - 3 * DAY])
    t.write_arrow(pa.table({"id": [3, 4], "ts": b}, schema=schema))
    r = t.maintenance.compact(expire_records=True)
    assert r.rows_expired == 2 and r.rows_null_time == 1
    assert sorted(t.to_arrow()["id"].to_pylist()) == [2, 3]
    assert r.ttl_lag_before_s >= 2 * DAY - 5 and r.ttl_lag_after_s == 0
    assert t.maintenance.compact(expire_records=True).units_planned == 0  # nothing expired is left


def test_expire_records_rewrites_exactly_the_expired_files(warehouse):
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("pad", pa.string())])
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=schema, primary_keys=["id"],
                         options={"bucket": "1", "write-only": "true", "record-level.expire-time": "1 d",
                                  "record-level.time-field": "ts", "target-file-size": "2 kb"})
    ids = list(range(300))
    t.write_arrow(pa.table({"id": ids, "ts": [NOW - 12 * 3600 if i < 10 else NOW for i in ids],
                            "pad": ["x" * 20] * 300}, schema=schema))
    t.maintenance.compact(full=True)  # nothing expired yet: several top-level files
    top = {e.file.file_name: e.file for e in t.manifest_store.live_entries(t.latest_snapshot())}
    assert len(top) >= 3 and {f.level for f in top.values()} == {5}
    later = (NOW + 13 * 3600) * 1000  # now rows 0..9 are older than a day
    r = compact(t, expire_records=True, now_ms=later)
    after = {e.file.file_name for e in t.manifest_store.live_entries(t.latest_snapshot())}
    first = min(top.values(), key=lambda f: f.min_key)  # holds ids 0..9
    assert r.rows_expired == 10 and r.files_read == 1
    assert set(top) - after == {first.file_name}  # only that file was rewritten
    assert sorted(t.to_arrow()["id"].to_pylist()) == ids[10:]
    assert r.ttl_lag_before_s > 0 and r.ttl_lag_after_s == 0


def test_expiry_options_are_validated(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("ts", pa.int64()), ("s", pa.string())])
    bad = [({"record-level.expire-time": "1 d"}, "record-level.time-field"),
           ({"record-level.time-field": "ts"}, "record-level.expire-time"),
           ({"record-level.expire-time": "1 d", "record-level.time-field": "nope"}, "'nope'"),
           ({"record-level.expire-time": "1 d", "record-level.time-field": "s"}, "'s'"),
           ({"record-level.expire-time": "whenever", "record-level.time-field": "ts"}, "record-level.expire-time")]
    for i, (opts, match) in enumerate(bad):
        with pytest.raises(InvalidOptionError, match=match):
            cat.create_table(f"db.t{i}", schema=schema, primary_keys=["id"], options=opts)
        assert not cat.table_exists(f"db.t{i}")
