"""Orphan file removal (Paimon's ``remove_orphan_files`` procedure, Java ``OrphanFilesClean``).

A file under the table is an orphan when no snapshot, tag, changelog, consumer-held snapshot or
index references it, typically the litter of a failed write or of a crashed expiry. Like Java, a
file is matched by name against every name any manifest mentions (ADD and DELETE entries, extra
files, manifests, manifest lists, index manifests and files, statistics): a superset of what is
live, so nothing a reader could reach is ever a candidate.

Safety: the age floor (default one day, never below one hour unless ``force``) keeps the files of
commits in flight; the referenced set must be read completely or nothing is deleted; after the
candidates are chosen, snapshots and tags that appeared meanwhile are read and their files taken
back out of the candidates. Metadata directories (schema, snapshot, tag, consumer, branch,
changelog hints) are never touched apart from stale temp files.

That second read holds the expiry lock (``snapshot/.expire-lock``). While an expiry holds it, the
snapshots it deleted are not final: a lease or tag taken on one meanwhile makes the expiry write
them back, and the one-day floor does not protect their files (expiring snapshots are old). Under
the lock no expiry is half-way, so every snapshot that any later expiry may write back is one this
read sees, and the deletion itself needs no lock. A live holder is waited for; a crashed holder's
lock is taken over by the lock's own rules; a holder outlasting the wait skips the run.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.errors import (
    LakeError,
    MaintenanceAbortedError,
    MaintenanceArgumentError,
    PathEscapeError,
    SnapshotNotFoundError,
)
from lake_core.io.fileio import FileIOError
from lake_core.maintenance.expiry_lock import HOLDERS, LOCK_TTL_S, expiry_lock_waiting
from lake_core.maintenance.references import (
    PlannedFile,
    ReferencedNames,
    long_lived_changelogs,
    now_ms,
    tagged_snapshots,
)
from lake_core.paths import join_relative
from lake_core.result import OperationResult, fact, shown
from lake_core.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

MIN_FLOOR = _dt.timedelta(hours=1)
# Longer than the lock's TTL: a crashed expirer's lock is always taken over before the wait ends.
LOCK_WAIT_S = LOCK_TTL_S + 30.0
_METADATA_DIRS = ("schema", "snapshot", "tag", "consumer", "branch", "changelog")


@dataclass(frozen=True, kw_only=True)
class RemoveOrphanFilesResult(OperationResult):
    deleted_files: int = fact(0, summary=True, label="orphan files")
    bytes_reclaimed: int = fact(0, summary=True, label="reclaimed")
    files: tuple[str, ...] = fact((), label="orphan files")
    scanned_files: int = fact(0, label="files scanned")
    referenced_names: int = fact(0, label="files referenced")
    skipped: str | None = None


def _snapshot_or_none(table: FileStoreTable, sid: int) -> Snapshot | None:
    try:
        return table.snapshot_manager.get(sid)
    except SnapshotNotFoundError:
        return None


def collect_retained(
    table: FileStoreTable,
    refs: ReferencedNames,
    *,
    operation: str = "remove_orphan_files",
    skip_tags: frozenset[str] = frozenset(),
) -> None:
    """Add every snapshot, long-lived changelog and tag (but ``skip_tags``). A read failure aborts
    unless the snapshot was expired meanwhile (then its files are legitimately gone)."""
    sm = table.snapshot_manager
    for sid in sm.list_ids():
        snap = _snapshot_or_none(table, sid)
        if snap is None:
            continue
        try:
            refs.add_snapshot(snap)
        except (FileNotFoundError, FileIOError, LakeError) as e:
            sm.forget(sid)
            if table.fileio.exists(table.paths.snapshot(sid)):
                raise MaintenanceAbortedError(
                    f"{operation} on {table.identifier}: snapshot {sid} could not be read completely "
                    f"({e}); refusing to delete anything"
                ) from None
    long_lived = table.changelog_manager.long_lived
    for cl in long_lived_changelogs(table):
        try:
            refs.add_changelog(cl)
        except (FileNotFoundError, FileIOError, LakeError) as e:
            long_lived.forget(cl.id)
            if table.fileio.exists(long_lived.path(cl.id)):
                raise MaintenanceAbortedError(
                    f"{operation} on {table.identifier}: changelog/changelog-{cl.id} could not be read "
                    f"completely ({e}); refusing to delete anything"
                ) from None
    for tag in tagged_snapshots(table, skip=skip_tags):
        try:
            refs.add_snapshot(tag)
        except (FileNotFoundError, FileIOError, LakeError) as e:
            raise MaintenanceAbortedError(
                f"{operation} on {table.identifier}: tag of snapshot {tag.id} could not be read "
                f"completely ({e}); refusing to delete anything"
            ) from None


def _candidates(table: FileStoreTable, names: set[str], floor_s: float) -> tuple[list[PlannedFile], int]:
    root = table.paths.root
    out, scanned = [], 0
    for rel, size, mtime in table.fileio.list_files_relative(root):
        scanned += 1
        name = rel.rsplit("/", 1)[-1]
        top = rel.split("/", 1)[0]
        is_temp = name.startswith(".") and name.endswith(".tmp")
        if top in _METADATA_DIRS and not is_temp:
            continue
        if name in names or mtime >= floor_s:
            continue
        try:
            path = join_relative(root, rel)
        except PathEscapeError:
            continue  # a name no table file can have (e.g. a backslash): never delete what cannot be named
        out.append(
            PlannedFile(
                path, size, "temp" if is_temp else top if top in ("manifest", "index", "statistics") else "data"
            )
        )
    return out, scanned


def remove_orphan_files(
    table: FileStoreTable, *, older_than=_dt.timedelta(days=1), dry_run: bool = False, force: bool = False
) -> RemoveOrphanFilesResult:
    started = time.monotonic()
    if not isinstance(older_than, _dt.timedelta):
        raise MaintenanceArgumentError(
            f"older_than = {older_than!r} for remove_orphan_files on {table.identifier} must be a timedelta"
        )
    if older_than < _dt.timedelta(0):
        raise MaintenanceArgumentError(
            f"older_than = {shown(older_than)} for remove_orphan_files on {table.identifier} must not be negative"
        )
    if older_than < MIN_FLOOR and not force:
        raise MaintenanceArgumentError(
            f"older_than = {shown(older_than)} for remove_orphan_files on {table.identifier} is below one hour: files of "
            "commits in flight could be deleted; pass force=True only when no job writes to the table"
        )
    for name, v in (("dry_run", dry_run), ("force", force)):
        if not isinstance(v, bool):
            raise MaintenanceArgumentError(f"{name} = {v!r} for table {table.identifier} must be True or False")
    if table.fileio.list_names(table.paths.branch_dir):
        raise MaintenanceAbortedError(
            f"remove_orphan_files on {table.identifier}: the table has branches, whose files lake_core cannot "
            "read yet; refusing to delete anything"
        )

    floor_s = (now_ms() - older_than.total_seconds() * 1000) / 1000
    refs = ReferencedNames(table)
    collect_retained(table, refs)
    candidates, scanned = _candidates(table, refs.names, floor_s)

    def result(chosen: list[PlannedFile], skipped: str | None) -> RemoveOrphanFilesResult:
        return RemoveOrphanFilesResult(
            operation="remove_orphan_files",
            table=table.identifier,
            dry_run=dry_run,
            duration_s=time.monotonic() - started,
            deleted_files=len(chosen),
            bytes_reclaimed=sum(f.size for f in chosen),
            files=tuple(f.path for f in chosen),
            scanned_files=scanned,
            referenced_names=len(refs.names),
            skipped=skipped,
        )

    # Re-check: snapshots or tags committed while we listed, and snapshots an expiry wrote back
    # for a lease, take their files back (under the lock, see the module docstring; a dry run
    # changes nothing, not even the lock).
    if dry_run:
        collect_retained(table, refs)
    else:
        with expiry_lock_waiting(table, wait_s=LOCK_WAIT_S) as held:
            if not held:
                return result(
                    [],
                    f"{HOLDERS} of {table.identifier} held snapshot/.expire-lock for longer than "
                    f"{LOCK_WAIT_S:.0f} s; nothing was deleted, run again",
                )
            collect_retained(table, refs)
    candidates = [f for f in candidates if f.path.rsplit("/", 1)[-1] not in refs.names]

    chosen = candidates if dry_run else [f for f in candidates if table.fileio.delete(f.path)]
    return result(chosen, None if chosen else "no orphan files older than the floor")
