"""Item 5: a commit is idempotent per (commit user, identifier) and only for the same commit;
reusing a user never drops a batch silently, and finding earlier commits reads few snapshots."""

from __future__ import annotations

import pytest

from lake_core.errors import CommitConflictError, CommitIdentityError

from .helpers import as_dict, kv, new_table, prepared, where  # noqa: F401 (fixture)


def test_reusing_a_commit_user_in_write_arrow_commits_every_batch(where):
    t = new_table(*where)
    s1 = t.write_arrow(kv([1], ["a"]), commit_user="nightly-ingest")
    s2 = t.write_arrow(kv([2], ["b"]), commit_user="nightly-ingest")
    s3 = t.write_arrow(kv([1], ["c"]), commit_user="nightly-ingest")
    assert (s1.id, s2.id, s3.id) == (1, 2, 3)
    assert as_dict(t) == {1: "c", 2: "b"}
    assert len({s.commit_identifier for s in t.snapshots()}) == 3


def test_write_arrow_with_an_explicit_identifier_is_a_retry(where):
    t = new_table(*where)
    first = t.write_arrow(kv([1], ["a"]), commit_user="job", commit_identifier=7)
    # The same logical commit retried (files written again): recognised, no second snapshot.
    again = t.write_arrow(kv([1], ["a"]), commit_user="job", commit_identifier=7)
    assert again.id == first.id and [s.id for s in t.snapshots()] == [1]


def test_same_identity_with_different_files_is_a_clear_error(where):
    t = new_table(*where)
    wb, msgs = prepared(t, [1], ["a"], user="job-42")
    landed = wb.new_commit().commit(msgs, identifier=5)
    # A retry of exactly that commit is recognised as landed.
    assert [s.id for s in wb.new_commit().commit(msgs, identifier=5)] == [s.id for s in landed]
    wb2, other = prepared(t, [2], ["b"], user="job-42")
    with pytest.raises(CommitIdentityError, match=r"job-42.*5.*snapshot 1") as err:
        wb2.new_commit().commit(other, identifier=5)
    assert isinstance(err.value, CommitConflictError)
    assert [s.id for s in t.snapshots()] == [1] and as_dict(t) == {1: "a"}
    # A new identifier of the same user is a new commit.
    assert wb2.new_commit().commit(other, identifier=6)[0].id == 2
    assert as_dict(t) == {1: "a", 2: "b"}


def test_a_retry_of_an_older_identifier_is_still_recognised(warehouse):
    t = new_table(warehouse)
    wb, msgs = prepared(t, [1], ["a"], user="job")
    wb.new_commit().commit(msgs, identifier=1)
    wb2, msgs2 = prepared(t, [2], ["b"], user="job")
    wb2.new_commit().commit(msgs2, identifier=2)
    assert wb.new_commit().commit(msgs, identifier=1)[0].id == 1
    assert len(t.snapshots()) == 2


def _count_snapshot_reads(table):
    """Count snapshot files read from storage by ``table`` (a fresh handle has an empty cache)."""
    fio = table.snapshot_manager.fileio
    reads = []
    original = fio.read_bytes  # every metadata read ends here (read_text too)

    def read_bytes(path, *a, **k):
        if "/snapshot/snapshot-" in path:
            reads.append(path)
        return original(path, *a, **k)

    fio.read_bytes = read_bytes
    return reads


def test_a_commit_reads_few_snapshot_files(warehouse):
    from lake_core import Catalog

    t = new_table(warehouse)
    for i in range(40):
        t.write_arrow(kv([i], [str(i)]))
    fresh = Catalog(warehouse).get_table("db.t")
    reads = _count_snapshot_reads(fresh)
    fresh.write_arrow(kv([100], ["x"]), commit_user="nightly-ingest")
    # the latest snapshot, one re-read of the parent of each snapshot created (lake_core.snapshot.publish:
    # the data snapshot's and the inline compaction's), the expiry's earliest: not all 40
    assert 1 <= len(reads) <= 4, reads
    # A caller-given identity of a user who committed recently stops at that user's commit.
    wb, msgs = prepared(fresh, [101], ["y"], user="job")
    wb.new_commit().commit(msgs, identifier=1)
    for i in range(10):
        fresh.write_arrow(kv([200 + i], ["z"]))
    fresh2 = Catalog(warehouse).get_table("db.t")
    reads = _count_snapshot_reads(fresh2)
    wb, msgs = prepared(fresh2, [102], ["w"], user="job")
    wb.new_commit().commit(msgs, identifier=2)
    # back to the user's previous commit (plus a parent re-read per snapshot created), not to snapshot 1
    assert 1 <= len(reads) <= 15 + 2, reads
    assert as_dict(fresh2)[102] == "w"


def test_find_commit_is_the_committers_lookup(warehouse):
    """``table.find_commit`` (what a retried job asks) against a list of what was committed, and
    the committer's own retry check finds the same snapshot."""
    from lake_core import Catalog

    t = new_table(warehouse)
    plan = [("a", 1), ("b", 1), ("a", 2), ("b", 5), ("c", 3), ("a", 4), ("b", 6)]
    model: list[tuple[int, str, int]] = []
    for i, (user, ident) in enumerate(plan):
        wb, msgs = prepared(t, [i], [user], user=user)
        # every snapshot of the commit (an inline compaction adds one of the same identity)
        model += [(snap.id, user, ident) for snap in wb.new_commit().commit(msgs, identifier=ident)]
    fresh = Catalog(warehouse).get_table("db.t")
    for user in ("a", "b", "c", "nobody"):
        newest = [sid for sid, u, _ in model if u == user]
        got = fresh.find_commit(commit_user=user)
        assert (got.id if got else None) == (newest[-1] if newest else None), user
        for ident in range(8):
            want = [sid for sid, u, i in model if u == user and i == ident]
            got = fresh.find_commit(commit_user=user, identifier=ident)
            assert (got.id if got else None) == (want[-1] if want else None), (user, ident)
            assert got is None or (got.commit_user, got.commit_identifier) == (user, ident)
    # b's identifier 5 again with other files: the committer refuses it, naming the snapshot
    # find_commit finds, and commits nothing.
    wb, msgs = prepared(t, [3], ["b"], user="b")
    model_b5 = fresh.find_commit(commit_user="b", identifier=5)
    with pytest.raises(CommitIdentityError, match=f"snapshot {model_b5.id} "):
        wb.new_commit().commit(msgs, identifier=5)
    assert [s.id for s in t.snapshots()] == [sid for sid, _, _ in model]


def test_find_commit_after_expiry_and_on_an_empty_table(warehouse):
    t = new_table(warehouse, options={"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "2"})
    assert t.find_commit(commit_user="job") is None and t.find_commit(commit_user="job", identifier=1) is None
    landed = {}
    for ident in range(1, 6):
        wb, msgs = prepared(t, [ident], ["x"], user="job")
        landed[ident] = wb.new_commit().commit(msgs, identifier=ident)[-1].id
    kept = [s.id for s in t.snapshots()]
    assert len(kept) == 2 and landed[5] in kept
    assert t.find_commit(commit_user="job").id == landed[5]
    assert t.find_commit(commit_user="job", identifier=5).id == landed[5]
    assert t.find_commit(commit_user="job", identifier=2) is None  # expired: not found, no error
