"""Planning a dedicated compaction reads only what it needs: the manifests whose partition
statistics (or bucket range) admit a selected partition (or bucket), and the last snapshot's merged
entries when at hand."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import Catalog, assign_buckets, clear_manifest_cache
from lake_core.errors import MaintenanceArgumentError, PartitionNotFoundError
from lake_core.io.fileio import FileIO

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("v", pa.int64())])


def _create(warehouse: str, buckets: int):
    """A write-only table partitioned by p, whose manifests are never merged by a commit."""
    cat = Catalog(warehouse)
    cat.create_database("db")
    return cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": str(buckets), "write-only": "true", "manifest.merge-min-count": "1000"},
    )


def _table(warehouse: str):
    t = _create(warehouse, 2)
    for p in range(4):  # one commit, hence one manifest, per partition
        for _ in range(2):
            t.write_arrow(pa.table({"p": [p] * 4, "id": [1, 2, 3, 4], "v": [p] * 4}, schema=SCHEMA))
    clear_manifest_cache()
    return Catalog(warehouse).get_table("db.t")  # as a new process would: nothing cached


def _reads(monkeypatch) -> list[str]:
    """The names of the manifests (not lists) read from storage from now on."""
    read: list[str] = []
    original = FileIO.read_bytes

    def spy(self, path):
        name = path.rsplit("/", 1)[-1]
        if name.startswith("manifest-") and not name.startswith("manifest-list-"):
            read.append(name)
        return original(self, path)

    monkeypatch.setattr(FileIO, "read_bytes", spy)
    return read


def test_partition_selector_prunes_manifests(warehouse, monkeypatch):
    t = _table(warehouse)
    every = t.manifest_store.data_manifests(t.latest_snapshot())
    assert len(every) == 8
    read = _reads(monkeypatch)
    job = t.maintenance.compaction_job(full=True, partitions={"p": 2})
    assert {u.partition_values for u in job.plan.units} == {(2,)}
    assert {b.partition for b in job.plan.buckets} == {job.plan.units[0].partition}
    assert 0 < len(set(read)) == 2  # the two commits to p=2

    result = job.commit([job.run_unit(u) for u in job.units])
    assert result.units_run == len(job.plan.units)
    full = Catalog(warehouse).get_table("db.t")
    assert sorted(full.to_arrow().to_pylist(), key=lambda r: (r["p"], r["id"])) == [
        {"p": p, "id": i, "v": p} for p in range(4) for i in (1, 2, 3, 4)
    ]


def test_unmatched_selector_names_every_partition(warehouse):
    t = _table(warehouse)
    with pytest.raises(PartitionNotFoundError, match=r"p=0, p=1, p=2, p=3"):
        t.maintenance.compaction_job(full=True, partitions={"p": 9})


def test_plans_reuse_the_merged_snapshot(warehouse, monkeypatch):
    t = _table(warehouse)
    first = t.maintenance.compaction_job(full=True)
    read = _reads(monkeypatch)
    again = t.maintenance.compaction_job(full=True)
    assert read == []  # neither a manifest read nor a merge: the snapshot's live files are kept
    assert again.plan.units == first.plan.units


def test_commit_after_a_large_compaction_folds_its_deletes(warehouse, monkeypatch):
    from lake_core.manifest import merger  # noqa: PLC0415 - patched for this test only

    monkeypatch.setattr(merger, "FOLD_DELETES_MIN", 4)
    t = _table(warehouse)
    job = t.maintenance.compaction_job(full=True)
    job.commit([job.run_unit(u) for u in job.units])
    t.write_arrow(pa.table({"p": [0], "id": [9], "v": [9]}, schema=SCHEMA))
    ms = t.manifest_store
    base = ms.read_manifest_list(t.latest_snapshot().base_manifest_list)
    assert sum(m.num_deleted_files for m in base) == 0  # the compaction's DELETEs and their ADDs are gone
    assert sum(m.num_added_files for m in base) == len(
        ms.live_entries(t.store.snapshot_manager.get(t.latest_snapshot().id - 1))
    )
    assert len(t.to_arrow()) == 17


def test_few_deletes_are_left_to_javas_rules(warehouse):
    t = _table(warehouse)
    job = t.maintenance.compaction_job(full=True)
    job.commit([job.run_unit(u) for u in job.units])
    t.write_arrow(pa.table({"p": [0], "id": [9], "v": [9]}, schema=SCHEMA))
    base = t.manifest_store.read_manifest_list(t.latest_snapshot().base_manifest_list)
    assert sum(m.num_deleted_files for m in base) > 0  # 16 deletes: below FOLD_DELETES_MIN, under 16 MB


def _units(plan) -> list[tuple]:
    return [(u.partition_values, u.bucket, tuple(f.file_name for f in u.files), u.output_level) for u in plan.units]


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("buckets", [[0], [1], [0, 1], [1, 7]])
def test_bucket_selection_is_the_full_plan_filtered(warehouse, full, buckets):
    t = _table(warehouse)
    t.write_arrow(pa.table({"p": [0] * 4, "id": [1, 2, 3, 4], "v": [7] * 4}, schema=SCHEMA))  # three runs in p=0
    opts = {"num-sorted-run.compaction-trigger": "3"}  # the picker compacts p=0's buckets only
    every = t.maintenance.plan_compaction(full=full, options=opts)
    assert every.units  # the oracle: the plan of every bucket, filtered
    expected = [u for u in _units(every) if u[1] in buckets]
    clear_manifest_cache()
    fresh = Catalog(warehouse).get_table("db.t")  # decoded for the buckets only
    plan = fresh.maintenance.plan_compaction(full=full, buckets=buckets, options=opts)
    assert _units(plan) == expected
    assert {b.bucket for b in plan.buckets} <= set(buckets)
    merged = t.maintenance.plan_compaction(full=full, buckets=buckets, options=opts)  # from the merged snapshot
    assert _units(merged) == expected
    with_partition = fresh.maintenance.plan_compaction(full=full, buckets=buckets, partitions={"p": 0}, options=opts)
    assert _units(with_partition) == [u for u in expected if u[0] == (0,)]


def test_bucket_selection_skips_manifests_of_other_buckets(warehouse, monkeypatch):
    t = _create(warehouse, 4)
    of = assign_buckets([pa.array(range(200), pa.int64())], [pa.int64()], 4)  # the bucket key: id
    for bucket in range(4):  # one commit, hence one manifest, per bucket
        ids = [i for i in range(200) if of[i] == bucket][:3]
        t.write_arrow(pa.table({"p": [0] * 3, "id": ids, "v": ids}, schema=SCHEMA))
    clear_manifest_cache()
    fresh = Catalog(warehouse).get_table("db.t")
    read = _reads(monkeypatch)
    plan = fresh.maintenance.plan_compaction(full=True, buckets=[2])
    assert [u.bucket for u in plan.units] == [2]
    assert len(read) == 1  # the other buckets' manifests were not read


def test_bucket_selection_is_checked(warehouse):
    t = _table(warehouse)
    for bad in ([], ["1"], [True], [-1], 3):
        with pytest.raises(MaintenanceArgumentError, match="buckets"):
            t.maintenance.plan_compaction(buckets=bad)
