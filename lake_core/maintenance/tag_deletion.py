"""Deleting tags and the files only they held (Java ``TagDeletion`` via ``TagManager.deleteTag``).

A tag on an expired snapshot is the last holder of that snapshot's data files, changelog files and
metadata. Deleting the tag deletes those of them nothing else references: no live snapshot, no
other tag, no long-lived changelog (consumers pin live snapshots). A data file stays when the
earliest snapshot or another tag has it live (Java's tag data-file skipper: a file removed from
the table never comes back, so a file live in any later snapshot is live in the earliest one) or a
long-lived changelog names it; manifests, lists, changelog, index and statistics files stay when
any retained snapshot, tag or changelog names them, as in orphan removal.

Order: the tag file goes first (no reader resolves the tag any more), then, under the expiry lock
(so no expiry runs on the same view), the holders are read afresh and the files are deleted, data
files before the manifests naming them. A crash leaves only unreferenced files, which
``remove_orphan_files`` reclaims; so does a cleanup skipped because an expiry held the lock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.errors import MaintenanceArgumentError, TagNotFoundError
from lake_core.maintenance.expiry_lock import HOLDERS, expiry_lock
from lake_core.maintenance.orphans import collect_retained
from lake_core.maintenance.references import (
    PlannedFile,
    ReferencedNames,
    data_file_paths,
    entry_key,
    index_path,
    live_data_keys,
    long_lived_changelogs,
    tagged_snapshots,
    try_entries,
    try_index_entries,
    try_manifest_list,
)
from lake_core.manifest.metadata import FileKind
from lake_core.names import validate_tag_name
from lake_core.result import OperationResult, fact

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

_ORDER = {
    "data": 0,
    "changelog": 0,
    "index": 1,
    "manifest": 2,
    "manifest-list": 3,
    "index-manifest": 3,
    "statistics": 3,
}


@dataclass(frozen=True, kw_only=True)
class DeleteTagResult(OperationResult):
    tags: tuple[str, ...] = fact((), summary=True, label="tags deleted")
    deleted_files: int = fact(0, summary=True, label="files deleted")
    data_files: int = fact(0, label="of them data files")
    bytes_reclaimed: int = fact(0, summary=True, label="reclaimed")
    files: tuple[str, ...] = fact((), label="files deleted")
    skipped: str | None = fact(
        None, label="files kept"
    )  # why files were kept (a live snapshot holds them, the lock was held)


def _files_of(table: FileStoreTable, snap: Snapshot) -> tuple[list, list[PlannedFile]]:
    """The snapshot's live data entries with their paths, and every other file it uses: changelog
    files, manifests, lists, index and statistics files."""
    data = [(e, data_file_paths(table, e)) for e in table.manifest_store.live_entries(snap)]
    out = [
        PlannedFile(p, size, "changelog")
        for e in try_entries(table, snap.changelog_manifest_list)
        if e.kind == FileKind.ADD
        for p, size in data_file_paths(table, e)
    ]
    for lst, size in (
        (snap.base_manifest_list, snap.base_manifest_list_size),
        (snap.delta_manifest_list, snap.delta_manifest_list_size),
        (snap.changelog_manifest_list, snap.changelog_manifest_list_size),
    ):
        if lst:
            out += [
                PlannedFile(table.paths.manifest(m.file_name), m.file_size, "manifest")
                for m in try_manifest_list(table, lst)
            ]
            out.append(PlannedFile(table.paths.manifest(lst), size or 0, "manifest-list"))
    if snap.index_manifest:
        out += [PlannedFile(index_path(table, e), e.file_size, "index") for e in try_index_entries(table, snap) or ()]
        out.append(PlannedFile(table.paths.manifest(snap.index_manifest), 0, "index-manifest"))
    if snap.statistics:
        out.append(PlannedFile(table.paths.statistics(snap.statistics), 0, "statistics"))
    return data, out


def plan_unheld_files(
    table: FileStoreTable, snapshots: list[Snapshot], skip_tags: frozenset[str] = frozenset()
) -> list[PlannedFile]:
    """The files of ``snapshots`` (of deleted tags; ``skip_tags``: tags to treat as deleted) that
    nothing retained holds, data first; read against the table as it is now."""
    sm = table.snapshot_manager
    live = set(sm.list_ids())
    orphaned = [s for s in snapshots if s.id not in live]
    if not orphaned:
        return []
    refs = ReferencedNames(table)
    collect_retained(table, refs, operation="delete_tag", skip_tags=skip_tags)
    changelog_refs = ReferencedNames(table)
    for c in long_lived_changelogs(table):
        changelog_refs.add_changelog(c)
    earliest = sm.earliest_id()
    holders = tagged_snapshots(table, skip=skip_tags) + ([sm.get(earliest)] if earliest is not None else [])
    keep: set = set()
    for h in holders:
        keep |= live_data_keys(table, h)
    seen: dict[str, PlannedFile] = {}
    for s in orphaned:
        data, other = _files_of(table, s)
        for entry, paths in data:
            if entry_key(entry) not in keep and entry.file.file_name not in changelog_refs.names:
                for p, size in paths:
                    seen.setdefault(p, PlannedFile(p, size, "data"))
        for f in other:
            if f.path.rsplit("/", 1)[-1] not in refs.names:
                seen.setdefault(f.path, f)
    return sorted(seen.values(), key=lambda f: _ORDER.get(f.kind, 3))


def delete_tags(
    table: FileStoreTable, names, *, dry_run: bool = False, operation: str = "delete_tag"
) -> DeleteTagResult:
    """Delete the tags ``names`` (each must exist), then the files only they held."""
    started = time.monotonic()
    if not isinstance(dry_run, bool):
        raise MaintenanceArgumentError(f"dry_run = {dry_run!r} for table {table.identifier} must be True or False")
    names = tuple(names)
    snaps = []
    for name in names:
        validate_tag_name(name)
        snaps.append(table.tag(name))  # TagNotFoundError before anything is deleted
    if dry_run:
        files = plan_unheld_files(table, snaps, skip_tags=frozenset(names))
        return _result(table, names, files, True, started, operation, _why_kept(table, snaps, files))
    for name in names:
        if not table.fileio.delete(table.paths.tag(name)):
            raise TagNotFoundError(f"tag '{name}' does not exist on {table.identifier}")
    with expiry_lock(table) as held:
        if not held:
            return _result(
                table,
                names,
                [],
                False,
                started,
                operation,
                f"{HOLDERS} holds snapshot/.expire-lock; the tags' files stay until remove_orphan_files",
            )
        files = plan_unheld_files(table, snaps)
        deleted = [f for f in files if table.fileio.delete(f.path)]
    return _result(table, names, deleted, False, started, operation, _why_kept(table, snaps, files))


def _why_kept(table: FileStoreTable, snaps, files) -> str | None:
    if files:
        return None
    live = set(table.snapshot_manager.list_ids())
    ids = sorted({s.id for s in snaps})
    if all(i in live for i in ids):
        return f"snapshot {', '.join(map(str, ids))} is still live: its files stay with it"
    return "every file is still used by a snapshot, tag or changelog"


def _result(table, names, files, dry_run, started, operation, skipped) -> DeleteTagResult:
    return DeleteTagResult(
        operation=operation,
        table=table.identifier,
        dry_run=dry_run,
        duration_s=time.monotonic() - started,
        tags=names,
        deleted_files=len(files),
        data_files=sum(1 for f in files if f.kind == "data"),
        bytes_reclaimed=sum(f.size for f in files),
        files=tuple(f.path for f in files),
        skipped=skipped,
    )
