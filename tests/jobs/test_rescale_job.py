"""The Spark rescale job: one task per partition runs lake_core, the driver commits once."""

from __future__ import annotations

import pytest
from maintenance.rescale_helpers import PARTS, assert_rows_in_their_buckets, bucket_counts, filled_table, rows

from lake_core import LakeError

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _filled(warehouse, storage_options=None):
    return filled_table(warehouse, storage_options, seed=7, commits=4, n=150)


@pytest.mark.parametrize("where", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_rescales_exactly_the_selected_partitions_in_one_commit(spark, where, request):
    from jobs.rescale import rescale_partitions

    if where == "s3":
        wh = request.getfixturevalue("s3_warehouse")
        warehouse, opts = wh.uri, wh.storage_options
    else:
        warehouse, opts = request.getfixturevalue("warehouse"), None
    catalog, table, model = _filled(warehouse, opts)
    before = table.latest_snapshot().id
    result = rescale_partitions(
        spark,
        warehouse,
        "db.t",
        bucket=5,
        storage_options=opts,
        commit_user="test-rescale",
        partitions=[{"dt": PARTS[0]}, {"dt": PARTS[2]}],
    )
    table = catalog.get_table("db.t")
    # One OVERWRITE snapshot for both partitions (plus the option's schema change, not a snapshot).
    assert table.latest_snapshot().id == before + 1 == result.snapshot_id
    assert table.latest_snapshot().commit_kind.value == "OVERWRITE"
    assert bucket_counts(table) == {PARTS[0]: {5}, PARTS[1]: {2}, PARTS[2]: {5}}
    assert table.options.bucket == 5 and result.previous_bucket == 2
    assert rows(table.to_arrow()) == model.expected()
    assert_rows_in_their_buckets(table)
    assert [p.partition for p in result.partitions] == [f"dt={PARTS[0]}", f"dt={PARTS[2]}"]
    assert result.partitions_rescaled == 2 and result.rows == sum(1 for k in model.rows if k[0] != PARTS[1])
    assert all(p.snapshot_read == before and p.snapshot_committed == result.snapshot_id for p in result.partitions)

    # A re-run (a retried backfill) finds both at 5 and commits nothing.
    again = rescale_partitions(
        spark,
        warehouse,
        "db.t",
        bucket=5,
        storage_options=opts,
        commit_user="test-rescale",
        partitions=[{"dt": PARTS[0]}, {"dt": PARTS[2]}, {"dt": "1999-01-01"}],
    )
    assert again.partitions_rescaled == 0 and again.snapshot_id is None
    assert [p.skipped for p in again.partitions] == [
        "already at 5 buckets",
        "already at 5 buckets",
        "the partition has no data",
    ]
    assert catalog.get_table("db.t").latest_snapshot().id == result.snapshot_id

    # The independent before/after verification agrees.
    check = catalog.get_table("db.t").maintenance.verify_rescale(
        partitions={p.partition: p.snapshot_read for p in result.partitions}, snapshot_id=result.snapshot_id, bucket=5
    )
    assert check.passed, check.problems


def _data_files(root) -> list[str]:
    return sorted(p.name for p in root.rglob("*.parquet"))


def test_a_failing_task_commits_nothing_and_leaves_no_files(spark, warehouse, warehouse_path):
    from jobs.rescale import rescale_partitions

    catalog, table, model = _filled(warehouse)
    before = table.latest_snapshot().id
    files_before = _data_files(warehouse_path)
    # A partition whose files vanished: its task fails, the other task's new files are removed.
    victim = next(
        e
        for e in table.manifest_store.live_entries(table.latest_snapshot())
        if table.manifest_store.partition_values(e.partition)[0] == PARTS[1]
    )
    path = next(warehouse_path.rglob(victim.file.file_name))
    data = path.read_bytes()
    path.unlink()
    with pytest.raises(LakeError, match=victim.file.file_name):
        rescale_partitions(
            spark, warehouse, "db.t", bucket=3, commit_user="t", partitions=[{"dt": PARTS[0]}, {"dt": PARTS[1]}]
        )
    path.write_bytes(data)
    table = catalog.get_table("db.t")
    assert table.latest_snapshot().id == before
    assert _data_files(warehouse_path) == files_before
    assert rows(table.to_arrow()) == model.expected()
