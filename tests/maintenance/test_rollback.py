"""rollback_to a snapshot or a tag: Java RollbackHelper semantics, files cleaned, model equality."""

from __future__ import annotations

import datetime as dt

import pytest

from lake_core.errors import LakeError, MaintenanceArgumentError, SnapshotNotFoundError, TagNotFoundError

from .helpers import Workload, listing, make_table, referenced_files, state


def test_rollback_to_snapshot(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 21).run(20)
    t.create_tag("early", 5)
    t.create_tag("late", 15)
    res = t.maintenance.rollback_to(snapshot_id=10)
    assert res.snapshot_id == 10 and res.removed_tags == ("late",)
    assert res.removed_snapshots == tuple(range(11, max(w.models) + 1))
    assert t.latest_snapshot().id == 10 and state(t) == w.models[10]
    assert t.list_tags() == ["early"] and state(t, tag="early") == w.models[5]
    assert res.deleted_files > 0
    on_disk = {p for p in listing(t) if p.startswith(("manifest/", "dt="))}
    assert referenced_files(t) <= on_disk
    # nothing unreferenced by name is left: a forced orphan run finds nothing
    assert t.maintenance.remove_orphan_files(older_than=dt.timedelta(0), force=True).deleted_files == 0
    # the table goes on from snapshot 10
    w.model = dict(w.models[10])
    w.run(3)
    assert t.latest_snapshot().id == 13 and state(t) == w.model


def test_rollback_to_tag_whose_snapshot_expired(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 22).run(15)
    t.create_tag("v1", 4)
    t.maintenance.expire_snapshots(retain_min=2, older_than=dt.timedelta(0))
    with pytest.raises(SnapshotNotFoundError):
        t.snapshot(4)
    res = t.maintenance.rollback_to(tag="v1")
    assert res.snapshot_id == 4 and t.snapshot_manager.earliest_id() == 4 == t.latest_snapshot().id
    assert state(t) == w.models[4] and state(t, snapshot_id=4) == w.models[4]
    assert t.fileio.read_text(t.paths.earliest_hint) == "4"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({}, MaintenanceArgumentError, "exactly one"),
        ({"snapshot_id": 3, "tag": "x"}, MaintenanceArgumentError, "exactly one"),
        ({"snapshot_id": 0}, MaintenanceArgumentError, "snapshot_id = 0"),
        ({"snapshot_id": 99}, SnapshotNotFoundError, "snapshot 99"),
        ({"tag": "nope"}, TagNotFoundError, "nope"),
        ({"tag": "../x"}, LakeError, "tag"),
    ],
)
def test_bad_arguments(warehouse, kwargs, error, match):
    t = make_table(warehouse)
    Workload(t, 23).run(5)
    before = listing(t)
    with pytest.raises(error, match=match):
        t.maintenance.rollback_to(**kwargs)
    assert listing(t) == before


def test_rollback_waits_for_no_expiry_and_changes_nothing_while_one_runs(warehouse):
    """An expiry (or tag deletion) holding the lock could delete the target's files as it becomes
    the latest state: the rollback is refused, the table unchanged, and runs once the lock is free."""
    from lake_core.errors import MaintenanceAbortedError
    from lake_core.maintenance.expiry_lock import expiry_lock

    t = make_table(warehouse)
    w = Workload(t, 24).run(8)
    t.create_tag("v", 3)
    before = listing(t)
    with expiry_lock(t) as held:
        assert held
        with pytest.raises(MaintenanceAbortedError, match="expire-lock"):
            t.maintenance.rollback_to(tag="v")
        now = listing(t)
        now.pop("snapshot/.expire-lock", None)
        assert now == before
    assert t.maintenance.rollback_to(tag="v").snapshot_id == 3 and state(t) == w.models[3]
