"""Full manifest compaction: compact_manifest() and the size trigger inside commits."""

from __future__ import annotations

import datetime as dt

import pytest

from lake_core.errors import MaintenanceArgumentError
from lake_core.manifest.metadata import FileKind

from .helpers import Workload, listing, make_table, state


def _manifests(t, snap=None):
    snap = snap or t.latest_snapshot()
    return t.manifest_store.data_manifests(snap)


def test_compact_manifest_folds_everything_and_keeps_every_snapshot_readable(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 7).run(40)
    assert len(_manifests(t)) > 10
    before = listing(t)
    dry = t.maintenance.compact_manifest(dry_run=True)
    assert listing(t) == before and dry.manifests_before == len(_manifests(t))
    res = t.maintenance.compact_manifest()
    latest = t.latest_snapshot()
    assert res.snapshot_id == latest.id and latest.commit_kind.value == "COMPACT"
    metas = _manifests(t)
    assert res.manifests_after == len(metas) == 1 and res.manifests_before > 10
    entries = t.manifest_store.read_entries(metas)
    assert all(e.kind == FileKind.ADD for e in entries)
    assert state(t) == w.model
    for sid, model in w.models.items():
        assert state(t, snapshot_id=sid) == model
    again = t.maintenance.compact_manifest()
    assert again.skipped == "already compact" and t.latest_snapshot().id == latest.id
    with pytest.raises(MaintenanceArgumentError):
        t.maintenance.compact_manifest(dry_run="no")
    # writes after the fold keep working, and expiry of the pre-fold snapshots leaves a readable table
    w.run(5)
    t.maintenance.expire_snapshots(retain_min=2, older_than=dt.timedelta(0), max_deletes=1000)
    assert state(t) == w.model


def test_full_compaction_inside_commits(warehouse):
    t = make_table(warehouse, **{"manifest.full-compaction-threshold-size": "4 kb", "manifest.merge-min-count": "1000"})
    w = Workload(t, 8)
    sizes = []
    for _ in range(40):
        w.run(1)
        metas = _manifests(t)
        sizes.append(sum(m.file_size for m in metas if m.num_deleted_files or m.file_size < 8 << 20))
        assert state(t) == w.model
    # the base list never grows past the trigger plus one commit's delta
    assert max(sizes) < 4096 + 4096
    base = t.manifest_store.read_manifest_list(t.latest_snapshot().base_manifest_list)
    assert len(base) <= 3
    for sid in list(w.models)[-5:]:
        assert state(t, snapshot_id=sid) == w.models[sid]


@pytest.mark.interop
def test_pypaimon_reads_after_compact_manifest_and_expiry(warehouse, pypaimon):
    t = make_table(warehouse)
    w = Workload(t, 9).run(25)
    t.maintenance.compact_manifest()
    t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=1000)
    theirs = pypaimon.read(warehouse, "db.t")
    got = {(r["dt"], r["id"]): r["v"] for r in theirs.to_pylist()}
    assert got == w.model


def test_minor_mode_merges_runs_of_small_manifests_only(warehouse):
    from lake_core import Catalog, SchemaChange

    # Written with a merge-min-count no commit reaches: every commit leaves one more manifest.
    t = make_table(warehouse, **{"manifest.merge-min-count": "1000"})
    w = Workload(t, 11).run(30)
    before = len(_manifests(t))
    assert before > 10
    assert t.maintenance.compact_manifest(mode="minor").skipped == "already compact"  # the table's own rule
    t = Catalog(warehouse).alter_table("db.t", SchemaChange.set_option("manifest.merge-min-count", "5"))
    res = t.maintenance.compact_manifest(mode="minor")
    metas = _manifests(t)
    assert res.snapshot_id == t.latest_snapshot().id and t.latest_snapshot().commit_kind.value == "COMPACT"
    assert res.manifests_before == before and res.manifests_after == len(metas) < before
    assert state(t) == w.model
    for sid, model in w.models.items():
        assert state(t, snapshot_id=sid) == model
    with pytest.raises(MaintenanceArgumentError, match="mode = 'major'.*db.t"):
        t.maintenance.compact_manifest(mode="major")
