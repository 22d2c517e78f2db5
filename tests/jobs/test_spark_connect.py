"""The jobs on the DataFrame API only: compaction and rescale run unchanged on a classic session and
over Spark Connect (no SparkContext, no RDDs) and give what an in-process run gives; units are
packed into at most the parallelism tasks, balanced by bytes; a failing unit or a task importing
another lake_core commits nothing and leaves no file; ``spark.read.format("paimon")`` works over
Connect."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pytest
from maintenance.rescale_helpers import (
    PARTS,
    a_data_file_vanishes,
    data_file_names,
    filled_table,
    rows,
)

import lake_core
from jobs.compact import compact_on_spark
from jobs.datasource import read_table
from jobs.rescale import rescale_partitions
from jobs.tasks import ExecutorVersionError, cluster_parallelism, map_units, pack, run_job
from lake_core import LakeError

SESSIONS = [
    pytest.param("classic", marks=[pytest.mark.spark, pytest.mark.slow]),
    pytest.param("connect", marks=[pytest.mark.spark, pytest.mark.spark_connect, pytest.mark.slow]),
]


@pytest.fixture
def session(request):
    """The classic local session or a Spark Connect one."""
    return request.getfixturevalue("spark" if request.param == "classic" else "spark_connect")


def _filled(warehouse):
    """A write-only table (every commit adds level-0 files), 3 partitions x 2 buckets, and its model."""
    return filled_table(warehouse, seed=7, commits=4, options={"write-only": "true"})


def _sorted(table) -> pa.Table:
    data = table.to_arrow()
    return data.sort_by([(name, "ascending") for name in data.column_names])


def test_pack_puts_the_largest_first_into_the_least_loaded_batch():
    assert pack([5, 1, 1, 1, 1, 1], 2) == [[0], [1, 2, 3, 4, 5]]
    assert pack([3, 3, 2, 2, 2], 2) == [[0, 2, 4], [1, 3]]  # 7 and 5: the greedy bound, not the optimum
    assert pack([1] * 10, 3) == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert pack([4, 4], 8) == [[0], [1]]  # never an empty task
    assert pack([], 3) == []


@pytest.mark.parametrize("session", SESSIONS, indirect=True)
def test_compaction_gives_what_in_process_compaction_gives(session, warehouse, tmp_path):
    _, local, model = _filled(warehouse)
    other = (tmp_path / "other").as_uri()
    catalog, _, _ = _filled(other)
    expected = local.maintenance.compact(full=True)
    result = compact_on_spark(session, other, "db.t", full=True)
    remote = catalog.get_table("db.t")
    assert _sorted(remote).equals(_sorted(local))
    assert rows(remote.to_arrow()) == model.expected()
    assert (result.units_run, result.rows_in, result.rows_out, result.files_written) == (
        expected.units_run,
        expected.rows_in,
        expected.rows_out,
        expected.files_written,
    )
    assert remote.latest_snapshot().commit_kind.value == "COMPACT"


@pytest.mark.parametrize("session", SESSIONS, indirect=True)
def test_rescale_gives_what_in_process_rescale_gives(session, warehouse, tmp_path):
    local_catalog, local, model = _filled(warehouse)
    other = (tmp_path / "other").as_uri()
    catalog, _, _ = _filled(other)
    local.maintenance.rescale(bucket=3)
    specs = [{"dt": p} for p in PARTS]
    result = rescale_partitions(session, other, "db.t", bucket=3, partitions=specs, commit_user="t")
    remote = catalog.get_table("db.t")
    assert _sorted(remote).equals(_sorted(local_catalog.get_table("db.t")))
    assert rows(remote.to_arrow()) == model.expected()
    assert (result.bucket, len(result.partitions)) == (3, 3)
    assert remote.latest_snapshot().commit_kind.value == "OVERWRITE"


@pytest.mark.spark
@pytest.mark.spark_connect
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["compaction", "rescale"])
def test_a_failing_unit_over_connect_commits_nothing_and_leaves_no_files(
    spark_connect, warehouse, warehouse_path, kind
):
    catalog, table, model = _filled(warehouse)
    before = table.latest_snapshot().id
    job = (
        table.maintenance.compaction_job(full=True) if kind == "compaction" else table.maintenance.rescale_job(bucket=3)
    )
    files_before = data_file_names(warehouse_path)
    # A file of the last partition vanishes: its unit fails, the other units' new files are deleted.
    with a_data_file_vanishes(table, warehouse_path) as victim, pytest.raises(Exception, match=victim):
        run_job(spark_connect, job, error=LakeError)
    table = catalog.get_table("db.t")
    assert table.latest_snapshot().id == before  # nothing committed
    assert data_file_names(warehouse_path) == files_before  # no new file left behind
    assert rows(table.to_arrow()) == model.expected()


@pytest.mark.spark
@pytest.mark.spark_connect
@pytest.mark.slow
def test_a_task_importing_another_lake_core_stops_the_job_naming_both_versions(
    spark_connect, warehouse, warehouse_path
):
    catalog, table, model = _filled(warehouse)
    before, files_before = table.latest_snapshot().id, data_file_names(warehouse_path)
    job = table.maintenance.compaction_job(full=True)
    # the driver claims another version: every task sees its own lake_core differ and runs nothing
    with pytest.raises(ExecutorVersionError) as failure:
        run_job(spark_connect, job, error=LakeError, lake_core_version="0.0.0-driver")
    assert "0.0.0-driver" in str(failure.value) and lake_core.build_id() in str(failure.value)
    assert catalog.get_table("db.t").latest_snapshot().id == before
    assert data_file_names(warehouse_path) == files_before


@pytest.mark.parametrize("session", SESSIONS, indirect=True)
def test_units_are_packed_into_at_most_max_tasks_balanced_by_bytes(session):
    sizes = [90, 10, 80, 20, 70, 30, 60, 40, 50, 50]
    units = [SimpleNamespace(bytes=b, n=i) for i, b in enumerate(sizes)]
    results = map_units(session, units, lambda u: (u.n, u.bytes), max_tasks=3)
    assert [r.value for r in results] == [(i, b) for i, b in enumerate(sizes)]  # in the units' order
    assert {r.task for r in results} == {0, 1, 2}
    assert len({r.partition for r in results}) == 3  # each batch alone in its Spark task
    assert all(r.partition == r.task for r in results)
    loads = sorted(sum(r.value[1] for r in results if r.task == t) for t in range(3))
    assert loads == [160, 170, 170]  # 500 bytes in three balanced tasks
    # by default: at most the cluster's parallelism (local[2] for both sessions)
    assert cluster_parallelism(session) == 2
    assert {r.task for r in map_units(session, units, lambda u: u.n)} == {0, 1}


@pytest.mark.spark
@pytest.mark.spark_connect
@pytest.mark.slow
def test_the_paimon_data_source_over_connect_reads_what_lake_core_reads(spark_connect, warehouse):
    _, table, _ = _filled(warehouse)
    got = read_table(spark_connect, warehouse, "db.t").toArrow()
    want = table.to_arrow()
    assert got.num_rows == want.num_rows > 0
    assert rows(got) == rows(want)
    direct = (
        spark_connect.read.format("paimon")
        .option("warehouse", warehouse)
        .option("table", "db.t")
        .option("snapshot-id", "2")
        .load()
        .toArrow()
    )
    assert rows(direct) == rows(table.to_arrow(snapshot_id=2)) != rows(want)
