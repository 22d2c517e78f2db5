"""Record-level expiry: expired rows are dropped when their files are compacted, NULL times are
kept and counted, every supported time-field type, and ``compact(expire_records=True)``
rewrites exactly the files whose statistics show expired records, also files written under an
older schema (statistics mapped by field id)."""
from __future__ import annotations

import datetime as dt
import time

import pyarrow as pa
import pytest

from lake_core import Catalog, SchemaChange
from lake_core.compaction.job import compact
from lake_core.errors import InvalidOptionError

NOW = int(time.time())
DAY = 86_400


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def catalog(request) -> Catalog:
    """A catalog with database ``db`` on a local warehouse, or on moto S3."""
    if request.param == "s3":
        wh = request.getfixturevalue("s3_warehouse")
        cat = Catalog(wh.uri, storage_options=wh.storage_options)
    else:
        cat = Catalog(request.getfixturevalue("warehouse"))
    cat.create_database("db")
    return cat


def _read(t) -> dict:
    """The table's rows as {id: row without id}."""
    return {r.pop("id"): r for r in t.to_arrow().to_pylist()}


def _unexpired(model: dict, field: str = "ts") -> dict:
    """The dict model after expiry at NOW with a 1 d expire-time (NULL times never expire)."""
    return {k: r for k, r in model.items() if r[field] is None or r[field] >= NOW - DAY}


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


TTL = {"record-level.expire-time": "1 d", "record-level.time-field": "ts"}
ALTERS = {
    # TTL turned on for files already written
    "ttl_turned_on": ({}, lambda: [SchemaChange.set_option(k, v) for k, v in TTL.items()]),
    "column_added": (TTL, lambda: [SchemaChange.add_column("note", pa.string())]),
    # the option follows the rename; the old files name the column 'ts'
    "time_field_renamed": (TTL, lambda: [SchemaChange.rename_column("ts", "event_ts")]),
    "time_field_widened": (TTL, lambda: [SchemaChange.update_column_type("ts", pa.int64())]),
    "rescaled": (TTL, None),  # rescale sets 'bucket' (a schema change) and rewrites partition 'a' only
}


@pytest.mark.parametrize("alter", sorted(ALTERS))
def test_expiry_after_a_schema_change_reads_old_files_statistics(catalog, alter):
    options, changes = ALTERS[alter]
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("ts", pa.int32()), ("v", pa.string())])
    t = catalog.create_table("db.t", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"],
                             options={"bucket": "1", "write-only": "true", **options})
    ages = {1: 0, 2: 2 * DAY, 3: 0, 4: 3 * DAY, 5: 3600, 6: 0}
    model = {i: {"dt": "a" if i <= 3 else "b", "ts": NOW - age, "v": f"v{i}"} for i, age in ages.items()}
    t.write_arrow(pa.Table.from_pylist([{"id": i, **r} for i, r in model.items()], schema=schema))
    if changes is None:
        t.maintenance.rescale(bucket=2, partitions=[{"dt": "a"}])
        t = catalog.get_table("db.t")
    else:
        t = catalog.alter_table("db.t", changes())
    field = t.options.get("record-level.time-field")  # 'event_ts' after the rename
    model = {i: {(field if k == "ts" else k): v for k, v in r.items()} for i, r in model.items()}
    if "note" in t.schema.field_names:
        model = {i: {**r, "note": None} for i, r in model.items()}
    assert t.schema.id > 0 and _read(t) == model
    r = t.maintenance.compact(expire_records=True)
    assert r.units_planned >= 1 and r.rows_expired == 2  # ids 2 and 4, in both partitions
    assert r.ttl_lag_before_s >= DAY - 5 and r.ttl_lag_after_s == 0
    assert _read(catalog.get_table("db.t")) == _unexpired(model, field)
    assert t.maintenance.compact(expire_records=True).units_planned == 0


def test_rows_of_files_older_than_the_time_field_never_expire(catalog):
    """A time field added after files were written: those rows have no time, i.e. a NULL time,
    which never expires (Java 1.1+); their files' statistics show a NULL minimum, nothing expired."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.t", schema=schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t = catalog.alter_table("db.t", [SchemaChange.add_column("ts", pa.int64())]
                            + [SchemaChange.set_option(k, v) for k, v in TTL.items()])
    t.write_arrow(pa.table({"id": [4, 5], "v": ["d", "e"], "ts": [NOW - 2 * DAY, NOW]}))
    t = catalog.alter_table("db.t", [SchemaChange.set_option("snapshot.num-retained.min", "5")])  # schema 2
    model = {1: {"v": "a", "ts": None}, 2: {"v": "b", "ts": None}, 3: {"v": "c", "ts": None},
             4: {"v": "d", "ts": NOW - 2 * DAY}, 5: {"v": "e", "ts": NOW}}
    r = t.maintenance.compact(expire_records=True)
    assert r.rows_expired == 1 and r.rows_null_time == 3
    assert _read(t) == _unexpired(model)
    assert t.maintenance.compact(expire_records=True).units_planned == 0
