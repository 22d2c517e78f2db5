"""Shared planning helpers: what snapshots, tags and consumers reference, and where files live.

Every destructive operation builds its plan from these, from metadata only. Readers follow
references, never file names (Paimon's names are opaque).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.bucket.hash_index import index_file_path
from lake_core.errors import LakeError, MaintenanceAbortedError, SnapshotNotFoundError, TagNotFoundError
from lake_core.io.fileio import FileIOError
from lake_core.manifest.metadata import DataFileMeta, FileKind, IndexManifestEntry, ManifestEntry
from lake_core.paths import extra_file_beside, partition_dir
from lake_core.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


@dataclass(frozen=True)
class PlannedFile:
    """One file a plan will delete: its full path, size in bytes and what it is."""

    path: str
    size: int
    kind: str  # data, changelog, manifest, manifest-list, index-manifest, index, statistics, snapshot


def now_ms() -> int:
    return int(time.time() * 1000)


def bucket_path(table: FileStoreTable, partition: bytes, bucket: int) -> str:
    values = table.manifest_store.partition_values(partition)
    ppath = partition_dir(list(table.schema.partition_keys), values, table.options.partition_default_name)
    return table.paths.bucket_dir(ppath, bucket)


def data_file_paths(table: FileStoreTable, entry: ManifestEntry) -> list[tuple[str, int]]:
    """The data file of an entry and its extra files (Java ``toAlignedPath``: next to it)."""
    f: DataFileMeta = entry.file
    main = f.path_in(bucket_path(table, entry.partition, entry.bucket))
    return [(main, f.file_size)] + [(extra_file_beside(main, x), 0) for x in f.extra_files]


def entry_key(entry: ManifestEntry) -> tuple[bytes, int, str]:
    """Java's tag skipper matches data files by (partition, bucket, file name)."""
    return entry.partition, entry.bucket, entry.file.file_name


def tagged_snapshots(
    table: FileStoreTable, names_out: list | None = None, skip: frozenset[str] = frozenset()
) -> list[Snapshot]:
    """Every tag's snapshot (but the tags named in ``skip``), sorted by id, one per id (Java
    ``TagManager.taggedSnapshots``). Raises :class:`MaintenanceAbortedError` if a tag cannot be
    read: a destructive operation must never run on a partial view of what tags need."""
    by_id: dict[int, Snapshot] = {}
    for name in table.list_tags():
        if name in skip:
            continue
        try:
            snap = table.tag(name)
        except TagNotFoundError:
            continue  # deleted while listing: needs nothing any more
        except (LakeError, OSError) as e:
            raise MaintenanceAbortedError(
                f"tag '{name}' of table {table.identifier} could not be read ({e}); nothing was deleted"
            ) from None
        by_id.setdefault(snap.id, snap)
        if names_out is not None:
            names_out.append(name)
    return [by_id[k] for k in sorted(by_id)]


def live_data_keys(table: FileStoreTable, snapshot: Snapshot) -> set[tuple[bytes, int, str]]:
    """(partition, bucket, file name) of every data file live at ``snapshot``."""
    return {entry_key(e) for e in table.manifest_store.live_entries(snapshot)}


def _list_names(table: FileStoreTable, name: str | None) -> list[str]:
    if not name:
        return []
    return [m.file_name for m in table.manifest_store.read_manifest_list(name)]


def existing_list(table: FileStoreTable, name: str | None) -> str | None:
    """``name`` if that manifest list exists. A long-lived changelog names the base and delta lists
    of its expired snapshot, which are gone when a changelog producer wrote its changelog (Java
    checks ``ManifestList.exists`` the same way)."""
    return name if name and table.fileio.exists(table.paths.manifest(name)) else None


def manifest_skipping_set(
    table: FileStoreTable, snapshots: Iterable[Snapshot], changelogs: Iterable[Snapshot] = ()
) -> set[str]:
    """Names of every manifest list, manifest, index manifest, index file and statistics file the
    given snapshots use (Java ``FileDeletionBase.manifestSkippingSet``), plus the base and delta
    lists that still exist of the given long-lived changelogs. Raises if any of them cannot be
    read."""
    out: set[str] = set()
    store = table.manifest_store
    for s, lists in [(s, (s.base_manifest_list, s.delta_manifest_list)) for s in snapshots] + [
        (c, (existing_list(table, c.base_manifest_list), existing_list(table, c.delta_manifest_list)))
        for c in changelogs
    ]:
        try:
            for lst in lists:
                if not lst:
                    continue
                out.add(lst)
                out.update(_list_names(table, lst))
            if s.index_manifest:
                out.add(s.index_manifest)
                out.update(e.file_name for e in store.index_entries(s))
            if s.statistics:
                out.add(s.statistics)
        except (FileNotFoundError, FileIOError, LakeError) as e:
            raise MaintenanceAbortedError(
                f"metadata of snapshot {s.id} of table {table.identifier} could not be read ({e}); nothing was deleted"
            ) from None
    return out


def try_manifest_list(table: FileStoreTable, name: str | None):
    """A manifest list, or [] if it is already gone (a crashed earlier run deleted it)."""
    if not name:
        return []
    try:
        return table.manifest_store.read_manifest_list(name)
    except FileNotFoundError:
        return []


def try_entries(table: FileStoreTable, list_name: str | None) -> list[ManifestEntry]:
    out: list[ManifestEntry] = []
    for m in try_manifest_list(table, list_name):
        try:
            out.extend(table.manifest_store.read_manifest(m.file_name))
        except FileNotFoundError:
            continue
    return out


def try_index_entries(table: FileStoreTable, snapshot: Snapshot) -> list[IndexManifestEntry] | None:
    try:
        return table.manifest_store.index_entries(snapshot)
    except FileNotFoundError:
        return None


def index_path(table: FileStoreTable, entry: IndexManifestEntry) -> str:
    return index_file_path(table.store, entry)


def deleted_in_delta(table: FileStoreTable, snapshot: Snapshot) -> dict[str, tuple[ManifestEntry, list]]:
    """Files a snapshot's delta DELETEs and does not re-ADD (an upgrade is DELETE+ADD of one
    path), keyed by path (Java ``planDeletedInDeltaManifest``)."""
    out: dict[str, tuple[ManifestEntry, list]] = {}
    store = table.manifest_store
    try:
        entries = store.read_entries(store.read_manifest_list(snapshot.delta_manifest_list))
    except FileNotFoundError:
        return {}  # a crashed run removed part of it: deleting on a partial view could hit an upgraded file
    for e in entries:
        paths = data_file_paths(table, e)
        if e.kind == FileKind.ADD:
            out.pop(paths[0][0], None)
        else:
            out[paths[0][0]] = (e, paths)
    return out


def added_files(table: FileStoreTable, list_name: str | None, kind: str) -> list[PlannedFile]:
    """Files the ADD entries of a manifest list name (Java ``deleteAddedDataFiles``)."""
    out: list[PlannedFile] = []
    for e in try_entries(table, list_name):
        if e.kind == FileKind.ADD:
            out += [PlannedFile(p, size, kind) for p, size in data_file_paths(table, e)]
    return out


def unheld_data_files(
    table: FileStoreTable, candidates: dict[str, tuple], holders: Iterable[Snapshot]
) -> list[PlannedFile]:
    """The candidate data files (from :func:`deleted_in_delta`) no holder snapshot has live (Java's
    tag data-file skipper)."""
    if not candidates:
        return []
    keep: set = set()
    for h in holders:
        keep |= live_data_keys(table, h)
    return [
        PlannedFile(p, size, "data")
        for _path, (entry, paths) in candidates.items()
        if entry_key(entry) not in keep
        for p, size in paths
    ]


def unused_lists(table: FileStoreTable, lists, skip: set[str]) -> list[PlannedFile]:
    """Manifests of the given ``(manifest list, size)`` pairs, and the lists, not in ``skip``
    (Java ``cleanUnusedManifestList``); ``skip`` grows so nothing is planned twice."""
    out: list[PlannedFile] = []
    paths = table.paths
    for lst, size in lists:
        if not lst:
            continue
        for m in try_manifest_list(table, lst):
            if m.file_name not in skip:
                skip.add(m.file_name)
                out.append(PlannedFile(paths.manifest(m.file_name), m.file_size, "manifest"))
        if lst not in skip:
            skip.add(lst)
            out.append(PlannedFile(paths.manifest(lst), size or 0, "manifest-list"))
    return out


def long_lived_changelogs(table: FileStoreTable) -> list[Snapshot]:
    """Every ``changelog/changelog-N`` still there, ascending (a changelog expired while listing is
    skipped: it needs nothing any more)."""
    long_lived = table.changelog_manager.long_lived
    out = []
    for cid in long_lived.list_ids():
        try:
            out.append(long_lived.get(cid))
        except SnapshotNotFoundError:
            continue
    return out


class ReferencedNames:
    """Every file name the given snapshots mention (ADD and DELETE entries, extra files, manifests,
    lists, index manifests and files, statistics), each manifest read once. Java's
    ``OrphanFilesClean`` matches files by name the same way."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.names: set[str] = set()
        self._lists: set[str] = set()
        self._manifests: set[str] = set()
        self._seen: set[tuple[int, str | None, bool]] = set()

    def add_changelog(self, c: Snapshot) -> None:
        """A long-lived changelog: its changelog list, and its base and delta lists while they exist."""
        self.add_snapshot(
            c,
            lists=(
                existing_list(self.table, c.base_manifest_list),
                existing_list(self.table, c.delta_manifest_list),
                c.changelog_manifest_list,
            ),
            metadata=False,
        )

    def add_snapshot(self, s: Snapshot, *, lists=None, metadata: bool = True) -> None:
        key = (s.id, s.uuid or s.base_manifest_list, metadata)
        if key in self._seen:
            return
        self._seen.add(key)
        store = self.table.manifest_store
        for lst in lists or (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list):
            if not lst or lst in self._lists:
                continue
            self._lists.add(lst)
            self.names.add(lst)
            for m in store.read_manifest_list(lst):
                self.names.add(m.file_name)
                if m.file_name in self._manifests:
                    continue
                self._manifests.add(m.file_name)
                for e in store.read_manifest(m.file_name):
                    self.names.add(e.file.file_name)
                    self.names.update(e.file.extra_files)
                    if e.file.external_path:
                        self.names.add(e.file.external_path.rsplit("/", 1)[-1])
        if not metadata:  # index and statistics of an expired snapshot went with it
            return
        if s.index_manifest:
            self.names.add(s.index_manifest)
            self.names.update(e.file_name for e in store.index_entries(s))
        if s.statistics:
            self.names.add(s.statistics)
