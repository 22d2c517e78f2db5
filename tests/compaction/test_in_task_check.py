"""The in-task check of a dedicated compaction (``result.check()``): the figures its units computed
while merging and writing match an oracle (the table read before and after, checksummed), a unit
whose written files lost a row is refused at commit naming its partition and bucket, and the check reads
no table file: it still passes once the snapshot before the compaction has been expired, which the
deep check (``verify_compaction``) cannot. The figures are opt-in (``verify=True``, carried by the
plan into each unit): without them no figure is computed and the check refuses to run."""

from __future__ import annotations

import dataclasses
import pickle
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_core import Catalog, CompactionCheck, assign_buckets, run_locally
from lake_core.compaction.job import compact
from lake_core.errors import CompactionVerificationError, LakeError, VerificationUnavailableError
from lake_core.format.checksum import table_checksum
from lake_core.manifest.metadata import FileSource
from lake_core.write import file_writer

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("ts", pa.int64()), ("op", pa.string())]
)
NOW_S = 1_700_000_000


def _table(warehouse, **options):
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    opts = {"bucket": "2", "rowkind.field": "op", "write-only": "true"}
    opts.update(options)
    return cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=opts)


def _write(t, dt, ids, v, *, deletes=(), ts=NOW_S):
    n = len(ids)
    t.write_arrow(
        pa.table(
            {
                "dt": [dt] * n,
                "id": ids,
                "v": [v] * n,
                "ts": [ts] * n,
                "op": ["-D" if i in deletes else "+I" for i in ids],
            },
            schema=SCHEMA,
        )
    )


def _filled(warehouse, **options):
    """Two partitions, several overlapping level-0 files per bucket, deletes among them."""
    t = _table(warehouse, **options)
    for i in range(4):
        for dt in ("a", "b"):
            _write(t, dt, list(range(i * 30, i * 30 + 60)), i, deletes={i * 30 + 1, i * 30 + 2} if i else ())
    return t


def _bucket_rows(t, rows: pa.Table, partition: str, bucket: int) -> pa.Table:
    keys = list(t.schema.bucket_keys())
    b = assign_buckets([rows[k] for k in keys], [t.schema.field(k).type for k in keys], 2, t.options.bucket_function)
    mask = pc.and_(pc.equal(rows["dt"], partition.split("=")[1]), pa.array(b == bucket))
    return rows.filter(mask)


def test_figures_match_the_table_read_before_and_after(warehouse):
    t = _filled(warehouse)
    before = t.to_arrow()
    r = t.maintenance.compact(full=True, verify=True)
    after = t.to_arrow()
    check = r.check()
    assert isinstance(check, CompactionCheck) and check.passed, check.problems
    # every bucket was rewritten whole (full, no file upgraded): the units' figures add up to the table's
    assert r.files_upgraded == 0 and check.buckets_verified == r.units_run == 4
    assert (check.rows_before, check.checksum_before) == (before.num_rows, table_checksum(before).digest)
    assert (check.rows_after, check.checksum_after) == (after.num_rows, table_checksum(after).digest)
    assert check.rows_dropped == 0 and check.checksum_expected == check.checksum_after
    # the merged inputs held deletes of keys written before; the top level drops them
    assert check.retractions_before == r.rows_dropped_deletes == 12 and check.retractions_after == 0
    # per bucket: the bucket's rows as a reader sees them, before and after
    assert sorted((b.partition, b.bucket) for b in check.buckets) == [
        ("dt=a", 0),
        ("dt=a", 1),
        ("dt=b", 0),
        ("dt=b", 1),
    ]
    for b in check.buckets:
        assert b.figures.read == table_checksum(_bucket_rows(t, before, b.partition, b.bucket))
        assert b.figures.written == table_checksum(_bucket_rows(t, after, b.partition, b.bucket))
    md = check.as_metadata()
    assert md["passed"] is True and md["rows_after"] == after.num_rows and "read back" in md["compared"]
    assert r.as_metadata()["figures.count"] == 4


def test_expired_records_are_counted_and_none_is_written(warehouse):
    t = _table(warehouse, **{"record-level.time-field": "ts", "record-level.expire-time": "1 d"})
    for i in range(3):
        _write(t, "a", list(range(i * 20, i * 20 + 40)), i, ts=NOW_S - 3 * 86400 if i == 1 else NOW_S)
    before = t.to_arrow()
    r = compact(t.store, hooks=t, expire_records=True, now_ms=NOW_S * 1000, verify=True)
    after = t.to_arrow()
    check = r.check(expired_must_be_gone=True)
    assert check.passed, check.problems
    expired = before.filter(pc.less(before["ts"], NOW_S - 86400))
    assert check.expired_dropped == r.rows_expired == expired.num_rows > 0
    assert check.rows_dropped == expired.num_rows and check.expired_surviving == 0
    assert (check.rows_before, check.checksum_before) == (before.num_rows, table_checksum(before).digest)
    assert (check.rows_after, check.checksum_after) == (after.num_rows, table_checksum(after).digest)
    assert (table_checksum(before) - table_checksum(expired)) == table_checksum(after)


def _files_on_disk(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("data-*")}


def test_a_unit_whose_file_lost_a_row_is_never_committed(warehouse, warehouse_path, monkeypatch):
    """A writer that loses the last row of a compaction's output (injected here, in the test): the
    task's read back sees it, and the verified compaction refuses to commit, naming the partition and
    bucket; the table is exactly as before (same snapshot, same rows, no file left behind)."""
    t = _filled(warehouse)
    before, snapshot, files = t.to_arrow(), t.latest_snapshot().id, _files_on_disk(warehouse_path)
    real = file_writer.RollingFileWriter.write
    hit = []

    def lossy(self, rows):
        if self.file_source == FileSource.COMPACT and not hit and rows.num_rows > 1:
            hit.append(True)
            rows = rows.slice(0, rows.num_rows - 1)
        return real(self, rows)

    monkeypatch.setattr(file_writer.RollingFileWriter, "write", lossy)
    with pytest.raises(CompactionVerificationError) as e:
        t.maintenance.compact(full=True, parallelism=1, verify=True)
    assert hit
    assert "compact of db.t: the in-task check failed, nothing was committed" in str(e.value)
    assert "partition 'dt=" in str(e.value) and " bucket " in str(e.value) and "but wrote" in str(e.value)
    assert t.latest_snapshot().id == snapshot and _files_on_disk(warehouse_path) == files
    assert (
        t.to_arrow()
        .sort_by([("dt", "ascending"), ("id", "ascending")])
        .equals(before.sort_by([("dt", "ascending"), ("id", "ascending")]))
    )


def test_a_tampered_outcome_is_refused_naming_its_bucket(warehouse):
    """An outcome that came back from a task with figures that disagree (as a worker whose files
    lost rows would report them) is refused at commit, naming its partition and bucket."""
    t = _filled(warehouse)
    snapshot = t.latest_snapshot().id
    job = t.maintenance.compaction_job(full=True, verify=True)
    outcomes = [job.run_unit(u) for u in job.units]
    f = outcomes[1].figures
    assert f is not None and f.written.rows > 1
    lost = table_checksum(t.to_arrow().slice(0, 1))
    outcomes[1] = dataclasses.replace(outcomes[1], figures=dataclasses.replace(f, written=f.written - lost))
    unit = job.units[1]
    with pytest.raises(
        CompactionVerificationError, match=f"partition 'dt={unit.partition_values[0]}' bucket {unit.bucket}:"
    ):
        job.commit(outcomes)
    assert t.latest_snapshot().id == snapshot


def test_the_check_reads_no_table_file(warehouse):
    """The snapshot before the compaction expired and its files deleted: the deep check can no longer
    compare, the in-task check still does (and never opens a data file)."""
    t = _filled(warehouse)
    r = run_locally(t.maintenance.compaction_job(full=True, verify=True))
    _write(t, "a", [1000], 1)  # a later snapshot, so expiry keeps only it
    t.maintenance.expire_snapshots(retain_min=1, retain_max=1, older_than=None)
    assert t.store.snapshot_manager.earliest_id() > r.snapshot_id - 1
    with pytest.raises(Exception):  # noqa: B017, PT011 - the old snapshot is gone: whatever the deep check raises
        t.maintenance.verify_compaction(before_snapshot_id=r.snapshot_id - 1, after_snapshot_id=r.snapshot_id)
    started = time.perf_counter()
    check = r.check()
    assert check.passed and check.after_snapshot_id == r.snapshot_id
    assert time.perf_counter() - started < 0.5


def test_without_verify_no_figure_is_computed_and_the_check_refuses(warehouse):
    """The default compaction pays nothing for the check: its units compute no figures, and a check
    of it raises (it must not pass with nothing compared) saying how to get one."""
    t = _filled(warehouse)
    job = t.maintenance.compaction_job(full=True)
    assert not job.plan.verify and not any(u.verify for u in job.units)
    outcomes = [job.run_unit(u) for u in job.units]
    assert all(o.figures is None for o in outcomes)
    r = job.commit(outcomes)
    assert r.units_run == 4 and not r.verify and r.figures == ()
    with pytest.raises(VerificationUnavailableError, match=r"db\.t ran without verify=True") as info:
        r.check()
    assert isinstance(info.value, LakeError)
    with pytest.raises(VerificationUnavailableError):
        t.maintenance.compact(full=True).check(expired_must_be_gone=True)


def test_verify_travels_in_the_plan_to_each_unit(warehouse):
    """A driver plans with verify=True and ships units (pickled, as to a Spark task): a worker's
    ``compact_unit`` computes the figures from the unit alone."""
    t = _filled(warehouse)
    plan = t.maintenance.plan_compaction(full=True, verify=True)
    assert plan.verify and all(u.verify for u in plan.units)
    outcomes = [t.maintenance.compact_unit(unit=pickle.loads(pickle.dumps(u))) for u in plan.units]
    assert all(o.figures is not None and o.figures.written.rows for o in outcomes)
    r = t.maintenance.commit_compaction(plan=plan, outcomes=outcomes)
    assert r.verify and r.check().passed and r.check().buckets_verified == 4


def test_verify_must_be_a_bool(warehouse):
    t = _filled(warehouse)
    with pytest.raises(LakeError, match="verify = 'yes'"):
        t.maintenance.compact(full=True, verify="yes")  # type: ignore[arg-type]
