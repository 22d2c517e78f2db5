"""Where the changelog of a snapshot lives (Java ``SnapshotManager.longLivedChangelog*``, later
``ChangelogManager``).

While snapshot ``N`` exists its changelog is in ``snapshot/snapshot-N``. When the changelog
lifecycle is decoupled (``changelog.num-retained.min/max`` or ``changelog.time-retained`` retain
more than the ``snapshot.*`` options), snapshot expiry first copies the snapshot, unchanged, to
``changelog/changelog-N`` (hints ``changelog/EARLIEST`` and ``changelog/LATEST``) and only then
deletes ``snapshot-N``; ``expire_changelogs`` deletes it later. So a reader that misses
``snapshot-N`` and then finds ``changelog-N`` missing too knows changelog ``N`` has expired.

In a long-lived changelog only the list :func:`changelog_manifest_list` names is readable: when a
changelog producer wrote a ``changelogManifestList``, the base and delta lists of the expired
snapshot were deleted with it.
"""

from __future__ import annotations

import re

from lake_core.errors import SnapshotNotFoundError
from lake_core.io.fileio import FileIO
from lake_core.paths import TablePaths
from lake_core.snapshot.snapshot import CommitKind, Snapshot
from lake_core.snapshot.snapshot_manager import SnapshotManager


class ChangelogNotFoundError(SnapshotNotFoundError):
    """Neither the snapshot nor a long-lived changelog of this id exists (expired or never made)."""


class LongLivedChangelogs(SnapshotManager):
    """``changelog/changelog-N`` files, found with the same hint rules as snapshots."""

    _name = re.compile(r"^changelog-(\d+)$")
    _what = "long-lived changelog"

    @property
    def _dir(self) -> str:
        return self.paths.changelog_dir

    def _path(self, snapshot_id: int) -> str:
        return self.paths.changelog(snapshot_id)

    @property
    def _latest_hint(self) -> str:
        return self.paths.changelog_latest_hint

    @property
    def _earliest_hint(self) -> str:
        return self.paths.changelog_earliest_hint

    def path(self, snapshot_id: int) -> str:
        return self._path(snapshot_id)

    def commit(self, snapshot: Snapshot) -> None:
        """Write ``changelog-N`` durably (an existing one is kept: a re-run after a crash would
        write the same snapshot) and move ``changelog/LATEST`` (Java ``commitChangelog`` +
        ``commitLongLivedChangelogLatestHint``)."""
        self.fileio.try_create(self._path(snapshot.id), snapshot.to_json().encode("utf-8"))
        self._cache[snapshot.id] = snapshot
        self.commit_latest_hint(snapshot.id)


def changelog_manifest_list(snapshot: Snapshot, changelog_producer: str) -> str | None:
    """The manifest list holding snapshot ``snapshot``'s changelog: the ``changelogManifestList``
    when a producer wrote one, else (``changelog-producer = none``: the input is the changelog)
    the delta list of an APPEND snapshot. ``None``: this snapshot has no changelog to read (a
    COMPACT/OVERWRITE snapshot without produced changelog)."""
    if snapshot.changelog_manifest_list:
        return snapshot.changelog_manifest_list
    if changelog_producer == "none" and snapshot.commit_kind == CommitKind.APPEND:
        return snapshot.delta_manifest_list
    return None


class ChangelogManager:
    """The changelog of any snapshot id, wherever it lives. Public entry point for incremental and
    streaming readers: :meth:`changelog`, :meth:`earliest_id`, :meth:`latest_id`."""

    def __init__(self, fileio: FileIO, paths: TablePaths, snapshot_manager: SnapshotManager | None = None):
        self.snapshots = snapshot_manager or SnapshotManager(fileio, paths)
        self.long_lived = LongLivedChangelogs(fileio, paths)

    def changelog(self, snapshot_id: int) -> Snapshot:
        """Snapshot ``snapshot_id`` as its changelog: ``snapshot-N`` if it still exists, else
        ``changelog-N``. Raises :class:`ChangelogNotFoundError` when both are gone."""
        try:
            return self.snapshots.get(snapshot_id)
        except SnapshotNotFoundError:
            pass
        # Expiry writes changelog-N before it deletes snapshot-N, so this order never misses one.
        try:
            return self.long_lived.get(snapshot_id)
        except SnapshotNotFoundError:
            earliest = self.earliest_id()
            raise ChangelogNotFoundError(
                f"the changelog of snapshot {snapshot_id} of table {self.snapshots.paths.root} has expired "
                f"or never existed (readable changelogs: {earliest}..{self.latest_id()})"
                if earliest is not None
                else f"table {self.snapshots.paths.root} has no changelog of snapshot {snapshot_id}"
            ) from None

    def exists(self, snapshot_id: int) -> bool:
        return self.snapshots.exists(snapshot_id) or self.long_lived.exists(snapshot_id)

    def earliest_id(self) -> int | None:
        """The earliest id from which every changelog up to :meth:`latest_id` can be read: the
        earliest long-lived changelog when those reach the retained snapshots, else the earliest
        snapshot."""
        earliest_snapshot = self.snapshots.earliest_id()
        first, last = self.long_lived.earliest_id(), self.long_lived.latest_id()
        if first is None or last is None:
            return earliest_snapshot
        if earliest_snapshot is None or last + 1 >= earliest_snapshot:
            return first
        return earliest_snapshot  # a gap (the options changed): only the snapshots are contiguous

    def latest_id(self) -> int | None:
        latest = self.snapshots.latest_id()
        return latest if latest is not None else self.long_lived.latest_id()
