"""``rollback_to``: make an earlier snapshot or a tag the latest state (Java ``RollbackHelper``).

As Java: snapshots newer than the target and tags on them are removed, ``LATEST`` points at the
target, and a tag whose snapshot already expired has its snapshot file written back (``EARLIEST``
then moves to it). Files only the removed snapshots and tags used are deleted afterwards.

Order, so a crash never leaves a reader a snapshot without its files: first the plan (metadata
only), then the newer tags and snapshot files go (newest first) and ``LATEST`` moves, and only then
the files no remaining snapshot, tag or consumer-held snapshot mentions (the set is read again
after the metadata moved). Writers must be stopped: a commit landing during the rollback is found
and reported, and none of its files are deleted. A commit that creates its snapshot after that
check, on top of a snapshot the rollback removed, withdraws it itself (``RollbackConflictError``,
:mod:`lake_core.snapshot.publish`), so the rollback need not look again. The rollback holds the
expiry lock, so no snapshot expiry or tag deletion removes files of the target while it becomes the
latest state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.errors import MaintenanceAbortedError, MaintenanceArgumentError, PathEscapeError, SnapshotNotFoundError
from lake_core.maintenance.expiry_lock import HOLDERS, expiry_lock
from lake_core.maintenance.references import ReferencedNames, long_lived_changelogs, tagged_snapshots
from lake_core.names import validate_tag_name
from lake_core.paths import join_relative
from lake_core.result import OperationResult, fact

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable


@dataclass(frozen=True, kw_only=True)
class RollbackResult(OperationResult):
    snapshot_id: int = fact(0, summary=True, label="latest snapshot now")
    removed_snapshots: tuple[int, ...] = fact((), summary=True)
    removed_tags: tuple[str, ...] = fact((), summary=True)
    deleted_files: int = fact(0, summary=True, label="files deleted")
    bytes_reclaimed: int = fact(0, summary=True, label="reclaimed")


def _target(table: FileStoreTable, snapshot_id, tag) -> tuple[Snapshot, bool]:
    """(snapshot to roll back to, whether its snapshot file must be written back)."""
    if (snapshot_id is None) == (tag is None):
        raise MaintenanceArgumentError(f"rollback_to on {table.identifier} takes exactly one of snapshot_id or tag")
    if tag is not None:
        validate_tag_name(tag)
        snap = table.tag(tag)  # TagNotFoundError names the tag
        return snap, not table.fileio.exists(table.paths.snapshot(snap.id))
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int) or snapshot_id < 1:
        raise MaintenanceArgumentError(
            f"snapshot_id = {snapshot_id!r} for rollback_to on {table.identifier} is invalid"
        )
    return table.snapshot_manager.get(snapshot_id), False  # SnapshotNotFoundError names the range


def _names_of(table: FileStoreTable, snaps, changelogs=()) -> set[str]:
    refs = ReferencedNames(table)
    for add, items in ((refs.add_snapshot, snaps), (refs.add_changelog, changelogs)):
        for s in items:
            try:
                add(s)
            except FileNotFoundError:
                continue  # already partly gone: what remains is still collected from the others
    return refs.names


def rollback_to(table: FileStoreTable, *, snapshot_id: int | None = None, tag: str | None = None) -> RollbackResult:
    started = time.monotonic()
    _target(table, snapshot_id, tag)  # bad arguments fail before the lock is asked for
    # an expiry or tag deletion must not delete what the target needs while it becomes the latest
    with expiry_lock(table) as held:
        if not held:
            raise MaintenanceAbortedError(
                f"rollback_to on {table.identifier}: {HOLDERS} holds snapshot/.expire-lock; "
                "nothing was changed — run the rollback again when it is done"
            )
        return _rollback(table, snapshot_id, tag, started)


def _rollback(table: FileStoreTable, snapshot_id, tag, started: float) -> RollbackResult:
    target, restore = _target(table, snapshot_id, tag)  # again, under the lock
    sm, fio, paths = table.snapshot_manager, table.fileio, table.paths
    newer = [i for i in sm.list_ids() if i > target.id]
    tag_names = table.list_tags()
    newer_tags = [n for n in tag_names if table.tag(n).id > target.id]
    removed = []
    for sid in newer:
        try:
            removed.append(sm.get(sid))
        except SnapshotNotFoundError:
            continue
    removed += [table.tag(n) for n in newer_tags]
    # Long-lived changelogs newer than the target go too (Java RollbackHelper), e.g. when rolling
    # back to a tag whose snapshot has expired.
    newer_changelogs = [c for c in long_lived_changelogs(table) if c.id > target.id]
    candidates = _names_of(table, removed, newer_changelogs)

    # metadata first: tags, then snapshot files newest first, then the hints
    for n in newer_tags:
        fio.delete(paths.tag(n))
    if restore:
        fio.try_create(paths.snapshot(target.id), target.to_json().encode("utf-8"))
    for sid in reversed(newer):
        fio.delete(paths.snapshot(sid))
        sm.forget(sid)
    long_lived = table.changelog_manager.long_lived
    for c in reversed(newer_changelogs):
        fio.delete(long_lived.path(c.id))
        long_lived.forget(c.id)
    if newer_changelogs:
        left = long_lived.list_ids()
        if left:
            long_lived.commit_latest_hint(left[-1])
    sm.commit_latest_hint(target.id)
    if restore:
        sm.commit_earliest_hint(min([target.id] + [i for i in sm.list_ids()]))
    landed = [i for i in sm.list_ids() if i > target.id]
    if landed:
        raise MaintenanceAbortedError(
            f"rollback_to on {table.identifier}: snapshot(s) {landed} were committed during the rollback to "
            f"{target.id}; stop the writers and run it again (no data file was deleted)"
        )

    # then the files only the removed snapshots and tags mentioned
    keep = _names_of(
        table, [s for s in (sm.get(i) for i in sm.list_ids())] + tagged_snapshots(table), long_lived_changelogs(table)
    )
    doomed = candidates - keep
    deleted = size = 0
    if doomed:
        for rel, nbytes, _mtime in fio.list_files_relative(paths.root):
            if rel.split("/", 1)[0] in ("snapshot", "tag", "schema", "consumer", "branch", "changelog"):
                continue
            if rel.rsplit("/", 1)[-1] not in doomed:
                continue
            try:
                path = join_relative(paths.root, rel)
            except PathEscapeError:
                continue  # a name no table file can have (e.g. a backslash): never delete what cannot be named
            if fio.delete(path):
                deleted += 1
                size += nbytes
    return RollbackResult(
        operation="rollback_to",
        table=table.identifier,
        duration_s=time.monotonic() - started,
        snapshot_id=target.id,
        removed_snapshots=tuple(newer),
        removed_tags=tuple(newer_tags),
        deleted_files=deleted,
        bytes_reclaimed=size,
    )
