"""Dedicated compaction (``table.maintenance.compact``) and inline compaction in writers, on real
tables: same rows before and after, the levels Paimon's rules give, honest counters."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.compaction import CompactionResult, plan_compaction, run_unit
from lake_core.compaction.job import commit_units
from lake_core.errors import InvalidOptionError, LakeError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


def _table(warehouse, name="db.t", **options):
    cat = Catalog(warehouse)
    if "db" not in cat.list_databases():
        cat.create_database("db")
    opts = {"bucket": "2", "rowkind.field": "op", "write-only": "true"}
    opts.update(options)
    return cat.create_table(name, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=opts)


def _write(t, dt, ids, v, deletes=()):
    t.write_arrow(
        pa.table(
            {
                "dt": [dt] * len(ids),
                "id": ids,
                "v": [v] * len(ids),
                "op": ["-D" if i in deletes else "+I" for i in ids],
            },
            schema=SCHEMA,
        )
    )


def _live(t):
    return [e for e in t.manifest_store.live_entries(t.latest_snapshot())]


def _data_files(warehouse_path):
    return sorted(p.name for p in warehouse_path.rglob("data-*"))


def test_full_compaction_result_and_levels(warehouse):
    t = _table(warehouse)
    for i in range(6):
        _write(t, "a", list(range(i * 10, i * 10 + 20)), i, deletes={i * 10} if i else ())
    _write(t, "b", [1, 2, 3], 9)
    before = t.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")])
    l0_files = len(_live(t))
    input_rows = sum(e.file.row_count for e in _live(t))
    dry = t.maintenance.compact(full=True, dry_run=True)
    r = t.maintenance.compact(full=True)
    assert isinstance(r, CompactionResult) and not r.dry_run
    # the dry run counted what the run read apart from what it only moved up a level
    figures = ("files_read", "bytes_read", "files_upgraded", "rows_in", "units_planned")
    assert [getattr(dry, f) for f in figures] == [getattr(r, f) for f in figures]
    assert t.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")]).equals(before)
    assert t.latest_snapshot().commit_kind.value == "COMPACT" and r.snapshot_id == t.latest_snapshot().id
    live = _live(t)
    assert {e.file.level for e in live} == {5}
    assert r.levels_before == {"L0": l0_files} and r.levels_after == {"L5": len(live)}
    assert r.units_planned == r.units_run == len({(e.partition, e.bucket) for e in live}) and r.units_skipped == 0
    # partition b's buckets hold one small file each: moved to the top level without rewriting
    assert r.files_upgraded == 2
    assert r.rows_in == input_rows - 3 and r.rows_out == before.num_rows - 3
    assert r.rows_dropped_deletes == 5  # ids 10, 20, 30, 40, 50 were deleted after being written
    assert r.files_read == l0_files - 2 and r.files_written == len(live) - 2
    upgraded = [e.file for e in live if e.file.file_source != 1]
    assert len(upgraded) == 2
    assert r.bytes_written == sum(e.file.file_size for e in live) - sum(f.file_size for f in upgraded)
    md = r.as_metadata()
    assert md["rows_in"] == r.rows_in and md["levels_after.L5"] == len(live)
    again = t.maintenance.compact(full=True)  # nothing left to do
    assert again.units_planned == 0 and again.snapshot_id is None


def test_universal_compaction_follows_the_picker(warehouse):
    t = _table(warehouse, bucket="1")
    for i in range(4):
        _write(t, "a", [i], i)
    r = t.maintenance.compact()  # 4 runs < trigger 5: nothing to do
    assert r.units_planned == 0 and r.snapshot_id is None
    _write(t, "a", [9], 9)
    r = t.maintenance.compact()  # 5 equal-size runs: size amplification, everything to the top
    assert r.units_run == 1 and r.levels_after == {"L5": 1}
    assert sorted(t.to_arrow()["id"].to_pylist()) == [0, 1, 2, 3, 9]


def test_dry_run_changes_nothing(warehouse, warehouse_path):
    t = _table(warehouse)
    for i in range(3):
        _write(t, "a", [i, i + 1], i)
    snap, files = t.latest_snapshot().id, _data_files(warehouse_path)
    r = t.maintenance.compact(full=True, dry_run=True)
    assert r.dry_run and r.units_planned >= 1 and r.files_read == len(files) and r.snapshot_id is None
    assert t.latest_snapshot().id == snap and _data_files(warehouse_path) == files


def test_partition_selection(warehouse):
    t = _table(warehouse)
    for i in range(2):
        _write(t, "a", [1, 2, 3], i)
        _write(t, "b", [1, 2, 3], i)
    r = t.maintenance.compact(full=True, partitions=[{"dt": "b"}])
    by_part = {}
    for e in _live(t):
        by_part.setdefault(t.manifest_store.partition_values(e.partition)[0], set()).add(e.file.level)
    assert by_part == {"a": {0}, "b": {5}} and r.units_run >= 1
    with pytest.raises(LakeError, match="'nope'"):
        t.maintenance.compact(partitions={"nope": "a"})


def test_errors_name_the_problem(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    append = cat.create_table("db.log", schema=pa.schema([("x", pa.int64())]))
    with pytest.raises(LakeError, match="db.log.*append table"):
        append.maintenance.compact()
    t = _table(warehouse, name="db.pk")
    with pytest.raises(InvalidOptionError, match="record-level.expire-time"):
        t.maintenance.compact(expire_records=True)
    for key, value in [
        ("num-sorted-run.compaction-trigger", "0"),
        ("compaction.size-ratio", "-1"),
        ("compaction.small-file-ratio", "-0.5"),
        ("num-levels", "1"),
        ("compaction.optimization-interval", "soon"),
    ]:
        with pytest.raises(InvalidOptionError, match=key):
            cat.create_table(f"db.bad{abs(hash(key))}", schema=SCHEMA, primary_keys=["dt", "id"], options={key: value})


def test_stale_unit_is_skipped_and_others_land(warehouse, warehouse_path):
    t = _table(warehouse)
    for i in range(3):
        _write(t, "a", list(range(20)), i)
    plan = plan_compaction(t.store, full=True)
    assert len(plan.units) == 2
    outcomes = [run_unit(t.store, u) for u in plan.units]
    # another job compacts bucket 0 first
    other = plan.units[0]
    t.new_batch_write_builder().new_commit().commit([run_unit(t.store, other).message])
    stale_outputs = {f.file_name for f in outcomes[0].message.compact_after}
    committed, skipped, snap = commit_units(t.store, plan, outcomes, hooks=t)
    assert committed == [1] and len(skipped) == 1 and "stale" in skipped[0] and snap == t.latest_snapshot().id
    assert not stale_outputs & set(_data_files(warehouse_path))  # the stale unit's files are gone
    assert sorted(t.to_arrow()["v"].to_pylist()) == [2] * 20
    assert {e.file.level for e in _live(t)} == {5}


# -- inline compaction in writers --------------------------------------------------------------------------
def test_inline_compaction_keeps_runs_bounded(warehouse):
    t = _table(warehouse, bucket="1", **{"write-only": "false"})
    kinds = []
    for i in range(12):
        snaps_before = t.latest_snapshot().id if t.latest_snapshot() else 0
        _write(t, "a", [i, i + 100], i)
        kinds.append([t.snapshot(s).commit_kind.value for s in range(snaps_before + 1, t.latest_snapshot().id + 1)])
        live = _live(t)
        runs = len([e for e in live if e.file.level == 0]) + len({e.file.level for e in live if e.file.level > 0})
        assert runs <= 5  # num-sorted-run.compaction-trigger
    assert ["APPEND", "COMPACT"] in kinds and ["APPEND"] in kinds
    assert sorted(t.to_arrow()["id"].to_pylist()) == sorted(list(range(12)) + [i + 100 for i in range(12)])


def test_write_only_never_compacts_and_full_delta_commits_always_does(warehouse):
    t = _table(warehouse, bucket="1")
    for i in range(8):
        _write(t, "a", [i], i)
    assert {e.file.level for e in _live(t)} == {0}
    assert all(s.commit_kind.value == "APPEND" for s in t.snapshots())
    f = _table(warehouse, name="db.f", bucket="1", **{"write-only": "false", "full-compaction.delta-commits": "1"})
    for i in range(3):
        _write(f, "a", [i], i)
        assert [e.file.level for e in _live(f)] == [5]


def test_first_row_is_visible_after_each_commit(warehouse):
    t = _table(warehouse, name="db.fr", bucket="1", **{"write-only": "false", "merge-engine": "first-row"})
    _write(t, "a", [1, 2], 1)
    _write(t, "a", [2, 3], 2)
    assert sorted(t.to_arrow().select(["id", "v"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": 1},
        {"id": 2, "v": 1},
        {"id": 3, "v": 2},
    ]
    assert all(e.file.level > 0 for e in _live(t))


def test_writer_facing_many_runs_compacts_before_committing(warehouse, monkeypatch):
    t = _table(warehouse, bucket="1", **{"write-only": "false"})
    # the writer's inline compaction off: runs pile up past 8
    monkeypatch.setattr(type(t), "compact_written_bucket", lambda *a, **k: None)
    for i in range(10):
        _write(t, "a", [i], i)
    assert len(_live(t)) == 10
    monkeypatch.undo()
    _write(t, "a", [99], 99)
    live = _live(t)
    runs = len([e for e in live if e.file.level == 0]) + len({e.file.level for e in live if e.file.level > 0})
    assert runs <= t.options.num_sorted_run_compaction_trigger
    assert sorted(t.to_arrow()["id"].to_pylist()) == list(range(10)) + [99]
