"""Compaction and rescale as one DistributedJob (units, run_unit, commit, abort): the same local
runner (``lake_core.run_locally``) and the same Spark runner (``jobs.tasks.run_job``) execute both,
give what the operations gave before, and leave nothing behind when a unit fails."""

from __future__ import annotations

import pickle

import pytest

import lake_core
from jobs.tasks import run_job
from lake_core import CompactionJob, DistributedJob, LakeError, RescaleJob, run_locally
from maintenance.rescale_helpers import (
    PARTS,
    a_data_file_vanishes,
    bucket_counts,
    data_file_names,
    filled_table,
    rows,
)

KINDS = ["compaction", "rescale"]
SAME_COMPACTION = (
    "units_planned",
    "units_run",
    "files_read",
    "files_written",
    "rows_in",
    "rows_out",
    "rows_dropped_deletes",
    "levels_before",
    "levels_after",
)


def _filled(warehouse):
    """A write-only table (every commit adds level-0 files), 3 partitions x 2 buckets, and its model."""
    return filled_table(warehouse, seed=11, commits=4, options={"write-only": "true"})


def _job(table, kind: str) -> DistributedJob:
    if kind == "compaction":
        return table.maintenance.compaction_job(full=True)
    return table.maintenance.rescale_job(bucket=3)


def _rescaled(result) -> list[tuple]:
    """What each partition's rescale did, without the snapshots it committed in."""
    return [(p.partition, p.old_buckets, p.new_buckets, p.rows, p.files_in, p.checksum) for p in result.partitions]


@pytest.mark.parametrize("kind", KINDS)
def test_a_local_run_of_the_job_gives_what_the_operation_gives(warehouse, tmp_path, kind):
    _, old, model = _filled(warehouse)
    catalog, new, _ = _filled((tmp_path / "other").as_uri())
    job = pickle.loads(pickle.dumps(_job(new, kind)))  # as a driver ships it to its workers
    assert isinstance(job, CompactionJob if kind == "compaction" else RescaleJob)
    before = new.latest_snapshot().id
    result = run_locally(job, parallelism=2)
    new = catalog.get_table("db.t")
    assert rows(new.to_arrow()) == rows(old.to_arrow()) == model.expected()
    assert new.latest_snapshot().id == before + 1 == result.snapshot_id  # one commit
    if kind == "compaction":
        expected = old.maintenance.compact(full=True)
        assert new.latest_snapshot().commit_kind.value == "COMPACT"
        assert {k: getattr(result, k) for k in SAME_COMPACTION} == {k: getattr(expected, k) for k in SAME_COMPACTION}
        assert result.units_run == len(job.units) == 6
    else:
        expected = old.maintenance.rescale(bucket=3)  # one commit per partition
        assert new.latest_snapshot().commit_kind.value == "OVERWRITE"
        assert _rescaled(result) == _rescaled(expected) and len(result.partitions) == 3
        assert (result.bucket, result.previous_bucket, result.rows) == (3, 2, expected.rows)
        assert bucket_counts(new) == bucket_counts(catalog.get_table("db.t")) == {p: {3} for p in PARTS}


def _run(runner: str, job, request):
    if runner == "local":
        return run_locally(job, parallelism=2)
    return run_job(request.getfixturevalue("spark"), job, error=LakeError)


@pytest.mark.parametrize("runner", ["local", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.slow])])
@pytest.mark.parametrize("kind", KINDS)
def test_a_failing_unit_aborts_the_job(warehouse, warehouse_path, request, kind, runner):
    catalog, table, model = _filled(warehouse)
    before = table.latest_snapshot().id
    job = _job(table, kind)
    files_before = data_file_names(warehouse_path)
    # A file of the last partition vanishes: its unit fails, the other units' new files are deleted.
    with a_data_file_vanishes(table, warehouse_path) as victim, pytest.raises(Exception, match=victim):
        _run(runner, job, request)
    table = catalog.get_table("db.t")
    assert table.latest_snapshot().id == before  # nothing committed
    assert data_file_names(warehouse_path) == files_before  # no new file left behind
    assert rows(table.to_arrow()) == model.expected()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_the_spark_runner_gives_what_the_local_runner_gives(spark, warehouse, tmp_path, kind):
    _, local, model = _filled(warehouse)
    catalog, remote, _ = _filled((tmp_path / "other").as_uri())
    expected = run_locally(_job(local, kind), parallelism=2)
    result = run_job(spark, _job(remote, kind), error=LakeError)
    assert rows(catalog.get_table("db.t").to_arrow()) == rows(local.to_arrow()) == model.expected()
    assert result.snapshot_id == expected.snapshot_id
    if kind == "compaction":
        assert {k: getattr(result, k) for k in SAME_COMPACTION} == {k: getattr(expected, k) for k in SAME_COMPACTION}
    else:
        assert _rescaled(result) == _rescaled(expected)


def test_the_old_name_of_the_bucket_compaction_unit_still_works_with_a_warning():
    with pytest.warns(DeprecationWarning, match="BucketCompactionUnit"):
        assert lake_core.CompactionUnit is lake_core.BucketCompactionUnit
    assert "CompactionUnit" not in lake_core.__all__
