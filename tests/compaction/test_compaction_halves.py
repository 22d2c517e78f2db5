"""The three halves of a distributed compaction on ``table.maintenance`` (plan, one unit, commit
once), dynamic planning options, and ``verify_compaction``, on real local tables. The Spark job
built on them is tested in tests/jobs/test_compact_job.py."""

from __future__ import annotations

import pickle
import time

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import InvalidOptionError, LakeError

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("ts", pa.int64()), ("op", pa.string())]
)
NOW = int(time.time())


def _table(warehouse, name="db.t"):
    cat = Catalog(warehouse)
    if "db" not in cat.list_databases():
        cat.create_database("db")
    return cat.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op", "write-only": "true"},
    )


def _fill(t, commits=4, old_ids=()):
    for c in range(commits):
        ids = list(range(c * 4, c * 4 + 12))
        n = len(ids)
        t.write_arrow(
            pa.table(
                {
                    "dt": ["a"] * n,
                    "id": ids,
                    "v": [c] * n,
                    "ts": [NOW - 30 * 86400 if i in old_ids and c == 0 else NOW for i in ids],
                    "op": ["-D" if c and i % 5 == c else "+I" for i in ids],
                },
                schema=SCHEMA,
            )
        )


def _rows(t):
    return sorted((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())


def _data_files(path):
    return {p.name for p in path.rglob("data-*")}


def test_the_halves_give_what_compact_gives_and_travel_as_pickles(warehouse):
    a, b = _table(warehouse, "db.a"), _table(warehouse, "db.b")
    _fill(a)
    _fill(b)
    expected = a.maintenance.compact(full=True)
    plan = pickle.loads(pickle.dumps(b.maintenance.plan_compaction(full=True)))  # as shipped to a driver
    assert len(plan.units) == 2 and plan.snapshot_id == 4 and plan.full
    # each unit as a worker would run it: its own table object, the outcome pickled back
    outcomes = [
        pickle.loads(pickle.dumps(Catalog(warehouse).get_table("db.b").maintenance.compact_unit(unit=u)))
        for u in plan.units
    ]
    result = b.maintenance.commit_compaction(plan=plan, outcomes=outcomes)
    assert _rows(b) == _rows(a)
    same = (
        "units_run",
        "files_read",
        "files_written",
        "rows_in",
        "rows_out",
        "rows_dropped_deletes",
        "levels_before",
        "levels_after",
    )
    assert {k: getattr(result, k) for k in same} == {k: getattr(expected, k) for k in same}
    assert result.snapshot_id == 5 and result.duration_s > 0


def test_outcomes_that_do_not_match_the_plan_commit_nothing_and_leave_no_files(warehouse, warehouse_path):
    t = _table(warehouse)
    _fill(t)
    plan = t.maintenance.plan_compaction(full=True)
    before = _data_files(warehouse_path)
    one = t.maintenance.compact_unit(unit=plan.units[0])
    assert _data_files(warehouse_path) > before
    with pytest.raises(LakeError, match=r"db\.t: 1 outcome\(s\) for 2 planned unit\(s\)"):
        t.maintenance.commit_compaction(plan=plan, outcomes=[one])
    assert _data_files(warehouse_path) == before and len(t.snapshots()) == 4
    # abort: executed units' files go, nothing is committed
    outs = [t.maintenance.compact_unit(unit=u) for u in plan.units]
    t.maintenance.abort_compaction(outcomes=outs)
    assert _data_files(warehouse_path) == before


def test_dynamic_options_steer_one_job_only_and_are_checked(warehouse):
    t = _table(warehouse)
    _fill(t, commits=3, old_ids={0, 1, 2})
    assert t.maintenance.plan_compaction().units == ()  # 3 runs per bucket < the default trigger 5
    low = t.maintenance.plan_compaction(options={"num-sorted-run.compaction-trigger": "2"})
    assert len(low.units) == 2 and low.options == (("num-sorted-run.compaction-trigger", "2"),)
    ttl = {"record-level.time-field": "ts", "record-level.expire-time": "7 d"}
    with pytest.raises(InvalidOptionError, match="record-level.expire-time"):
        t.maintenance.plan_compaction(expire_records=True)  # the table itself has no TTL
    started = int(time.time())  # not NOW: the module may be imported minutes before this test runs
    result = t.maintenance.compact(expire_records=True, options=ttl)
    assert result.rows_expired == 3 and result.expiry_field == "ts"
    assert started - 7 * 86400 <= result.expiry_cutoff_s <= int(time.time()) - 7 * 86400 + 1
    assert {r[1] for r in _rows(t)}.isdisjoint({0, 1, 2})
    assert "record-level.time-field" not in Catalog(warehouse).get_table("db.t").schema.options
    snapshots = len(t.snapshots())
    with pytest.raises(InvalidOptionError, match=r"db\.t.*\['target-file-size'\].*allowed"):
        t.maintenance.compact(options={"target-file-size": "1 mb"})
    with pytest.raises(InvalidOptionError, match="'record-level.time-field' names column 'nope'"):
        t.maintenance.compact(options={**ttl, "record-level.time-field": "nope"})
    with pytest.raises(InvalidOptionError, match="'num-sorted-run.compaction-trigger'"):
        t.maintenance.compact(options={"num-sorted-run.compaction-trigger": "many"})
    assert len(t.snapshots()) == snapshots  # bad options leave the table exactly as it was


def test_verify_compares_only_the_buckets_that_changed(warehouse):
    t = _table(warehouse)
    _fill(t)
    r = t.maintenance.compact(full=True)
    ok = t.maintenance.verify_compaction(before_snapshot_id=r.snapshot_id - 1, after_snapshot_id=r.snapshot_id)
    assert ok.passed and ok.buckets_verified == 2 and ok.rows_before == ok.rows_after == len(_rows(t))
    assert ok.key_checksum_expected == ok.key_checksum_after
    # one row of one bucket changes in a later commit: one bucket compared, one changed row found
    t.write_arrow(pa.table({"dt": ["a"], "id": [14], "v": [-1], "ts": [NOW], "op": ["+I"]}, schema=SCHEMA))
    bad = t.maintenance.verify_compaction(before_snapshot_id=r.snapshot_id, after_snapshot_id=r.snapshot_id + 1)
    assert not bad.passed and bad.buckets_verified == 1 and bad.changed_rows == 1
    assert bad.problems == ("1 row(s) changed their values",)
