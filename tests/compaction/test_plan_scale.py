"""Planning a dedicated compaction reads only what it needs: the manifests whose partition
statistics admit a selected partition, and the last snapshot's merged entries when at hand."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import PartitionNotFoundError
from lake_core.manifest.store import ManifestStore

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("v", pa.int64())])


def _table(warehouse: str):
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["p", "id"],
        partition_keys=["p"],
        options={"bucket": "2", "write-only": "true", "manifest.merge-min-count": "1000"},
    )
    for p in range(4):  # one commit, hence one manifest, per partition
        for _ in range(2):
            t.write_arrow(pa.table({"p": [p] * 4, "id": [1, 2, 3, 4], "v": [p] * 4}, schema=SCHEMA))
    return Catalog(warehouse).get_table("db.t")  # a new handle: nothing cached


def _reads(monkeypatch) -> list[str]:
    read: list[str] = []
    original = ManifestStore.read_manifest

    def spy(self, name):
        read.append(name)
        return original(self, name)

    monkeypatch.setattr(ManifestStore, "read_manifest", spy)
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
