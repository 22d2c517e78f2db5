"""Snapshot expiry: Paimon's range and file rules, two phases, leases, crash recovery, bad arguments."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from lake_core import Catalog
from lake_core.errors import (
    InvalidOptionError,
    LakeError,
    LeaseError,
    MaintenanceArgumentError,
    SnapshotNotFoundError,
    UnsupportedOptionError,
)
from lake_core.maintenance import expire_snapshots as expire_mod

from .helpers import Workload, killed_while_deleting, listing, make_table, referenced_files, state

FUTURE = dt.datetime.now() + dt.timedelta(days=1)


def _history(warehouse, n=30, seed=1, **options):
    t = make_table(warehouse, **options)
    return t, Workload(t, seed).run(n)


def _check_retained(t, w):
    for s in t.snapshots():
        assert state(t, snapshot_id=s.id) == w.models[s.id], f"snapshot {s.id}"
    for name in t.list_tags():
        assert state(t, tag=name) == w.models[t.tag(name).id], f"tag {name}"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"retain_min": 0}, "retain_min = 0"),
        ({"retain_min": -3}, "retain_min = -3"),
        ({"retain_max": 0}, "retain_max = 0"),
        ({"retain_min": 5, "retain_max": 2}, r"retain_min \(5\) must not exceed retain_max \(2\)"),
        ({"max_deletes": 0}, "max_deletes = 0"),
        ({"retain_min": 1.5}, "must be an integer"),
        ({"older_than": FUTURE}, "is in the future"),
        ({"older_than": dt.timedelta(hours=-1)}, "older_than = -1h for table db.t must not be negative"),
        ({"older_than": "yesterday"}, "datetime or a timedelta"),
        ({"dry_run": "yes"}, "dry_run"),
    ],
)
def test_bad_arguments_raise_and_change_nothing(warehouse, kwargs, match):
    t, _ = _history(warehouse, n=8)
    before = listing(t)
    with pytest.raises(MaintenanceArgumentError, match=match) as exc:
        t.maintenance.expire_snapshots(**kwargs)
    assert isinstance(exc.value, LakeError) and "db.t" in str(exc.value)
    assert listing(t) == before


def test_dry_run_changes_nothing_and_equals_the_real_run(warehouse):
    t, w = _history(warehouse, n=40)
    t.create_tag("keep", 12)
    before = listing(t)
    dry = t.maintenance.expire_snapshots(retain_min=5, older_than=dt.timedelta(0), max_deletes=1000, dry_run=True)
    assert listing(t) == before
    text = dry.describe()
    n = len(w.models) - 5
    assert text.startswith(f"expire_snapshots on db.t (dry run): expired snapshots 1..{n} ({n}); earliest snapshot now")
    # a screen at most: a few of the files, then how many more
    assert len(text.splitlines()) <= 20 and all(p in text for p in dry.files[:5]) and dry.files[5] not in text
    assert f"… and {len(dry.files) - 5} more" in text
    assert dry.dry_run and dry.expired_snapshots == tuple(range(1, len(w.models) - 4))
    assert dry.deleted_data_files > 0 and dry.deleted_metadata_files > 0
    real = t.maintenance.expire_snapshots(retain_min=5, older_than=dt.timedelta(0), max_deletes=1000)
    after = listing(t)
    gone = {p for p in before if p not in after and not p.startswith("snapshot/")}
    root = t.paths.root + "/"
    assert gone == {p[len(root) :] for p in dry.files} == {p[len(root) :] for p in real.files}
    assert (real.deleted_data_files, real.deleted_metadata_files, real.bytes_reclaimed) == (
        dry.deleted_data_files,
        dry.deleted_metadata_files,
        dry.bytes_reclaimed,
    )
    assert real.expired_snapshots == dry.expired_snapshots
    meta = real.as_metadata()
    assert meta["operation"] == "expire_snapshots" and meta["deleted_data_files"] == real.deleted_data_files


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_retained_snapshots_and_tags_read_like_the_model(warehouse, seed):
    t, w = _history(warehouse, n=45, seed=seed)
    t.create_tag("early", 3)
    t.create_tag("middle", 20)
    latest = t.latest_snapshot().id
    res = t.maintenance.expire_snapshots(retain_min=4, older_than=dt.timedelta(0), max_deletes=1000)
    assert res.expired_snapshots == tuple(range(1, latest - 3))
    assert [s.id for s in t.snapshots()] == list(range(latest - 3, latest + 1))
    assert t.snapshot_manager.earliest_id() == latest - 3
    assert t.fileio.read_text(t.paths.earliest_hint) == str(latest - 3)
    with pytest.raises(SnapshotNotFoundError):
        t.to_arrow(snapshot_id=1)
    _check_retained(t, w)
    # exactly Java's rule set: every file a retained snapshot or tag needs is there, nothing else is
    on_disk = {p for p in listing(t) if p.startswith(("manifest/", "dt="))}
    assert on_disk == referenced_files(t)
    # idempotent: a second run with the same arguments has nothing left to do
    again = t.maintenance.expire_snapshots(retain_min=4, older_than=dt.timedelta(0), max_deletes=1000)
    assert again.expired_snapshots == () and again.skipped


def test_option_defaults_and_limits(warehouse):
    t, w = _history(warehouse, n=20)
    # defaults: snapshot.time-retained = 1 h, so young snapshots all stay
    res = t.maintenance.expire_snapshots()
    assert res.expired_snapshots == () and "younger than the cut-off" in res.skipped
    # retain_max removes old snapshots regardless of age, within snapshot.expire.limit
    res = t.maintenance.expire_snapshots(retain_min=1, retain_max=12, max_deletes=3)
    assert res.expired_snapshots == (1, 2, 3)
    res = t.maintenance.expire_snapshots(retain_min=1, retain_max=12)
    assert res.expired_snapshots == tuple(range(4, len(w.models) - 11))
    _check_retained(t, w)


def test_consumers_pin_snapshots(warehouse):
    t, w = _history(warehouse, n=20)
    t.maintenance.consumers.reset("flink-job", 7)
    assert t.fileio.read_text(t.paths.consumer("flink-job")) == '{\n  "nextSnapshot" : 7\n}'
    res = t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert res.expired_snapshots == tuple(range(1, 7)) and t.snapshot_manager.earliest_id() == 7
    t.maintenance.consumers.delete("flink-job")
    res = t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert res.expired_snapshots[0] == 7
    _check_retained(t, w)
    with pytest.raises(LakeError, match="consumer id"):
        t.maintenance.consumers.reset("../x", 3)


def test_consumer_expiration_time(warehouse):
    import os
    import time

    t, _ = _history(warehouse, n=6, **{"consumer.expiration-time": "1 h"})
    t.maintenance.consumers.reset("old", 2)
    t.maintenance.consumers.reset("fresh", 3)
    old = t.fileio._p(t.paths.consumer("old"))
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    assert t.maintenance.consumers.expire() == ["old"]
    assert t.maintenance.consumers.get("fresh") == 3 and t.maintenance.consumers.get("old") is None


def test_lease_protects_its_snapshot_and_is_removed_after(warehouse):
    t, w = _history(warehouse, n=15)
    with t.lease(5, holder="report", ttl=dt.timedelta(minutes=5)) as snap:
        assert snap.id == 5
        res = t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
        assert res.expired_snapshots == (1, 2, 3, 4)
        assert state(t, snapshot_id=5) == w.models[5]
    assert t.maintenance.consumers.consumers() == []
    assert t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0)).expired_snapshots[0] == 5
    with pytest.raises(LeaseError, match="snapshot 2"):
        with t.lease(2, holder="late"):
            pass
    assert t.maintenance.consumers.consumers() == []
    with pytest.raises(LakeError, match="consumer id"):
        t.lease(holder="a/b").__enter__()
    assert t.maintenance.consumers.consumers() == []


def test_dead_lease_does_not_pin_forever(warehouse):
    t, _ = _history(warehouse, n=10)
    t.maintenance.consumers.reset("lease-crashed-0000000001000-deadbeef", 2)  # expired in 1970
    res = t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert res.expired_snapshots[-1] > 2
    assert t.maintenance.consumers.expire() == ["lease-crashed-0000000001000-deadbeef"]


def test_lease_taken_during_expiry_restores_the_snapshots(warehouse, monkeypatch):
    t, w = _history(warehouse, n=15)
    calls = {"n": 0}
    real = expire_mod.ConsumerManager.min_next_snapshot

    def racing(self, **kw):
        calls["n"] += 1
        if calls["n"] == 3:  # the post-deletion re-read: a reader wrote its lease just before
            self.reset("lease-racer-9999999999999-00000000", 3)
        return real(self, **kw)

    monkeypatch.setattr(expire_mod.ConsumerManager, "min_next_snapshot", racing)
    before = listing(t)
    res = t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert res.expired_snapshots == () and "restored" in res.skipped
    assert listing(t) == {**before, "consumer/consumer-lease-racer-9999999999999-00000000": 24, "snapshot/EARLIEST": 1}
    _check_retained(t, w)
    assert [s.id for s in t.snapshots()] == sorted(w.models)


def test_tag_on_expired_snapshot_is_refused(warehouse):
    t, _ = _history(warehouse, n=8)
    t.maintenance.expire_snapshots(retain_min=2, older_than=dt.timedelta(0))
    with pytest.raises(SnapshotNotFoundError):
        t.create_tag("gone", 1)
    assert t.list_tags() == []


def test_crash_during_deletion_is_finished_by_a_rerun(warehouse, tmp_path):
    t, w = _history(warehouse, n=30)
    root = t.fileio._p(t.paths.root)
    clean_root = str(tmp_path / "clean")
    shutil.copytree(root, clean_root)
    clean = Catalog(warehouse).get_table("db.t")
    planned = t.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0), dry_run=True).files
    crashing = killed_while_deleting(warehouse, planned, deleted=len(planned) // 2)
    with pytest.raises(OSError, match="killed"):
        crashing.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0))
    t = Catalog(warehouse).get_table("db.t")  # the process that crashed is gone
    _check_retained(t, w)  # readable right after the crash
    t.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0))  # finishes the journal
    crashed = listing(t)
    shutil.rmtree(root)
    shutil.copytree(clean_root, root)
    clean.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0))
    assert crashed == listing(clean)
    assert not any(p.startswith("snapshot/.") for p in crashed)


def test_expiry_after_commits_unless_write_only(warehouse):
    # a high compaction trigger keeps the writers' inline compactions (extra COMPACT snapshots) out of the count
    t = make_table(
        warehouse,
        **{
            "write-only": "false",
            "snapshot.num-retained.max": "3",
            "snapshot.num-retained.min": "1",
            "num-sorted-run.compaction-trigger": "100",
        },
    )
    w = Workload(t, 5).run(10)
    latest = t.latest_snapshot().id
    assert [s.id for s in t.snapshots()] == [latest - 2, latest - 1, latest]
    _check_retained(t, w)
    on_disk = {p for p in listing(t) if p.startswith(("manifest/", "dt="))}
    assert on_disk == referenced_files(t)
    t2 = make_table(warehouse, "db.w", **{"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"})
    w2 = Workload(t2, 5).run(6)
    assert len(t2.snapshots()) == len(w2.models)


@pytest.mark.parametrize(
    "options, error, match",
    [
        ({"snapshot.expire.execution-mode": "async"}, UnsupportedOptionError, "async"),
        ({"snapshot.expire.execution-mode": "later"}, InvalidOptionError, "execution-mode"),
        ({"snapshot.num-retained.min": "0"}, InvalidOptionError, "snapshot.num-retained.min"),
        ({"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "2"}, InvalidOptionError, "larger than"),
        ({"consumer.expiration-time": "soon"}, InvalidOptionError, "consumer.expiration-time"),
    ],
)
def test_bad_expiry_options_are_refused(warehouse, options, error, match):
    with pytest.raises(error, match=match):
        make_table(warehouse, **options)


def test_retain_min_beyond_the_history_names_the_snapshots_it_keeps(warehouse):
    # not "keeps snapshots from -3": the ids shown exist
    t, _ = _history(warehouse, n=5)
    r = t.maintenance.expire_snapshots(retain_min=9, older_than=dt.timedelta(0))
    ids = t.snapshot_manager.list_ids()
    assert (
        not r.expired_snapshots and f"retain_min = 9 keeps all {len(ids)} snapshots ({ids[0]}..{ids[-1]})" in r.skipped
    )
    assert r.summary().startswith(f"expire_snapshots on db.t: nothing done — {r.skipped}; took ")
    r = t.maintenance.expire_snapshots(retain_min=2, older_than=dt.timedelta(0), max_deletes=1)
    assert r.expired_snapshots == (ids[0],)
