"""The decoupled changelog lifecycle: snapshot expiry leaves changelog/changelog-N, expire_changelogs
removes them; retention counts and times against a plain model; the reference set, orphans and
rollback honour long-lived changelogs; bad arguments change nothing."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from lake_core.errors import InvalidOptionError, LakeError, MaintenanceArgumentError
from lake_core.maintenance.references import data_file_paths
from lake_core.snapshot.changelog_manager import ChangelogNotFoundError, changelog_manifest_list

from .helpers import Workload, listing, make_table, state

NOW = dt.timedelta(0)


def _history(warehouse, n=24, seed=5, **options):
    t = make_table(warehouse, **options)
    return t, Workload(t, seed).run(n)


def _readable_files(t, c) -> set[str]:
    """Relative paths of the list, manifests and files of changelog ``c`` a reader follows."""
    root = t.paths.root
    lst = changelog_manifest_list(c, t.options.changelog_producer)
    if not lst:
        return set()
    out = {f"manifest/{lst}"}
    store = t.manifest_store
    for m in store.read_manifest_list(lst):
        out.add(f"manifest/{m.file_name}")
        for e in store.read_manifest(m.file_name):
            out.update(p[len(root) :].lstrip("/") for p, _ in data_file_paths(t, e))
    return out


def _model_long_lived(latest: int, snap_min: int, cl_min: int) -> list[int]:
    """The model: snapshots keep the newest ``snap_min``; changelogs the newest ``cl_min`` ids, of
    which those older than the snapshots are long-lived — except that the newest long-lived one
    always stays (Java ExpireChangelogImpl bounds the range by the latest changelog id)."""
    first_snapshot = latest - snap_min + 1
    ids = list(range(1, first_snapshot))
    keep_from = min(latest - cl_min + 1, first_snapshot - 1)
    return [i for i in ids if i >= keep_from]


@pytest.mark.parametrize("producer", ["none", "input"])
@pytest.mark.parametrize("snap_min, cl_min", [(3, 8), (2, 20), (5, 6)])
def test_retention_counts_follow_the_model(warehouse, producer, snap_min, cl_min):
    t, w = _history(warehouse, n=24, **{"changelog-producer": producer, "changelog.num-retained.min": str(cl_min)})
    originals = {s.id: s for s in t.snapshots()}
    latest = max(originals)
    r = t.maintenance.expire_snapshots(retain_min=snap_min, older_than=NOW, max_deletes=1000)
    assert r.expired_snapshots == tuple(range(1, latest - snap_min + 1))
    assert r.deleted_changelog_files == 0  # the changelog outlives its snapshot
    cm = t.changelog_manager
    assert cm.long_lived.list_ids() == list(range(1, latest - snap_min + 1))
    # every expired snapshot reads back, unchanged, as its long-lived changelog
    for sid, snap in originals.items():
        assert cm.changelog(sid) == snap
    assert cm.earliest_id() == 1 and cm.latest_id() == latest
    files = listing(t)
    for c in (cm.changelog(i) for i in range(1, latest + 1)):
        assert _readable_files(t, c) <= set(files), f"changelog {c.id}"

    r = t.maintenance.expire_changelogs(older_than=NOW)
    kept = _model_long_lived(latest, snap_min, cl_min)
    assert cm.long_lived.list_ids() == kept
    assert r.expired_changelogs == tuple(range(1, kept[0]))
    assert cm.earliest_id() == kept[0]
    for sid in range(1, kept[0]):
        with pytest.raises(ChangelogNotFoundError, match=f"changelog of snapshot {sid} of table"):
            cm.changelog(sid)
    files = listing(t)
    for sid in range(kept[0], latest + 1):
        assert _readable_files(t, cm.changelog(sid)) <= set(files), f"changelog {sid}"
    for s in t.snapshots():
        assert state(t, snapshot_id=s.id) == w.models[s.id]
    # nothing but what snapshots and long-lived changelogs reference is left
    orphans = t.maintenance.remove_orphan_files(older_than=NOW, force=True, dry_run=True)
    assert orphans.files == ()


def test_changelog_time_retained_ends_the_range(warehouse):
    t, _ = _history(warehouse, n=20, **{"changelog.num-retained.min": "30"})
    snaps = {s.id: s for s in t.snapshots()}
    t.maintenance.expire_snapshots(retain_min=2, older_than=NOW, max_deletes=1000)
    # the cut-off at changelog k: changelogs older than k go, k stays (Java: olderThan <= time)
    k = next(i for i in range(6, 15) if snaps[i].time_millis > snaps[i - 1].time_millis)
    cut = dt.datetime.fromtimestamp(snaps[k].time_millis / 1000)
    r = t.maintenance.expire_changelogs(retain_min=1, older_than=cut)
    assert r.expired_changelogs == tuple(range(1, k))
    assert t.changelog_manager.long_lived.earliest_id() == k


def test_changelog_options_and_post_commit(warehouse):
    t = make_table(
        warehouse,
        **{
            "write-only": "false",
            "snapshot.num-retained.min": "2",
            "snapshot.num-retained.max": "2",
            "changelog.num-retained.min": "5",
            "changelog.num-retained.max": "5",
            "snapshot.time-retained": "1 ms",
        },
    )
    w = Workload(t, 8)
    for _ in range(12):
        w.upsert()
    latest = t.latest_snapshot().id
    cm = t.changelog_manager
    assert [s.id for s in t.snapshots()] == [latest - 1, latest]
    # 5 readable changelogs: 3 long-lived + 2 snapshots
    assert cm.long_lived.list_ids() == [latest - 4, latest - 3, latest - 2]
    assert cm.earliest_id() == latest - 4
    assert state(t) == w.model


def test_dry_run_returns_the_plan_and_changes_nothing(warehouse):
    t, _ = _history(warehouse, n=20, **{"changelog.num-retained.min": "6", "changelog-producer": "input"})
    dry = t.maintenance.expire_snapshots(retain_min=2, older_than=NOW, dry_run=True)
    assert dry.dry_run and dry.expired_snapshots and not t.changelog_manager.long_lived.list_ids()
    t.maintenance.expire_snapshots(retain_min=2, older_than=NOW)
    before = listing(t)
    dry = t.maintenance.expire_changelogs(older_than=NOW, dry_run=True)
    assert listing(t) == before
    assert dry.expired_changelogs and dry.deleted_changelog_files > 0
    assert dry.describe().startswith("expire_changelogs on db.t (dry run): expired changelogs 1..")
    real = t.maintenance.expire_changelogs(older_than=NOW)
    assert real.files == dry.files and real.expired_changelogs == dry.expired_changelogs
    gone = {p for p in before if not p.startswith("changelog/")} - set(listing(t))
    assert len(gone) == len(dry.files)
    assert real.as_metadata()["expired_changelogs.count"] == len(real.expired_changelogs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"retain_min": 0}, "retain_min = 0"),
        ({"retain_min": 5, "retain_max": 2}, r"retain_min \(5\) must not exceed retain_max \(2\)"),
        ({"max_deletes": -1}, "max_deletes = -1"),
        ({"older_than": dt.datetime.now() + dt.timedelta(days=1)}, "is in the future"),
        ({"dry_run": 1}, "dry_run"),
    ],
)
def test_bad_arguments_raise_and_change_nothing(warehouse, kwargs, match):
    t, _ = _history(warehouse, n=12, **{"changelog.num-retained.min": "6"})
    t.maintenance.expire_snapshots(retain_min=2, older_than=NOW)
    before = listing(t)
    with pytest.raises(MaintenanceArgumentError, match=match) as exc:
        t.maintenance.expire_changelogs(**kwargs)
    assert isinstance(exc.value, LakeError) and "db.t" in str(exc.value)
    assert listing(t) == before


@pytest.mark.parametrize(
    "options, match",
    [
        ({"changelog.num-retained.min": "0"}, "changelog.num-retained.min"),
        (
            {"changelog.num-retained.min": "9", "changelog.num-retained.max": "3"},
            "larger than 'changelog.num-retained.max'",
        ),
        ({"changelog.time-retained": "soon"}, "changelog.time-retained"),
        ({"tag.default-time-retained": "x"}, "tag.default-time-retained"),
    ],
)
def test_bad_options_are_refused(warehouse, options, match):
    with pytest.raises(InvalidOptionError, match=match):
        make_table(warehouse, **options)


def test_no_long_lived_changelogs_unless_decoupled(warehouse):
    t, _ = _history(warehouse, n=14, **{"changelog.num-retained.min": "3", "changelog-producer": "input"})
    r = t.maintenance.expire_snapshots(retain_min=5, older_than=NOW)
    assert r.expired_snapshots and r.deleted_changelog_files > 0
    assert t.changelog_manager.long_lived.list_ids() == []
    assert t.maintenance.expire_changelogs().skipped.startswith("the table has no long-lived changelogs")


def test_rollback_to_an_expired_tag_drops_newer_long_lived_changelogs(warehouse):
    t, w = _history(warehouse, n=20, **{"changelog.num-retained.min": "30"})
    t.create_tag("t6", 6)
    t.maintenance.expire_snapshots(retain_min=3, older_than=NOW)
    cm = t.changelog_manager
    assert 7 in cm.long_lived.list_ids()
    t.maintenance.rollback_to(tag="t6")
    # Java RollbackHelper: long-lived changelogs newer than the target go; changelog-6 stays
    assert cm.long_lived.list_ids() == [1, 2, 3, 4, 5, 6]
    assert state(t) == w.models[6]
    files = set(listing(t))
    for sid in range(1, 7):
        assert _readable_files(t, cm.changelog(sid)) <= files
    assert t.maintenance.remove_orphan_files(older_than=NOW, force=True, dry_run=True).files == ()
    # changelog 6 is never expired while snapshot 6 exists again
    t.maintenance.expire_changelogs(retain_min=1, older_than=NOW)
    assert cm.long_lived.list_ids() == [6] and cm.changelog(6) == t.snapshot_manager.get(6)


def test_a_restored_expiry_removes_the_changelogs_it_wrote(warehouse, monkeypatch):
    """A lease taken while snapshot files were going restores the snapshots: their changelog-N
    copies must go too, or changelog expiry would later delete files the snapshots use."""
    from lake_core.maintenance import expire_snapshots as mod

    t, w = _history(warehouse, n=14, **{"changelog.num-retained.min": "20"})
    real = mod.ConsumerManager

    class LeaseAppears(real):
        calls = 0

        def min_next_snapshot(self, *, strict=False):
            LeaseAppears.calls += 1
            return 2 if LeaseAppears.calls > 2 else super().min_next_snapshot(strict=strict)

    monkeypatch.setattr(mod, "ConsumerManager", LeaseAppears)
    r = t.maintenance.expire_snapshots(retain_min=2, older_than=NOW)
    assert not r.expired_snapshots and "restored" in r.skipped
    assert t.changelog_manager.long_lived.list_ids() == []
    for s in t.snapshots():
        assert state(t, snapshot_id=s.id) == w.models[s.id]


def test_one_expiry_at_a_time_and_a_crashed_holder_is_taken_over(warehouse):
    import json
    import time as _time

    t, _ = _history(warehouse, n=12, **{"changelog.num-retained.min": "6"})
    lock = f"{t.paths.snapshot_dir}/.expire-lock"
    live = json.dumps({"owner": "other", "expires": _time.time() + 600}).encode()
    assert t.fileio.try_create(lock, live)
    before = listing(t)
    r = t.maintenance.expire_snapshots(retain_min=2, older_than=NOW)
    assert not r.expired_snapshots and "another expiry" in r.skipped
    assert "another expiry" in t.maintenance.expire_changelogs(older_than=NOW).skipped
    assert listing(t) == before
    # a lock past its TTL (its holder crashed) is taken over, and released afterwards
    t.fileio.delete(lock)
    t.fileio.try_create(lock, json.dumps({"owner": "dead", "expires": _time.time() - 1}).encode())
    assert t.maintenance.expire_snapshots(retain_min=2, older_than=NOW).expired_snapshots
    assert t.maintenance.expire_changelogs(older_than=NOW).expired_changelogs
    assert not t.fileio.exists(lock)


def test_a_lock_of_a_dead_process_on_this_host_is_taken_over_at_once(warehouse):
    import json
    import socket
    import subprocess
    import sys
    import time as _time

    t, _ = _history(warehouse, n=6)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock = f"{t.paths.snapshot_dir}/.expire-lock"
    t.fileio.try_create(
        lock,
        json.dumps(
            {"owner": "killed", "expires": _time.time() + 600, "host": socket.gethostname(), "pid": int(dead.stdout)}
        ).encode(),
    )
    assert t.maintenance.expire_snapshots(retain_min=2, older_than=NOW).expired_snapshots
    assert not t.fileio.exists(lock) and not t.fileio.exists(f"{lock}.takeover-killed")


def test_of_many_processes_finding_one_dead_lock_exactly_one_takes_it_over(warehouse):
    import json
    import threading
    import time as _time

    from lake_core.maintenance.expiry_lock import expiry_lock

    t, _ = _history(warehouse, n=2)
    lock = f"{t.paths.snapshot_dir}/.expire-lock"
    t.fileio.try_create(lock, json.dumps({"owner": "dead", "expires": _time.time() - 1}).encode())
    barrier, held, inside, most = threading.Barrier(8), [], [0], [0]
    guard = threading.Lock()

    def contend():
        barrier.wait()
        with expiry_lock(t) as ok:
            held.append(ok)
            if ok:
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                _time.sleep(0.3)  # every other contender decides while this one holds
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=contend) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # never two holders at once (a late contender may take the lock after the first released it)
    assert most[0] == 1 and held.count(True) >= 1
    assert not t.fileio.exists(lock) and not t.fileio.exists(f"{lock}.takeover-dead")


def test_a_lock_this_process_left_behind_is_taken_over_but_one_it_holds_is_not(warehouse):
    """A release that failed (storage gone mid-run) leaves a lock naming this process: no run of it
    holds the lock any more, so the next one takes it over at once; while another thread of the
    process holds it, it is respected."""
    import json
    import socket
    import threading
    import time as _time

    from lake_core.maintenance.expiry_lock import expiry_lock

    t, _ = _history(warehouse, n=6)
    lock = f"{t.paths.snapshot_dir}/.expire-lock"
    held, release = threading.Event(), threading.Event()

    def hold():
        with expiry_lock(t) as ok:
            assert ok
            held.set()
            release.wait(30)

    th = threading.Thread(target=hold)
    th.start()
    held.wait(30)
    try:
        assert "another expiry" in t.maintenance.expire_snapshots(retain_min=2, older_than=NOW).skipped
    finally:
        release.set()
        th.join()
    t.fileio.try_create(
        lock,
        json.dumps(
            {"owner": "release-failed", "expires": _time.time() + 600, "host": socket.gethostname(), "pid": os.getpid()}
        ).encode(),
    )
    assert t.maintenance.expire_snapshots(retain_min=2, older_than=NOW).expired_snapshots
    assert not t.fileio.exists(lock) and not t.fileio.exists(f"{lock}.takeover-release-failed")


def test_a_run_longer_than_the_ttl_keeps_its_lock_and_a_lock_taken_from_it_is_left_alone(warehouse):
    """A holder pushes its lock's expiry forward while it runs (every quarter of the TTL): a run
    three TTLs long still holds it, where without renewal another run (here: a second thread,
    whose only way in is an expired lock) would take it over. After the release nothing writes the
    lock again; a lock that is no longer the holder's (taken over after a stall) is not renewed or
    deleted by it."""
    import json
    import time as _time

    from lake_core.maintenance.expiry_lock import expiry_lock

    t, _ = _history(warehouse, n=2)
    lock = f"{t.paths.snapshot_dir}/.expire-lock"
    ttl = 0.8
    with expiry_lock(t, ttl_s=ttl) as held:
        assert held
        mine = json.loads(t.fileio.read_text(lock))
        _time.sleep(3 * ttl)
        with expiry_lock(t, ttl_s=ttl) as other:
            assert not other  # not expired: renewed
        now = json.loads(t.fileio.read_text(lock))
        assert now["owner"] == mine["owner"] and now["expires"] > _time.time() > mine["expires"]
    _time.sleep(ttl)  # a renewal after the release would create the lock again
    assert not t.fileio.exists(lock)

    with expiry_lock(t, ttl_s=ttl) as held:
        assert held
        foreign = json.dumps({"owner": "taker", "expires": _time.time() + 600}).encode()
        t.fileio.delete(lock)
        assert t.fileio.try_create(lock, foreign)  # what a takeover after a stall leaves
        _time.sleep(ttl)
        assert t.fileio.read_bytes(lock) == foreign
    assert t.fileio.read_bytes(lock) == foreign  # the release deletes only its own lock
    t.fileio.delete(lock)
