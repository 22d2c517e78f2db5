"""Dedicated compaction on Spark (``jobs.compact``): one Spark task per unit, one commit on the driver.

Oracles: a plain dict model of the rows, and the same table compacted in-process by
``table.maintenance.compact`` (same rows, same sorted runs per bucket, same counters)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from jobs.compact import compact_on_spark, run_units
from jobs.tasks import run_job
from lake_core import Catalog, LakeError

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
REPO = Path(__file__).resolve().parents[2]


def _create(catalog: Catalog, name: str):
    if "db" not in catalog.list_databases():
        catalog.create_database("db")
    # write-only: writers never compact, so every commit leaves one more level-0 file per bucket
    return catalog.create_table(
        name,
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op", "write-only": "true"},
    )


def _fill(table, model: dict | None = None, commits: int = 7) -> dict:
    """Upserts and deletes over two partitions; returns the dict model {(dt, id): v} of what is live."""
    model = {} if model is None else model
    for c in range(commits):
        rows = []
        for dt in ("2024-01-01", "2024-01-02"):
            for i in range(c * 5, c * 5 + 30):  # overlapping key ranges: later commits update earlier keys
                deleted = c >= 2 and i % 7 == c
                rows.append((dt, i, c * 1000 + i, "-D" if deleted else "+I"))
                if deleted:
                    model.pop((dt, i), None)
                else:
                    model[(dt, i)] = c * 1000 + i
        dts, ids, vs, ops = zip(*rows)
        table.write_arrow(pa.table({"dt": dts, "id": ids, "v": vs, "op": ops}, schema=SCHEMA))
    return model


def _rows(table) -> dict:
    return {(r["dt"], r["id"]): r["v"] for r in table.to_arrow().to_pylist()}


def _sorted_runs(table) -> dict:
    """(partition, bucket) → sorted runs: each level-0 file is a run, each higher level one run."""
    files: dict = {}
    for e in table.manifest_store.live_entries(table.latest_snapshot()):
        files.setdefault((e.partition, e.bucket), []).append(e.file.level)
    return {k: Counter(levels)[0] + len({lv for lv in levels if lv > 0}) for k, levels in sorted(files.items())}


_COUNTERS = (
    "units_planned",
    "units_run",
    "units_skipped",
    "files_read",
    "files_written",
    "files_upgraded",
    "rows_in",
    "rows_out",
    "rows_dropped_deletes",
    "levels_before",
    "levels_after",
)


def _same_work(a, b) -> None:
    assert {k: getattr(a, k) for k in _COUNTERS} == {k: getattr(b, k) for k in _COUNTERS}


@pytest.mark.parametrize("full", [True, False], ids=["full", "universal"])
def test_spark_compaction_gives_what_in_process_compaction_gives(spark, warehouse, full):
    catalog = Catalog(warehouse)
    local, remote = _create(catalog, "db.local"), _create(catalog, "db.spark")
    model = _fill(local)
    assert _fill(remote) == model
    assert set(_sorted_runs(remote).values()) == {7}  # 7 commits → 7 level-0 files in each of 4 buckets

    expected = local.maintenance.compact(full=full)
    # verify travels in the units to the Spark tasks, which compute the figures there
    result = compact_on_spark(spark, warehouse, "db.spark", full=full, verify=True)

    remote = catalog.get_table("db.spark")
    assert _rows(remote) == model == _rows(catalog.get_table("db.local"))
    assert _sorted_runs(remote) == _sorted_runs(catalog.get_table("db.local"))
    _same_work(result, expected)
    assert result.units_run == 4 and result.snapshot_id == remote.latest_snapshot().id == 8
    assert remote.latest_snapshot().commit_kind.name == "COMPACT"
    check = result.check()
    assert check.passed and check.buckets_verified == 4 and check.rows_after == len(model)
    assert not expected.verify and expected.figures == ()  # the default: no figures computed
    if full:
        assert set(_sorted_runs(remote).values()) == {1}
        assert result.rows_dropped_deletes > 0  # retractions reaching the top level are dropped


@pytest.mark.s3
def test_spark_compaction_on_s3(spark, s3_warehouse):
    catalog = Catalog(s3_warehouse.uri, storage_options=s3_warehouse.storage_options)
    table = _create(catalog, "db.t")
    model = _fill(table, commits=5)
    result = compact_on_spark(
        spark,
        s3_warehouse.uri,
        "db.t",
        full=True,
        partitions={"dt": "2024-01-02"},
        storage_options=s3_warehouse.storage_options,
    )
    table = catalog.get_table("db.t")
    assert _rows(table) == model
    runs = {pv: n for (p, _b), n in _sorted_runs(table).items() for pv in [table.manifest_store.partition_values(p)[0]]}
    assert runs == {"2024-01-01": 5, "2024-01-02": 1}  # only the selected partition was compacted
    assert (result.units_run, result.units_skipped, result.rows_in) == (
        2,
        0,
        5 * 30,
    )  # 5 commits of 30 rows in that partition


def test_dry_run_and_nothing_to_do_commit_nothing(spark, warehouse):
    catalog = Catalog(warehouse)
    table = _create(catalog, "db.t")
    _fill(table, commits=3)
    dry = compact_on_spark(spark, warehouse, "db.t", full=True, dry_run=True)
    assert (dry.snapshot_id, dry.units_planned, dry.files_read) == (None, 4, 12)
    assert len(catalog.get_table("db.t").snapshots()) == 3
    # 3 runs per bucket is below the universal trigger (5): nothing to do, nothing committed
    idle = compact_on_spark(spark, warehouse, "db.t")
    assert (idle.snapshot_id, idle.units_planned) == (None, 0)
    # the same table under a lower trigger given to this job only (the table's options do not change)
    low = compact_on_spark(spark, warehouse, "db.t", options={"num-sorted-run.compaction-trigger": "2"})
    assert low.units_run == 4 and low.options == {"num-sorted-run.compaction-trigger": "2"}
    assert "num-sorted-run.compaction-trigger" not in catalog.get_table("db.t").schema.options


def _data_files(root: Path) -> set[str]:
    return {p.name for p in root.rglob("data-*")}


def test_a_unit_compacted_concurrently_is_skipped_not_committed(spark, warehouse, warehouse_path):
    catalog = Catalog(warehouse)
    table = _create(catalog, "db.t")
    model = _fill(table)
    plan = table.maintenance.plan_compaction(full=True)
    outcomes = run_units(spark, table, plan.units)  # every unit executed in its Spark task
    day1 = [i for i, u in enumerate(plan.units) if u.partition_values == ("2024-01-01",)]
    stale_files = {f.file_name for i in day1 for f in outcomes[i].message.compact_after}
    assert len(day1) == 2 and stale_files <= _data_files(warehouse_path)

    # Another process compacts 2024-01-01 before the driver commits.
    subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        from lake_core import Catalog
        r = Catalog({warehouse!r}).get_table("db.t").maintenance.compact(full=True, partitions={{"dt": "2024-01-01"}})
        assert r.units_run == 2, r
    """),
        ],
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )

    result = table.maintenance.commit_compaction(plan=plan, outcomes=outcomes)
    assert (result.units_run, result.units_skipped) == (2, 2)
    assert all("stale" in reason and "2024-01-01" in reason for reason in result.skipped)
    table = catalog.get_table("db.t")
    assert _rows(table) == model
    assert set(_sorted_runs(table).values()) == {1}
    assert not stale_files & _data_files(warehouse_path)  # the skipped units' files were deleted
    live = {e.file.file_name for e in table.manifest_store.live_entries(table.latest_snapshot())}
    assert live <= _data_files(warehouse_path)
    assert [s.commit_kind.name for s in table.snapshots()[-2:]] == ["COMPACT", "COMPACT"]


def test_a_failing_task_commits_nothing_and_leaves_no_files(spark, warehouse, warehouse_path):
    catalog = Catalog(warehouse)
    table = _create(catalog, "db.t")
    _fill(table, commits=3)
    plan = table.maintenance.plan_compaction(full=True)
    before = _data_files(warehouse_path)
    # a real failure in one task: one input file of the last unit disappears after planning
    victim = plan.units[-1].files[0].file_name
    next(warehouse_path.rglob(victim)).unlink()
    with pytest.raises(Exception, match=victim):
        run_units(spark, table, plan.units)
    assert _data_files(warehouse_path) == before - {victim}  # the other units' new files are gone
    assert len(catalog.get_table("db.t").snapshots()) == 3  # nothing committed


def test_command_line(spark, warehouse, capsys):
    import json

    from jobs.compact import main

    catalog = Catalog(warehouse)
    model = _fill(_create(catalog, "db.t"), commits=3)
    assert main(["--warehouse", warehouse, "--table", "db.t", "--full", "--partition", "dt=2024-01-01"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["units_run"], printed["snapshot_id"], printed["full"]) == (2, 4, True)
    assert _rows(catalog.get_table("db.t")) == model and "check" not in printed
    # --verify: the tasks compute the figures, the check is printed (and decides the exit code)
    assert (
        main(["--warehouse", warehouse, "--table", "db.t", "--full", "--partition", "dt=2024-01-02", "--verify"]) == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed["verify"] is True and printed["check"]["passed"] is True and printed["check"]["problems"] == []
    assert printed["check"]["buckets_verified"] == 2
    # a bad partition is one line naming the table and the column, and changes nothing
    assert main(["--warehouse", warehouse, "--table", "db.t", "--partition", "day=1"]) == 2
    assert "db.t" in capsys.readouterr().out and len(catalog.get_table("db.t").snapshots()) == 5


@pytest.mark.s3
def test_command_line_takes_credentials_from_named_variables_or_options(spark, s3_warehouse, capsys):
    """Credentials are resolved in the driver from what the command line names, and travel with
    the tasks: the executors' environment holds none (this process's AWS_* variables are unset)."""
    import json

    from jobs.compact import main

    catalog = Catalog(s3_warehouse.uri, storage_options=s3_warehouse.storage_options)
    model = _fill(_create(catalog, "db.t"), commits=3)
    env = {"MY_S3": s3_warehouse.endpoint_url, "MY_KEY": "testing", "MY_SECRET": "testing"}
    base = ["--warehouse", s3_warehouse.uri, "--table", "db.t"]

    # missing: fails at once, before Spark, naming the bucket, the endpoint and the variables looked at
    assert main([*base, "--s3-endpoint-env", "MY_S3", "--s3-key-env", "NO_KEY_HERE"], environ=env) == 2
    out = capsys.readouterr().out
    for words in (
        f"bucket '{s3_warehouse.bucket}'",
        s3_warehouse.endpoint_url,
        "$NO_KEY_HERE",
        "$AWS_SECRET_ACCESS_KEY",
    ):
        assert words in out, out
    assert "no access key and no secret key" in out  # $AWS_SECRET_ACCESS_KEY (the default name) is not set either
    # named variables
    flags = ["--s3-endpoint-env", "MY_S3", "--s3-key-env", "MY_KEY", "--s3-secret-env", "MY_SECRET"]
    assert main([*base, "--full", "--partition", "dt=2024-01-01", *flags], environ=env) == 0
    assert json.loads(capsys.readouterr().out)["units_run"] == 2
    # explicit options (dots nest), nothing from the environment
    options = [
        f"--storage-option=endpoint_url={s3_warehouse.endpoint_url}",
        "--storage-option=key=testing",
        "--storage-option=secret=testing",
        "--storage-option=client_kwargs.region_name=us-east-1",
    ]
    assert main([*base, "--full", *options], environ={}) == 0
    assert json.loads(capsys.readouterr().out)["units_run"] == 2  # the other partition
    assert _rows(catalog.get_table("db.t")) == model


def test_command_line_refuses_a_local_warehouse_with_a_cluster(warehouse, capsys):
    from jobs.compact import main

    for where in (["--master", "spark://127.0.0.1:9"], ["--remote", "sc://127.0.0.1:9"]):
        assert main(["--warehouse", warehouse, "--table", "db.t", *where], environ={}) == 2
        out = capsys.readouterr().out
        assert "on a local filesystem but Spark runs elsewhere" in out and "shared_filesystem" in out, out


def test_units_without_a_spark_session_fail_with_a_clear_error_and_write_nothing(tmp_path):
    """``run_job(None, job)`` is allowed for an empty plan only; with units it says what to pass."""
    catalog = Catalog(f"file://{tmp_path}/wh")
    catalog.create_database("db")
    table = catalog.create_table(
        "db.t", schema=pa.schema([("id", pa.int64())]), primary_keys=["id"], options={"bucket": "1"}
    )
    table.write_arrow(pa.table({"id": [1, 2]}))
    table.write_arrow(pa.table({"id": [2, 3]}))
    before = table.latest_snapshot().id
    job = table.maintenance.compaction_job(full=True)
    assert job.units
    with pytest.raises(LakeError, match=r"1 unit\(s\) to run in Spark tasks but no Spark session was given"):
        run_job(None, job, error=LakeError)
    assert catalog.get_table("db.t").latest_snapshot().id == before
