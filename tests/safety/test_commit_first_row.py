"""Item 7: a first-row commit that landed is reported as landed, and its rows become visible
even when its compaction loses a race or never runs (a crash between the two snapshots)."""

from __future__ import annotations

from dataclasses import replace

from lake_core import Catalog
from lake_core.compaction.bucket_compact import compact_bucket
from lake_core.snapshot.snapshot import CommitKind

from .helpers import as_dict, kv, new_table, prepared, where  # noqa: F401 (fixture)


def _stale_compaction(t):
    """A compaction of every bucket's live files, planned now, committed later by someone else."""
    latest = t.latest_snapshot()
    live = {}
    for e in t.manifest_store.live_entries(latest):
        live.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    return [compact_bucket(t.store, p, b, n, files, base_snapshot_id=latest.id) for (p, b, n), files in live.items()]


def _after_first_snapshot(t, action):
    """Run ``action`` right after ``t`` creates its next snapshot: another committer slipping in
    between a commit's data snapshot and its compaction snapshot."""
    sm = t.snapshot_manager
    original = sm.try_create

    def try_create(snapshot, **kw):
        ok = original(snapshot, **kw)
        if ok and sm.try_create is try_create:
            sm.try_create = original
            action()
        return ok

    sm.try_create = try_create


def test_first_row_commit_whose_compaction_loses_a_race_still_shows_its_rows(where):
    uri, opts = where
    t = new_table(uri, opts, options={"merge-engine": "first-row"})
    t.write_arrow(kv([1, 2], ["a", "b"]))
    other = Catalog(uri, opts).get_table("db.t")
    competitor = _stale_compaction(other)
    wb, msgs = prepared(t, [2, 3], ["late", "c"], user="job")
    _after_first_snapshot(t, lambda: other.new_batch_write_builder().new_commit().commit(competitor))
    snaps = wb.new_commit().commit(msgs, identifier=1)  # reported as landed, not "nothing committed"
    kinds = [s.commit_kind for s in Catalog(uri, opts).get_table("db.t").snapshots()]
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT, CommitKind.APPEND, CommitKind.COMPACT, CommitKind.COMPACT]
    assert snaps[0].id == 3 and snaps[0].commit_kind == CommitKind.APPEND
    assert as_dict(Catalog(uri, opts).get_table("db.t")) == {1: "a", 2: "b", 3: "c"}


def test_rows_hidden_by_a_crash_become_visible_with_the_next_write(warehouse):
    t = new_table(warehouse, options={"merge-engine": "first-row"})
    t.write_arrow(kv([1], ["a"]))
    wb, msgs = prepared(t, [1, 2], ["late", "b"])
    # The process died after the data snapshot: only the new level-0 files landed.
    wb.new_commit().commit([replace(m, compact_before=(), compact_after=()) for m in msgs])
    assert as_dict(t) == {1: "a"}  # level 0 is hidden from batch reads of first-row tables
    t.write_arrow(kv([3], ["c"]))
    assert as_dict(t) == {1: "a", 2: "b", 3: "c"}


def test_a_landed_commit_whose_compaction_lost_keeps_its_data(warehouse):
    """Deduplicate shows level 0, so a writer's compaction is an optimization: when it loses a race
    the data snapshot stands, the compaction is dropped (with a warning) and its files removed."""
    t = new_table(warehouse)
    t.write_arrow(kv([1, 2], ["a", "b"]))
    other = Catalog(warehouse).get_table("db.t")
    competitor = _stale_compaction(other)
    mine = _stale_compaction(t)
    wb, msgs = prepared(t, [3], ["c"])
    bundled = [replace(msgs[0], compact_before=mine[0].compact_before, compact_after=mine[0].compact_after)]
    _after_first_snapshot(t, lambda: other.new_batch_write_builder().new_commit().commit(competitor))
    snaps = wb.new_commit().commit(bundled)
    assert [s.id for s in snaps] == [2] and snaps[0].commit_kind == CommitKind.APPEND
    assert as_dict(t) == {1: "a", 2: "b", 3: "c"}
    live = {e.file.file_name for e in t.manifest_store.live_entries(t.latest_snapshot())}
    assert not {f.file_name for f in mine[0].compact_after} & live
