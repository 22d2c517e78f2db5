"""Record-level expiry: expired rows are dropped when their files are compacted, NULL times are
kept and counted, every supported time-field type, and ``compact(expire_records=True)``
rewrites exactly the files whose statistics show expired records, also files written under an
older schema (statistics mapped by field id). A key expires by its merged row, only where the
compaction holds the key's whole history: a late expired update never revives the value it
replaced, and an expired key never falls back to an older level."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from compaction.expiry_scenarios import (
    ALTERS,
    DAY,
    ENGINES,
    LATE_CUTOFF_S,
    NOW,
    TTL,
    altered_table,
    apply_writes,
    late_update_table,
    layered_table,
    levels,
    read_rows,
    unexpired,
)
from lake_core import Catalog, SchemaChange
from lake_core.compaction.job import compact
from lake_core.errors import InvalidOptionError


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


def _times(kind: str, secs: list[int | None]):
    if kind == "int":
        return pa.int32(), secs
    if kind == "bigint_s":
        return pa.int64(), secs
    if kind == "bigint_ms":
        return pa.int64(), [None if s is None else s * 1000 + 123 for s in secs]
    tz = "UTC" if kind == "timestamp_ltz" else None
    vals = [None if s is None else dt.datetime.fromtimestamp(s, dt.UTC).replace(tzinfo=None) for s in secs]
    return pa.timestamp("ms", tz=tz), vals


@pytest.mark.parametrize("kind", ["int", "bigint_s", "bigint_ms", "timestamp", "timestamp_ltz"])
def test_expired_rows_dropped_null_kept(warehouse, kind):
    ttype, _ = _times(kind, [])
    schema = pa.schema([("id", pa.int64()), ("ts", ttype)])
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "write-only": "true",
            "record-level.expire-time": "1 d",
            "record-level.time-field": "ts",
        },
    )
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
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "write-only": "true",
            "record-level.expire-time": "1 d",
            "record-level.time-field": "ts",
            "target-file-size": "2 kb",
        },
    )
    ids = list(range(300))
    t.write_arrow(
        pa.table(
            {"id": ids, "ts": [NOW - 12 * 3600 if i < 10 else NOW for i in ids], "pad": ["x" * 20] * 300}, schema=schema
        )
    )
    t.maintenance.compact(full=True)  # nothing expired yet: several top-level files
    top = {e.file.file_name: e.file for e in t.manifest_store.live_entries(t.latest_snapshot())}
    assert len(top) >= 3 and {f.level for f in top.values()} == {5}
    later = (NOW + 13 * 3600) * 1000  # now rows 0..9 are older than a day
    r = compact(t.store, hooks=t, expire_records=True, now_ms=later)
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
    bad = [
        ({"record-level.expire-time": "1 d"}, "record-level.time-field"),
        ({"record-level.time-field": "ts"}, "record-level.expire-time"),
        ({"record-level.expire-time": "1 d", "record-level.time-field": "nope"}, "'nope'"),
        ({"record-level.expire-time": "1 d", "record-level.time-field": "s"}, "'s'"),
        ({"record-level.expire-time": "whenever", "record-level.time-field": "ts"}, "record-level.expire-time"),
    ]
    for i, (opts, match) in enumerate(bad):
        with pytest.raises(InvalidOptionError, match=match):
            cat.create_table(f"db.t{i}", schema=schema, primary_keys=["id"], options=opts)
        assert not cat.table_exists(f"db.t{i}")


# -- statistics of files written under an older schema -----------------------------------------
@pytest.mark.parametrize("alter", sorted(ALTERS))
def test_expiry_after_a_schema_change_reads_old_files_statistics(catalog, alter):
    t, model, field = altered_table(catalog, alter)
    assert t.schema.id > 0 and read_rows(t) == model
    r = t.maintenance.compact(expire_records=True)
    assert r.units_planned >= 1 and r.rows_expired == 2  # ids 2 and 4, in both partitions
    assert r.ttl_lag_before_s >= DAY - 5 and r.ttl_lag_after_s == 0
    assert read_rows(catalog.get_table("db.t")) == unexpired(model, field=field)
    assert t.maintenance.compact(expire_records=True).units_planned == 0


def test_rows_of_files_older_than_the_time_field_never_expire(catalog):
    """A time field added after files were written: those rows have no time, i.e. a NULL time,
    which never expires (Java 1.1+); their files' statistics show a NULL minimum, nothing expired."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.t", schema=schema, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    t = catalog.alter_table(
        "db.t", [SchemaChange.add_column("ts", pa.int64())] + [SchemaChange.set_option(k, v) for k, v in TTL.items()]
    )
    t.write_arrow(pa.table({"id": [4, 5], "v": ["d", "e"], "ts": [NOW - 2 * DAY, NOW]}))
    t = catalog.alter_table("db.t", [SchemaChange.set_option("snapshot.num-retained.min", "5")])  # schema 2
    model = {
        1: {"v": "a", "ts": None},
        2: {"v": "b", "ts": None},
        3: {"v": "c", "ts": None},
        4: {"v": "d", "ts": NOW - 2 * DAY},
        5: {"v": "e", "ts": NOW},
    }
    r = t.maintenance.compact(expire_records=True)
    assert r.rows_expired == 1 and r.rows_null_time == 3
    assert read_rows(t) == unexpired(model)
    assert t.maintenance.compact(expire_records=True).units_planned == 0


@pytest.mark.parametrize(
    "field, expire, needles",
    [
        ("v", "1 d", ["db.t", "'record-level.time-field'", "'v'", "string"]),
        ("nope", "1 d", ["db.t", "'record-level.time-field'", "'nope'"]),
        ("ts", "soon", ["db.t", "'record-level.expire-time'", "'soon'"]),
    ],
)
def test_turning_ttl_on_with_bad_options_is_refused_and_changes_nothing(catalog, field, expire, needles):
    t, model, _ = altered_table(catalog, "column_added")
    schema_id = t.schema.id
    with pytest.raises(InvalidOptionError) as info:
        catalog.alter_table(
            "db.t",
            [
                SchemaChange.set_option("record-level.time-field", field),
                SchemaChange.set_option("record-level.expire-time", expire),
            ],
        )
    assert all(n in str(info.value) for n in needles), str(info.value)
    t = catalog.get_table("db.t")
    assert t.schema.id == schema_id and t.options.get("record-level.time-field") == "ts"
    assert read_rows(t) == model


# -- expiry of merged rows -----------------------------------------------------------------------
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_late_expired_update_expires_the_key_instead_of_reviving_the_old_value(catalog, engine):
    """deduplicate/partial-update: key 1's late, expired v2 supersedes v1, then the key expires (no
    row). aggregation: the aggregated row goes whole by its time (last non-NULL: gone; ``max``: kept
    with both contributions). first-row: key 1's first row v1 stays; key 4's expired first row takes
    the key with it, the fresh row that first-row had ignored does not appear."""
    t, merged = late_update_table(catalog, engine)
    r = compact(t.store, hooks=t, full=True, now_ms=(NOW + DAY // 2) * 1000)
    expected = unexpired(merged, cutoff_s=LATE_CUTOFF_S)
    assert read_rows(catalog.get_table("db.t")) == expected
    assert r.rows_expired == len(merged) - len(expected)


@pytest.mark.parametrize("dv", [False, True], ids=["plain", "deletion_vectors"])
def test_an_expired_key_never_falls_back_to_an_older_level(catalog, dv):
    """A compaction that leaves the top level alone expires nothing (without deletion vectors), so
    key 1's expired update stays visible until a full compaction removes the key; with deletion
    vectors the old row is merged in and masked, so the key goes at once. Never v1 again."""
    t, merged = layered_table(catalog, deletion_vectors=dv)
    r = t.maintenance.compact()  # levels 0 -> 4; level 5 untouched
    assert levels(t) == [4, 5]
    assert read_rows(t) == (unexpired(merged) if dv else merged)
    assert r.rows_expired == (1 if dv else 0)
    t.maintenance.compact(full=True)
    assert read_rows(t) == unexpired(merged)
    row = {"id": 7, "ts": NOW, "v": 70}
    for _ in range(2):  # two level-0 runs: the next universal compaction moves them up again
        t.write_arrow(pa.Table.from_pylist([row], schema=t.schema.arrow_schema()))
    merged = apply_writes("deduplicate", merged, [row, row])
    t.maintenance.compact()
    assert 1 not in read_rows(t) and read_rows(t) == unexpired(merged)


@pytest.mark.parametrize("producer", ["full-compaction", "lookup"])
def test_expiry_writes_no_changelog_the_changelog_shows_the_merge(catalog, producer):
    """The compaction's changelog shows the merge (key 1: v1 -> the late v2; key 4: its first row
    -> the fresh one); the keys then leave the table silently, as Java emits nothing for expiry."""
    t, merged = late_update_table(catalog, "deduplicate", extra_options={"changelog-producer": producer})
    before = read_rows(t)  # the first compaction's result (level 0 is merged in by reads)
    stored = {1: {"ts": NOW, "v": 1}, 2: {"ts": NOW, "v": 1}, 4: {"ts": NOW - 20 * 3600, "v": 4}}
    start = t.latest_snapshot().id
    compact(t.store, hooks=t, full=True, now_ms=(NOW + DAY // 2) * 1000)
    t = catalog.get_table("db.t")
    assert before == merged and read_rows(t) == unexpired(merged, cutoff_s=LATE_CUTOFF_S)
    changes = t.to_arrow(incremental_between=(start, t.latest_snapshot().id), scan_mode="changelog").to_pylist()
    got = {(r.pop("id"), r.pop("_ROW_KIND")): r for r in changes}
    assert len(got) == len(changes)
    assert got == {**{(k, "-U"): stored[k] for k in (1, 4)}, **{(k, "+U"): merged[k] for k in (1, 4)}}
