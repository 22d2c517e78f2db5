"""Publishing a new snapshot: create it exclusively, then confirm it still extends the table's history.

A committer reads the latest snapshot N, prepares N+1 on N's manifests and creates ``snapshot-(N+1)``
exclusively. ``rollback_to`` may remove N in between (it takes the expiry lock; commits take no
lock) and then delete the files only the removed snapshots used. N+1 would then be the latest
snapshot of a history that no longer exists: every read and write of the table would fail.

So a created snapshot counts as committed (and ``LATEST`` moves to it) only once its parent is
confirmed: ``snapshot-N``, read again from storage, is still the snapshot the commit was built on
(the same manifest lists: after a rollback and new commits an id can name another snapshot), or it
is absent because it expired (no older snapshot is left: expiry removes the oldest first, while a
rollback keeps its target). Otherwise the committer withdraws N+1 and raises
``RollbackConflictError``: nothing was committed.

Why the withdrawal is safe:

* Only our own file goes: ``snapshot-(N+1)`` is read back and deleted only if it is the one we
  wrote (its uuid). Once it exists nobody else can create that id, so nothing replaces it between
  the read and the delete.
* Nobody keeps a snapshot built on a withdrawn one. Every committer confirms its own parent after
  creating: one that creates N+2 on our N+1 after we deleted N+1 finds it gone and withdraws too.
  One that created N+2 before we deleted N+1 may already have confirmed and reported success, so
  after deleting we look for N+2: if it exists, our files may be part of the table, and
  ``CommitOutcomeUnknownError`` (no conflict: callers delete nothing) says so.
* A rollback that sees N+1 before it deletes files aborts without deleting any
  (:mod:`lake_core.maintenance.rollback`).

A reader that lists the directory in the short window between the create and the withdrawal can
see N+1; its read fails on a file the rollback deleted, and the next read sees the rolled-back table.

Cost: one read of the (small) parent snapshot file per commit: a ``stat``-sized read locally, a GET
on S3.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from lake_core.errors import CommitOutcomeUnknownError, LakeError, RollbackConflictError
from lake_core.snapshot.snapshot import Snapshot
from lake_core.snapshot.snapshot_manager import SnapshotManager

T = TypeVar("T")
_READ_TRIES = 3  # the snapshot exists: a failed read of its parent is no verdict, ask again


def publish(snapshots: SnapshotManager, snapshot: Snapshot, *, parent: Snapshot | None, table: str) -> bool:
    """Create ``snapshot`` (N+1) on top of ``parent`` (N, None for the first snapshot) and make it the
    latest: False if another committer created N+1 first. Raises ``RollbackConflictError`` (after
    withdrawing it) if ``parent`` is no longer the table's history."""
    if not snapshots.try_create(snapshot, hint=False):
        return False
    confirm_parent(snapshots, snapshot, parent=parent, table=table)
    snapshots.commit_latest_hint(snapshot.id)
    return True


def confirm_parent(snapshots: SnapshotManager, created: Snapshot, *, parent: Snapshot | None, table: str) -> None:
    """Return if ``parent`` is still the history ``created`` extends; otherwise withdraw ``created``
    and raise ``RollbackConflictError`` (or ``CommitOutcomeUnknownError``, see the module)."""
    if parent is None or _still_there(snapshots, parent, created, table):
        return
    snapshots.forget_all()  # the cache may hold snapshots the rollback removed
    path = snapshots.paths.snapshot(created.id)
    mine = _read(snapshots, created.id, created, table)
    if mine is not None and mine.uuid == created.uuid:
        _ask(lambda: snapshots.fileio.delete(path), path, created, table)
    successor = _read(snapshots, created.id + 1, created, table)
    if successor is not None:
        raise CommitOutcomeUnknownError(
            f"commit to {table}: snapshot {parent.id}, on which this commit was built, was removed (rollback_to) "
            f"while the commit was in flight, so its snapshot {created.id} was withdrawn; but snapshot "
            f"{successor.id} (by {successor.commit_user}) had been created on top of it meanwhile and may contain "
            "this commit's files, so none was removed. That commit withdraws itself unless it had already "
            f"confirmed; if snapshot {successor.id} is still there, run rollback_to again"
        )
    raise RollbackConflictError(
        f"commit to {table}: snapshot {parent.id}, on which this commit was built, was removed (rollback_to, or "
        f"by hand) while the commit was in flight, so snapshot {created.id} it had just created was removed "
        "again; nothing was committed — write the data again against the latest snapshot (write_arrow and "
        "delete_where do so themselves)"
    )


def _still_there(snapshots: SnapshotManager, parent: Snapshot, created: Snapshot, table: str) -> bool:
    now = _read(snapshots, parent.id, created, table)
    if now is not None:
        # manifest list names are unique per snapshot written: the same names, the same snapshot
        return (now.base_manifest_list, now.delta_manifest_list) == (
            parent.base_manifest_list,
            parent.delta_manifest_list,
        )
    older = _ask(
        lambda: [i for i in snapshots.list_ids() if i < parent.id], snapshots.paths.snapshot_dir, created, table
    )
    return not older  # expired (the oldest go first); a rollback keeps its target below


def _read(snapshots: SnapshotManager, snapshot_id: int, created: Snapshot, table: str) -> Snapshot | None:
    return _ask(lambda: snapshots.read_fresh(snapshot_id), snapshots.paths.snapshot(snapshot_id), created, table)


def _ask(read: Callable[[], T], path: str, created: Snapshot, table: str) -> T:
    """``read()``, tried again on a storage error. Our snapshot exists, so a storage error that
    persists leaves the outcome open: ``CommitOutcomeUnknownError``, never a conflict (whose callers
    delete the commit's files)."""
    for attempt in range(_READ_TRIES):
        try:
            return read()
        except (OSError, LakeError) as e:
            if attempt == _READ_TRIES - 1:
                raise CommitOutcomeUnknownError(
                    f"commit to {table}: snapshot {created.id} was created, but {path} could not be reached to "
                    f"confirm the history it extends ({type(e).__name__}: {e}); none of the commit's files were "
                    "removed. "
                    f"Once storage answers, table.find_commit(commit_user={created.commit_user!r}) tells whether "
                    "it landed"
                ) from e
    raise AssertionError("unreachable")
