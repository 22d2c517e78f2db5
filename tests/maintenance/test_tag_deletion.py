"""Deleting a tag deletes the files only it held (Java TagDeletion); every other snapshot, tag and
changelog keeps reading, and what stays on disk is exactly what the retained ones reference."""

from __future__ import annotations

import datetime as dt

import pytest

from lake_core.errors import MaintenanceArgumentError, TagNotFoundError

from .helpers import Workload, listing, make_table, referenced_files, state


def _on_disk(t) -> set[str]:
    return {p for p in listing(t) if p.startswith(("manifest/", "dt=", "index/"))}


def _tagged_history(warehouse, retained=None, **options):
    t = make_table(warehouse, **options)
    w = Workload(t, 7)
    w.run(6)
    t.create_tag("t1", time_retained=retained)
    w.run(6)
    t.create_tag("t2", time_retained=retained)
    w.run(6)
    t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=100_000)
    assert [s.id for s in t.snapshots()] == [t.latest_snapshot().id]
    return t, w


@pytest.mark.parametrize("options", [{}, {"changelog-producer": "input"}], ids=["no changelog", "input changelog"])
def test_deleting_a_tag_on_an_expired_snapshot_reclaims_exactly_its_own_files(warehouse, options):
    t, w = _tagged_history(warehouse, **options)
    model = not options  # tags do not keep changelogs (Java expiry deletes them), so the model is exact without
    if model:
        assert _on_disk(t) == referenced_files(t)
    before = _on_disk(t)
    plan = t.maintenance.delete_tag(name="t1", dry_run=True)
    assert plan.dry_run and plan.deleted_files and t.list_tags() == ["t1", "t2"] and _on_disk(t) == before

    r = t.delete_tag("t1")
    assert t.list_tags() == ["t2"]
    after = _on_disk(t)
    if model:  # what the remaining snapshot and tag reference, nothing more, nothing less
        assert after == referenced_files(t)
    root = t.paths.root.rstrip("/") + "/"
    assert {f.removeprefix(root) for f in r.files} == before - after
    assert set(r.files) <= set(plan.files) and r.data_files > 0 and r.bytes_reclaimed > 0
    assert state(t, tag="t2") == w.models[t.tag("t2").id]
    assert state(t) == w.models[t.latest_snapshot().id]
    # nothing was left for orphan removal
    assert t.maintenance.remove_orphan_files(older_than=dt.timedelta(0), force=True, dry_run=True).deleted_files == 0


def test_a_tag_on_a_live_snapshot_keeps_its_files(warehouse):
    t = make_table(warehouse)
    Workload(t, 3).run(5)
    t.create_tag("now")
    before = _on_disk(t)
    r = t.delete_tag("now")
    assert r.deleted_files == 0 and "still live" in r.skipped and _on_disk(t) == before


def test_two_tags_on_one_snapshot_the_other_keeps_the_files(warehouse):
    t, w = _tagged_history(warehouse)
    sid = t.tag("t1").id
    # a second tag on the same (expired) snapshot, as Java's tag files are copies of the snapshot
    t.fileio.try_create(t.paths.tag("t1b"), t.fileio.read_bytes(t.paths.tag("t1")))
    before = _on_disk(t)
    assert t.delete_tag("t1").deleted_files == 0 and _on_disk(t) == before
    assert state(t, tag="t1b") == w.models[sid]


def test_expired_tags_take_their_files_along(warehouse):
    t, w = _tagged_history(warehouse, retained=dt.timedelta(milliseconds=1))
    r = t.maintenance.expire_tags()
    assert set(r.expired_tags) == {"t1", "t2"} and r.deleted_files > 0
    assert _on_disk(t) == referenced_files(t)
    assert state(t) == w.models[t.latest_snapshot().id]


def test_bad_input_changes_nothing(warehouse):
    t, _ = _tagged_history(warehouse)
    before = listing(t)
    with pytest.raises(TagNotFoundError, match="'nope'"):
        t.delete_tag("nope")
    with pytest.raises(MaintenanceArgumentError, match="dry_run"):
        t.maintenance.delete_tag(name="t1", dry_run="yes")
    assert listing(t) == before and t.list_tags() == ["t1", "t2"]
