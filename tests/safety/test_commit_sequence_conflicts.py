"""Items 6 and 13: a commit whose sequence numbers could be shadowed wrongly does not land.

Sequence numbers of a bucket continue from the writer's base snapshot, so two writers that
started from the same snapshot number their rows alike, and a compaction that dropped a delete
can no longer shadow an older-numbered row committed after it. The commit detects both; a
builder-level commit fails clearly, ``write_arrow`` rewrites against the new snapshot.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lake_core.compaction.bucket_compact import compact_bucket
from lake_core.errors import CommitConflictError, SequenceConflictError

from .helpers import as_dict, kv, new_table, prepared, where  # noqa: F401 (fixture)


def _full_compaction(t):
    """Compact every bucket fully (drops deletes), planned at the latest snapshot."""
    live = {}
    latest = t.latest_snapshot()
    for e in t.manifest_store.live_entries(latest):
        live.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    msgs = [
        replace(compact_bucket(t.store, p, b, n, files), base_snapshot_id=latest.id)
        for (p, b, n), files in live.items()
    ]
    return t.new_batch_write_builder().new_commit(), msgs


def test_compaction_that_dropped_a_delete_does_not_resurrect_the_key(where):
    t = new_table(*where)
    t.write_arrow(kv([1, 2], ["a", "b"]))
    wb, late = prepared(t, [1], ["older"])  # a writer that started before the delete
    t.delete_where(t.predicate_builder().equal("k", 1))
    committer, compaction = _full_compaction(t)
    committer.commit(compaction)
    assert as_dict(t) == {2: "b"}
    with pytest.raises(SequenceConflictError, match=r"bucket 0.*write the data again") as err:
        wb.new_commit().commit(late)
    assert isinstance(err.value, CommitConflictError)
    assert as_dict(t) == {2: "b"}  # nothing landed: the key stays deleted
    # The remedy: write again against the latest snapshot; the last commit wins.
    t.write_arrow(kv([1], ["newer"]))
    assert as_dict(t) == {1: "newer", 2: "b"}


def test_a_compaction_planned_before_an_older_numbered_commit_does_not_land(warehouse):
    t = new_table(warehouse)
    t.write_arrow(kv([1], ["a"]))
    wb, late = prepared(t, [1], ["u"])  # sequence numbers from snapshot 1
    t.delete_where(t.predicate_builder().equal("k", 1))  # -D numbered like ``late``
    committer, compaction = _full_compaction(t)  # planned at snapshot 2: drops the -D
    # A writer that does not report its base snapshot (as other engines' writers) lands first ...
    wb.new_commit().commit([replace(m, base_snapshot_id=None) for m in late])
    before = as_dict(t)
    # ... then the compaction must not land: its dropped -D still shadows that row.
    with pytest.raises(SequenceConflictError, match="bucket 0"):
        committer.commit(compaction)
    assert as_dict(t) == before


def test_two_builder_commits_from_one_base_the_later_fails(where):
    t = new_table(*where)
    t.write_arrow(kv([1], ["base"]))
    wb1, m1 = prepared(t, [1, 2], ["first", "first"])
    wb2, m2 = prepared(t, [1, 3], ["second", "second"])
    wb1.new_commit().commit(m1)
    with pytest.raises(SequenceConflictError, match=r"bucket 0"):
        wb2.new_commit().commit(m2)
    assert as_dict(t) == {1: "first", 2: "first"}


def test_a_writer_reused_for_several_commits_does_not_conflict_with_itself(warehouse):
    t = new_table(warehouse)
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    for i in range(3):
        w.write_arrow(kv([1, 2 + i], [f"v{i}", "x"]))
        wb.new_commit().commit(w.prepare_commit())
    assert as_dict(t) == {1: "v2", 2: "x", 3: "x", 4: "x"}


def test_write_arrow_that_loses_the_race_writes_again_and_wins(warehouse, warehouse_path, monkeypatch):
    """Another process commits to the bucket between this write's prepare and its commit: the
    commit is refused, written again against the new snapshot, and its rows win. The files of the
    refused attempt are removed."""
    from lake_core import Catalog
    from lake_core.table import BatchTableWrite

    t = new_table(warehouse)
    t.write_arrow(kv([1, 2], ["a", "b"]))
    other = Catalog(warehouse).get_table("db.t")
    original = BatchTableWrite.prepare_commit
    calls = []

    def prepare_then_someone_commits(self):
        msgs = original(self)
        if self.store is not t.store:
            return msgs
        calls.append(len(msgs))
        if len(calls) == 1:
            other.write_arrow(kv([1, 3], ["other", "other"]))
        return msgs

    monkeypatch.setattr(BatchTableWrite, "prepare_commit", prepare_then_someone_commits)
    snap = t.write_arrow(kv([1], ["mine"]))
    assert len(calls) == 2  # prepared twice: the first attempt was refused
    assert snap.id == t.latest_snapshot().id == 3
    assert as_dict(t) == {1: "mine", 2: "b", 3: "other"}
    live = {e.file.file_name for e in t.manifest_store.live_entries(t.latest_snapshot())}
    assert {p.name for p in warehouse_path.rglob("data-*")} == live
