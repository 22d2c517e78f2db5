"""remove_orphan_files: litter goes, referenced and young files stay, partial views refuse."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest

from lake_core import Catalog
from lake_core.errors import MaintenanceAbortedError, MaintenanceArgumentError

from .helpers import Workload, killed_while_deleting, listing, make_table, referenced_files, state

DAY = dt.timedelta(days=1)


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def _litter(t):
    root = t.fileio._p(t.paths.root)
    files = {
        "dt=a/bucket-0/data-orphan-0.parquet": b"x" * 100,
        "manifest/manifest-orphan-0": b"y" * 50,
        "dt=b/bucket-1/.data-1.parquet.123.tmp": b"z" * 10,
        "index/index-orphan-0": b"w" * 7,
    }
    for rel, data in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    return root, files


def _age_all(root, seconds):
    for d, _, names in os.walk(root):
        for n in names:
            _age(os.path.join(d, n), seconds)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"older_than": dt.timedelta(minutes=30)}, "older_than = 30m .* below one hour"),
        ({"older_than": dt.timedelta(hours=-2), "force": True}, "older_than = -2h .* must not be negative"),
        ({"older_than": 3600}, "must be a timedelta"),
        ({"dry_run": 1}, "dry_run"),
    ],
)
def test_bad_arguments(warehouse, kwargs, match):
    t = make_table(warehouse)
    Workload(t).run(5)
    root, _ = _litter(t)
    _age_all(root, 3 * 86400)
    before = listing(t)
    with pytest.raises(MaintenanceArgumentError, match=match):
        t.maintenance.remove_orphan_files(**kwargs)
    assert listing(t) == before


def test_removes_old_litter_only(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 3).run(25)
    t.create_tag("v1", 5)
    t.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0))
    root, litter = _litter(t)
    _age_all(root, 3 * 86400)  # everything is old: only unreferenced files may go
    young = os.path.join(root, "dt=c/bucket-0/data-inflight-0.parquet")
    os.makedirs(os.path.dirname(young), exist_ok=True)
    open(young, "wb").write(b"fresh")
    before = listing(t)
    dry = t.maintenance.remove_orphan_files(dry_run=True)
    assert listing(t) == before
    rel = lambda paths: {p[len(t.paths.root) + 1 :] for p in paths}
    assert rel(dry.files) == set(litter) and dry.bytes_reclaimed == sum(map(len, litter.values()))
    real = t.maintenance.remove_orphan_files()
    assert rel(real.files) == set(litter) and real.deleted_files == 4
    assert set(before) - set(listing(t)) == {r for r in litter if not r.endswith(".tmp")}
    assert not any(os.path.exists(os.path.join(root, r)) for r in litter)
    assert os.path.exists(young)
    for s in t.snapshots():
        assert state(t, snapshot_id=s.id) == w.models[s.id]
    assert state(t, tag="v1") == w.models[5]


def test_takes_what_a_crashed_expiry_left(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 4).run(25)
    planned = t.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0), dry_run=True)
    crashing = killed_while_deleting(warehouse, planned.files, deleted=0)
    with pytest.raises(OSError, match="killed"):
        crashing.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0))
    t = Catalog(warehouse).get_table("db.t")  # the process that crashed is gone
    for name in t.fileio.list_names(t.paths.snapshot_dir):  # lose the journal too: only orphans remain
        if name.startswith(".expire-journal"):
            os.unlink(os.path.join(t.fileio._p(t.paths.snapshot_dir), name))
    res = t.maintenance.remove_orphan_files(older_than=dt.timedelta(0), force=True)
    # what the crashed expiry meant to delete, less what retained manifests still name (Java's rule:
    # a DELETE entry of a retained delta keeps its file until that snapshot expires)
    assert res.deleted_files > 0 and set(res.files) <= set(planned.files)
    on_disk = {p for p in listing(t) if p.startswith(("manifest/", "dt="))}
    assert referenced_files(t) <= on_disk
    assert not any(f.startswith("manifest/") and f not in referenced_files(t) for f in on_disk)
    for s in t.snapshots():
        assert state(t, snapshot_id=s.id) == w.models[s.id]


def test_refuses_on_an_incomplete_view(warehouse):
    t = make_table(warehouse)
    Workload(t).run(6)
    root, _ = _litter(t)
    _age_all(root, 3 * 86400)
    manifest = t.latest_snapshot().base_manifest_list
    os.unlink(os.path.join(root, "manifest", t.manifest_store.read_manifest_list(manifest)[0].file_name))
    t.manifest_store._entries.data.clear()
    before = listing(t)
    with pytest.raises(MaintenanceAbortedError, match="could not be read completely"):
        t.maintenance.remove_orphan_files()
    assert listing(t) == before
